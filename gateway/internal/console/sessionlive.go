package console

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
)

// The session page's live parts: GET /console/sessions/{id}/live keeps its
// hierarchy and human messages current while it is open — a child spawned,
// a node changing state — over the dashboard's own mechanism, lifecycle's
// WatchSessionChanges relayed as server-sent events (relayChanges), each
// the two sections re-rendered and swapped out of band by htmx's SSE
// extension. Lineage decides what the hierarchy holds; the stream only
// says when to ask it again. A node's status is the newest the stream has
// seen for it when lineage, which hears of a transition through lifecycle's
// outbox, has not recorded it yet.

// SessionLiveEvent is the SSE event name the session page swaps.
const SessionLiveEvent = "session"

// sessionLiveStatusID is the session page's live notice: not the
// dashboard's id, since a drawer puts a session page over the dashboard.
const sessionLiveStatusID = "session-live-status"

func (h *Handler) sessionLive(w http.ResponseWriter, r *http.Request) {
	id, err := positiveNumber("session", r.PathValue("id"), 64)
	if err != nil {
		h.problem(w, r, http.StatusBadRequest, err.Error())
		return
	}
	// The newest status the stream has seen of each session, and the last
	// sections sent, for this page's stream alone.
	statuses := map[int64]string{}
	var last []byte
	h.relayChanges(w, r, SessionLiveEvent, sessionLiveStatusID, func(ctx context.Context, in signIn, position int64, changed []*lifecyclev1.SessionChange) ([]byte, error) {
		for _, c := range changed {
			statuses[c.GetSessionId()] = c.GetTo()
		}
		data := sessionData{Session: &lifecyclev1.Session{Id: id}}
		h.loadProvenance(ctx, id, &data, statuses)
		var html bytes.Buffer
		if err := h.pages["session"].ExecuteTemplate(&html, "session-live", page{CSRF: in.csrf, Data: data}); err != nil {
			return nil, fmt.Errorf("render session %d's live parts: %w", id, err)
		}
		if bytes.Equal(html.Bytes(), last) {
			return nil, nil // nothing the page shows changed
		}
		last = html.Bytes()
		return sseEvent(SessionLiveEvent, strconv.FormatInt(position, 10), html.String()), nil
	})
}
