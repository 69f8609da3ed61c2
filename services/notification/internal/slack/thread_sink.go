package slack

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/zimmerhq/zimmer/services/notification/internal/app"
	"github.com/zimmerhq/zimmer/services/notification/internal/domain"
	"github.com/zimmerhq/zimmer/services/notification/internal/sink"
)

// ThreadSinkName is the thread sink's name on the push route. It is not
// named in NOTIFICATION_SINKS: the service adds it when SLACK_BOT_TOKEN is
// set.
const ThreadSinkName = "slack_thread"

// threadTypes are the pushes a Slack-started session's thread receives:
// the ones that ask its humans to act.
var threadTypes = []string{string(domain.TypeNeedsInput), string(domain.TypeFailure)}

// ThreadSink posts a Slack-started session's needs_input and failure
// pushes into its thread (chat.postMessage). Being a sink of the push
// route, it is debounced like every push and retried like every sink, in
// the push's workflow, long after the transition that caused it
// committed. A push about a session with no thread, or of another type,
// is delivered by posting nothing.
type ThreadSink struct {
	Post app.PostToThread
	// SessionURL links the session, or is nil.
	SessionURL func(sessionID int64) string
}

var _ sink.Sink = ThreadSink{}

// Name implements sink.Sink.
func (ThreadSink) Name() string { return ThreadSinkName }

// Send implements sink.Sink.
func (s ThreadSink) Send(ctx context.Context, m sink.Message) error {
	if m.Kind != sink.KindPush || !slices.Contains(threadTypes, m.Type) || m.SessionID == "" {
		return nil
	}
	id, err := strconv.ParseInt(m.SessionID, 10, 64)
	if err != nil {
		return &sink.Error{Sink: ThreadSinkName, Err: fmt.Errorf("session id %q: %w", m.SessionID, err)}
	}
	if err := s.Post.Handle(ctx, id, s.text(id, m)); err != nil {
		return &sink.Error{Sink: ThreadSinkName, Retryable: !Permanent(err), Err: err}
	}
	return nil
}

// text is the thread's message: the push's title in bold, its body, and a
// link to the session.
func (s ThreadSink) text(id int64, m sink.Message) string {
	var b strings.Builder
	b.WriteString("*" + m.Title + "*")
	if m.Body != "" {
		b.WriteString("\n" + m.Body)
	}
	if s.SessionURL != nil {
		fmt.Fprintf(&b, "\n<%s|Open session #%d>", s.SessionURL(id), id)
	}
	return b.String()
}
