package console

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	runnerv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/runner/v1"
)

const (
	// MaxTranscriptStreams bounds the transcript streams the console holds
	// open at once (each is a runner stream and a goroutine); one more is
	// answered 503, and the browser's EventSource tries again later.
	MaxTranscriptStreams = 64
	// transcriptLineTemplate renders one line, on the page and in the
	// stream alike, so a streamed line is escaped exactly as a rendered one.
	transcriptLineTemplate = "transcript-line"
)

// StreamKeepAlive is how often a quiet stream writes an SSE comment (so
// proxies keep it open) and checks that its sign-in is still live.
var StreamKeepAlive = 15 * time.Second

// transcriptStream relays the session's transcript as it is appended
// (the runner's FollowTranscript) as server-sent events: one "line" event
// per line, its id the line's id and its data the line's <li>, rendered
// and escaped by the page's own template; the page's script (static/
// session-1.js) puts it in place. The stream starts after ?after (the last
// line the page showed); a reconnecting EventSource's Last-Event-ID wins
// over it, so a dropped stream resumes where it stopped. It ends when the
// browser goes away, the runner ends it, or the sign-in ends.
func (h *Handler) transcriptStream(w http.ResponseWriter, r *http.Request, cookie string, _ signIn) {
	after, err := streamCursor(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rctx, cancel := context.WithTimeout(r.Context(), callTimeout)
	got, err := h.clients.Lifecycle.GetSession(rctx, &lifecyclev1.GetSessionRequest{SessionId: r.PathValue("id")})
	cancel()
	if err != nil {
		h.failed(w, r, "lifecycle", err)
		return
	}
	select {
	case h.streams <- struct{}{}:
		defer func() { <-h.streams }()
	default:
		w.Header().Set("Retry-After", "30")
		http.Error(w, "Too many transcript streams are open; this page will try again.", http.StatusServiceUnavailable)
		return
	}
	ctx, stop := context.WithCancel(r.Context())
	defer stop()
	stream, err := h.clients.Runner.FollowTranscript(ctx, &runnerv1.FollowTranscriptRequest{
		SessionId: strconv.FormatInt(got.GetSession().GetId(), 10), AfterLineId: after,
	})
	if err != nil {
		h.failed(w, r, "runner", err)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()

	lines := make(chan *runnerv1.TranscriptLine)
	go func() {
		defer stop()
		for {
			resp, err := stream.Recv()
			if err != nil {
				if ctx.Err() == nil {
					h.logger.InfoContext(ctx, "console transcript stream ended by the runner", "error", err)
				}
				return
			}
			select {
			case lines <- resp.GetLine():
			case <-ctx.Done():
				return
			}
		}
	}()
	keepAlive := time.NewTicker(StreamKeepAlive)
	defer keepAlive.Stop()
	tmpl := h.pages["session"]
	for {
		var event bytes.Buffer
		select {
		case <-ctx.Done():
			return
		case <-keepAlive.C:
			if _, err := h.signIns.get(ctx, cookie, false); err != nil {
				return // signed out (or lineage unreachable): the page's next load says which
			}
			event.WriteString(": keep-alive\n\n")
		case line := <-lines:
			var html bytes.Buffer
			if err := tmpl.ExecuteTemplate(&html, transcriptLineTemplate, line); err != nil {
				h.logger.ErrorContext(ctx, "render a streamed transcript line", "error", err)
				return
			}
			fmt.Fprintf(&event, "id: %d\nevent: line\n", line.GetId())
			for l := range strings.SplitSeq(strings.TrimRight(html.String(), "\n"), "\n") {
				fmt.Fprintf(&event, "data: %s\n", l)
			}
			event.WriteString("\n")
		}
		if _, err := w.Write(event.Bytes()); err != nil {
			return
		}
		if err := rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return
		}
	}
}

// streamCursor is the line the stream starts after: Last-Event-ID (a
// reconnect) or ?after (the page's last line), 0 for neither.
func streamCursor(r *http.Request) (int64, error) {
	text, name := r.Header.Get("Last-Event-ID"), "Last-Event-ID"
	if text == "" {
		text, name = r.URL.Query().Get("after"), "after"
	}
	if text == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s %q is not a transcript line id; send the id of the last line received", name, text)
	}
	return n, nil
}
