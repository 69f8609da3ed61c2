package sink

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Slack posts to a Slack incoming webhook: a JSON body with a plain "text"
// (what notifications and old clients show) and "blocks" (a header, the body
// as mrkdwn, and a context line with the session and the link).
type Slack struct {
	WebhookURL string
	Client     *http.Client
}

var _ Sink = Slack{}

// Name implements Sink.
func (Slack) Name() string { return "slack" }

// SlackPayload is an incoming-webhook message; exported so tests and
// receivers agree on its shape.
type SlackPayload struct {
	Text   string       `json:"text"`
	Blocks []SlackBlock `json:"blocks"`
}

// SlackBlock is one Block Kit block (header, section or context).
type SlackBlock struct {
	Type     string      `json:"type"`
	Text     *SlackText  `json:"text,omitempty"`
	Elements []SlackText `json:"elements,omitempty"`
}

// SlackText is a Block Kit text object: plain_text or mrkdwn.
type SlackText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// Send implements Sink.
func (s Slack) Send(ctx context.Context, m Message) error {
	body, err := json.Marshal(slackPayload(m))
	if err != nil {
		return permanent(s.Name(), fmt.Errorf("encode payload: %w", err))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.WebhookURL, bytes.NewReader(body))
	if err != nil {
		return permanent(s.Name(), fmt.Errorf("build request: %w", err))
	}
	req.Header.Set("Content-Type", "application/json")
	return doHTTP(s.Client, s.Name(), req)
}

func slackPayload(m Message) SlackPayload {
	prefix := ":bell:"
	if m.Kind == KindAlert {
		prefix = ":rotating_light:"
	}
	p := SlackPayload{
		Text: prefix + " " + m.Title + "\n" + m.Body,
		// Slack caps a header's plain text at 150 characters.
		Blocks: []SlackBlock{{Type: "header", Text: &SlackText{Type: "plain_text", Text: truncate(m.Title, 150)}}},
	}
	if m.Body != "" {
		p.Blocks = append(p.Blocks, SlackBlock{Type: "section", Text: &SlackText{Type: "mrkdwn", Text: truncate(m.Body, 3000)}})
	}
	var context []string
	if m.SessionID != "" {
		context = append(context, "session `"+m.SessionID+"`")
	}
	if m.URL != "" {
		context = append(context, "<"+m.URL+"|open>")
	}
	if len(context) > 0 {
		p.Blocks = append(p.Blocks, SlackBlock{Type: "context", Elements: []SlackText{{Type: "mrkdwn", Text: strings.Join(context, " · ")}}})
	}
	return p
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
