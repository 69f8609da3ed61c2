package console

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
)

// The dashboard's live updates: GET /console/live is a stream of
// server-sent events, each the dashboard's summary and cards re-rendered
// (swapped in by htmx's SSE extension, out of band), sent when sessions
// changed. It relays lifecycle's WatchSessionChanges, whose cursor is the
// event's id: a browser that reconnects sends the last one it got as
// Last-Event-ID (EventSource does so itself) and is sent what changed
// since, even through a gateway restart, since the gateway keeps nothing.
// The cards are re-rendered whole rather than patched one by one so that
// lifecycle alone decides which sessions the view holds and in what order
// (filters, search, newest first): the console keeps no copy of either.
const (
	// LiveEvent is the SSE event name the dashboard swaps.
	LiveEvent = "dashboard"
	// liveStatusID is the dashboard's live notice (dashboard.html).
	liveStatusID = "live-status"
	// MaxLiveDashboards bounds the live pages one gateway serves at once,
	// dashboards and session pages together; each holds a lifecycle
	// stream. Past it a page still loads, without live updates, and its
	// browser retries later.
	MaxLiveDashboards = 64
	// liveCoalesce gathers the changes that come together (a transition
	// and the ones it sets off) into one render.
	liveCoalesce = 150 * time.Millisecond
	// liveWriteTimeout drops a browser that does not take an event in
	// time: what a slow reader holds is then one render, and it catches up
	// from its Last-Event-ID when it reconnects.
	liveWriteTimeout = 10 * time.Second
	// liveRetry is the reconnect delay the stream asks EventSource for.
	liveRetry = 2 * time.Second
	// liveSignedOutRetry is how long a signed-out live page waits before
	// asking again.
	liveSignedOutRetry = time.Minute
)

// LiveKeepAlive is how often a quiet stream writes an SSE comment, so that
// proxies and the browser do not take it for a dead connection and a gone
// browser is noticed.
var LiveKeepAlive = 15 * time.Second

// liveCursor is where the browser's view stands: Last-Event-ID when it
// reconnects, else ?after (none: the view is re-rendered at once, since
// the page it has may be older than the stream).
func liveCursor(r *http.Request) (*int64, error) {
	v, from := r.Header.Get("Last-Event-ID"), "Last-Event-ID"
	if v == "" {
		v, from = r.URL.Query().Get("after"), "after"
	}
	if v == "" {
		return nil, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return nil, fmt.Errorf("%s %q is not an event id: send the id of the last event received, or nothing", from, v)
	}
	return &n, nil
}

// live streams the dashboard's changes (see above).
func (h *Handler) live(w http.ResponseWriter, r *http.Request) {
	f := viewFilters(r.URL.Query())
	h.relayChanges(w, r, LiveEvent, liveStatusID, func(ctx context.Context, in signIn, position int64, _ []*lifecyclev1.SessionChange) ([]byte, error) {
		return h.liveRender(ctx, f, in, position)
	})
}

// changesRenderer renders one live event of a page: what it shows as it
// stands, under the id of the last change (position); changed are the
// changes since the last event (none for the first). A nil event sends
// nothing: nothing the page shows changed.
type changesRenderer func(ctx context.Context, in signIn, position int64, changed []*lifecyclev1.SessionChange) ([]byte, error)

