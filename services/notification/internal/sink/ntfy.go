package sink

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Ntfy publishes to an ntfy topic with ntfy's HTTP publish API
// (https://docs.ntfy.sh/publish/): POST <server>/<topic> with the message as
// the body and the title, priority, tags and click URL as headers; a token,
// if set, goes in Authorization: Bearer.
type Ntfy struct {
	ServerURL string // e.g. https://ntfy.sh
	Topic     string
	Token     string
	Client    *http.Client
}

var _ Sink = Ntfy{}

// Name implements Sink.
func (Ntfy) Name() string { return "ntfy" }

// Send implements Sink.
func (n Ntfy) Send(ctx context.Context, m Message) error {
	target, err := url.JoinPath(n.ServerURL, n.Topic)
	if err != nil {
		return permanent(n.Name(), fmt.Errorf("topic URL: %w", err))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, strings.NewReader(m.Body))
	if err != nil {
		return permanent(n.Name(), fmt.Errorf("build request: %w", err))
	}
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	req.Header.Set("Title", m.Title)
	// Alerts page (ntfy's "high", 4: a long vibration); pushes are default (3).
	priority, tags := "default", "bell"
	if m.Kind == KindAlert {
		priority, tags = "high", "rotating_light"
	}
	req.Header.Set("Priority", priority)
	req.Header.Set("Tags", tags+","+string(m.Kind))
	if m.URL != "" {
		req.Header.Set("Click", m.URL)
	}
	if n.Token != "" {
		req.Header.Set("Authorization", "Bearer "+n.Token)
	}
	return doHTTP(n.Client, n.Name(), req)
}
