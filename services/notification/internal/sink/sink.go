// Package sink delivers a push or an alert to where a person will see it: a
// log line, a signed generic webhook, an ntfy topic, a Slack incoming webhook
// or an email. Each sink is one small type behind Sink; a failed delivery is
// classified transient (retry with backoff) or permanent (retrying cannot
// help) so the Temporal activity that calls it can decide.
package sink

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Kind says whether a message is a push to the operator about a session or an
// alert about Zimmer itself; sinks may render them differently.
type Kind string

const (
	// KindPush is a notification about a session (needs input, failed, …).
	KindPush Kind = "push"
	// KindAlert is an operational alert (Zimmer is sick).
	KindAlert Kind = "alert"
)

// Message is what a sink delivers.
type Message struct {
	Kind      Kind
	Title     string
	Body      string
	SessionID string // empty for alerts not about a session
	URL       string // where the operator can act, if any
	// Type is a push's notification type (needs_input, failure, …): a sink
	// that carries only some types reads it. Empty for alerts.
	Type string
	// DedupKey identifies the event across retries so a receiver can drop a
	// duplicate delivery (a retried send that had in fact arrived).
	DedupKey string
	Time     time.Time
}

// Sink delivers a message. Send returns nil once the receiver accepted it;
// an error is classified by Retryable.
type Sink interface {
	// Name is the sink's configuration name (log, webhook, ntfy, slack, email).
	Name() string
	Send(ctx context.Context, m Message) error
}

// Error is a failed delivery, saying whether retrying may help.
type Error struct {
	Sink      string
	Retryable bool
	Err       error
}

func (e *Error) Error() string {
	kind := "permanent"
	if e.Retryable {
		kind = "transient"
	}
	return fmt.Sprintf("%s sink: %s failure: %v", e.Sink, kind, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Retryable reports whether err is worth retrying. Errors a sink did not
// classify (it always does) count as retryable: a lost page is worse than a
// duplicate one, which the dedup key lets receivers drop.
func Retryable(err error) bool {
	var e *Error
	if errors.As(err, &e) {
		return e.Retryable
	}
	return err != nil
}

func transient(sink string, err error) error { return &Error{Sink: sink, Retryable: true, Err: err} }
func permanent(sink string, err error) error { return &Error{Sink: sink, Retryable: false, Err: err} }

// classifyHTTPStatus is the one rule for HTTP receivers: 2xx delivered; 429
// (rate limited) and 5xx transient; any other status permanent, since the
// same request will be refused again.
func classifyHTTPStatus(sink string, resp *http.Response, detail string) error {
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	err := fmt.Errorf("%s answered %s: %s", resp.Request.URL.Redacted(), resp.Status, detail)
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
		return transient(sink, err)
	}
	return permanent(sink, err)
}

// classifyTransportError: a request that never got an answer (connection
// refused, reset, DNS, timeout) is transient; the receiver may come back.
func classifyTransportError(sink string, err error) error {
	return transient(sink, err)
}