// relayChanges is a live page's stream (the dashboard's, a session page's):
// it relays lifecycle's WatchSessionChanges as server-sent events, each
// render's, gathering the changes that come together (liveCoalesce). The
// event id is the cursor (liveCursor); a page without one is rendered at
// once. A stream whose sign-in ended says so in the element statusID, as
// an event named event.
func (h *Handler) relayChanges(w http.ResponseWriter, r *http.Request, event, statusID string, render changesRenderer) {
	var cookie string
	if c, err := r.Cookie(CookieName); err == nil {
		cookie = c.Value
	}
	in, err := h.signIns.get(r.Context(), cookie, true)
	if errors.Is(err, errSignedOut) {
		h.liveSignedOut(w, event, statusID)
		return
	}
	if err != nil {
		h.failed(w, r, "lineage", err)
		return
	}
	after, err := liveCursor(r)
	if err != nil {
		h.problem(w, r, http.StatusBadRequest, err.Error())
		return
	}
	select {
	case h.liveSlots <- struct{}{}:
		defer func() { <-h.liveSlots }()
	default:
		w.Header().Set("Retry-After", "30")
		h.problem(w, r, http.StatusServiceUnavailable, fmt.Sprintf(
			"This gateway already keeps %d pages live; this one shows what it showed when it loaded. Close a tab, or reload later.", MaxLiveDashboards))
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	// The gateway stopping ends the stream; the browser reconnects to the
	// next one with its Last-Event-ID.
	defer context.AfterFunc(h.liveCtx, cancel)()
	stream, err := h.clients.Lifecycle.WatchSessionChanges(ctx, &lifecyclev1.WatchSessionChangesRequest{AfterEventId: after})
	var start *lifecyclev1.WatchSessionChangesResponse
	if err == nil {
		start, err = stream.Recv()
	}
	if err != nil {
		h.failed(w, r, "lifecycle", err)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no") // nginx: do not hold events back
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	// The deadline is the connection's, not the request's: clear it for
	// whatever the connection serves next.
	defer func() { _ = rc.SetWriteDeadline(time.Time{}) }()
	send := func(event []byte) bool {
		if err := rc.SetWriteDeadline(time.Now().Add(liveWriteTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return false
		}
		if _, err := w.Write(event); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send(fmt.Appendf(nil, "retry: %d\n\n", liveRetry.Milliseconds())) {
		return
	}

	type received struct {
		resp *lifecyclev1.WatchSessionChangesResponse
		err  error
	}
	changes := make(chan received)
	go func() {
		for {
			resp, err := stream.Recv()
			select {
			case changes <- received{resp, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	var changed []*lifecyclev1.SessionChange // since the last event
	emit := func(position int64) bool {
		if _, err := h.signIns.get(ctx, cookie, true); err != nil {
			if errors.Is(err, errSignedOut) {
				// Signed out in another tab, or on another replica, or
				// expired, meanwhile.
				send(signedOutEvent(event, statusID))
			}
			// Otherwise lineage is unreachable: end the stream rather
			// than serve a sign-in no one can vouch for; the page
			// reconnects.
			return false
		}
		rctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		out, err := render(rctx, in, position, changed)
		if err != nil {
			// The browser keeps what it shows and reconnects from the
			// last event it got, which renders again.
			if ctx.Err() == nil {
				h.logger.WarnContext(ctx, "console could not render a live page", "event", event, "error", err)
			}
			return false
		}
		changed = nil
		return out == nil || send(out)
	}
	position := start.GetPosition()
	if after == nil && !emit(position) {
		return
	}
	keepAlive := time.NewTicker(LiveKeepAlive)
	defer keepAlive.Stop()
	var due <-chan time.Time // set while changes wait to be rendered
	for {
		select {
		case <-ctx.Done():
			return // the browser went away
		case <-keepAlive.C:
			if !send([]byte(": keep-alive\n\n")) {
				return
			}
		case got := <-changes:
			if got.err != nil {
				// Lifecycle stopping ends the stream as it is: the browser
				// reconnects with the last event id it got.
				if st, _ := status.FromError(got.err); !errors.Is(got.err, io.EOF) && st.Code() != codes.Canceled && ctx.Err() == nil {
					h.logger.WarnContext(ctx, "console's watch of session changes ended", "error", got.err)
				}
				return
			}
			position = got.resp.GetPosition()
			if ch := got.resp.GetChange(); ch != nil {
				changed = append(changed, ch)
			}
			if due == nil {
				due = time.After(liveCoalesce)
			}
		case <-due:
			due = nil
			if !emit(position) {
				return
			}
		}
	}
}

// liveRender is one event: the view of f as it stands, under the id of the
// last change it shows.
func (h *Handler) liveRender(ctx context.Context, f filters, in signIn, position int64) ([]byte, error) {
	data, err := h.dashboardView(ctx, f, in)
	if err != nil {
		return nil, err
	}
	var html bytes.Buffer
	if err := h.liveTemplate.ExecuteTemplate(&html, "live", page{CSRF: in.csrf, AdminUser: h.opts.AdminUser, Data: data}); err != nil {
		return nil, fmt.Errorf("render the live dashboard: %w", err)
	}
	return sseEvent(LiveEvent, strconv.FormatInt(position, 10), html.String()), nil
}

// sseEvent frames data as one server-sent event: a data field per line.
func sseEvent(name, id, data string) []byte {
	var b bytes.Buffer
	if id != "" {
		fmt.Fprintf(&b, "id: %s\n", id)
	}
	fmt.Fprintf(&b, "event: %s\n", name)
	for _, line := range strings.Split(strings.ReplaceAll(data, "\r\n", "\n"), "\n") {
		fmt.Fprintf(&b, "data: %s\n", line)
	}
	b.WriteString("\n")
	return b.Bytes()
}

// liveSignedOut tells a live page whose sign-in has ended (signed out,
// expired, or the gateway restarted) so, in place of its live notice
// (statusID), and asks its browser to come back only much later: the
// page's links lead to the sign-in form.
func (h *Handler) liveSignedOut(w http.ResponseWriter, event, statusID string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(signedOutEvent(event, statusID))
}

// signedOutEvent replaces the page's live notice statusID, which holds its
// EventSource (so the extension closes it), with the news.
func signedOutEvent(event, statusID string) []byte {
	return append(fmt.Appendf(nil, "retry: %d\n\n", liveSignedOutRetry.Milliseconds()),
		sseEvent(event, "", `<p id="`+statusID+`" class="warning" role="alert" hx-swap-oob="true">`+
			`You are signed out, so this page no longer updates. <a href="/console/login">Sign in again</a>.</p>`)...)
}
