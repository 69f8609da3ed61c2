package console

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	"github.com/zimmerhq/zimmer/gateway/internal/grpcerr"
	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

// actions are the status header's buttons a session's status allows, as
// lifecycle's machine says (rules): the console keeps no copy of it.
type actions struct {
	Pause, Archive, Restore bool
}

func allowedActions(status string) actions {
	may := func(event string) bool {
		t, ok := rules.Lookup(event)
		return ok && slices.Contains(t.From, status)
	}
	return actions{Pause: may(rules.EventPause), Archive: may(rules.EventArchive), Restore: may(rules.RestoreEvent)}
}

// sessionAction runs one status action and comes back to the session's
// page with lifecycle's words for what happened.
func (h *Handler) sessionAction(name string, call func(ctx context.Context, id string) (string, error)) func(http.ResponseWriter, *http.Request, string, signIn) {
	return func(w http.ResponseWriter, r *http.Request, cookie string, in signIn) {
		ctx, cancel := context.WithTimeout(r.Context(), callTimeout)
		defer cancel()
		id := r.PathValue("id")
		msg, err := call(ctx, id)
		if err != nil {
			p := grpcerr.From("lifecycle", err)
			if p.Internal() || p.HTTPStatus == http.StatusNotFound {
				h.failed(w, r, "lifecycle", err)
				return
			}
			// A refusal (the archive guard, a transition the state no
			// longer allows) is shown on the page, with what to do next.
			h.renderSession(w, r, cookie, in, p.HTTPStatus, func(d *sessionData) {
				d.Refusal = p.Message
				d.OfferArchiveAnyway = name == "archive" && r.PostForm.Get("force") == ""
			})
			return
		}
		h.signIns.setFlash(cookie, msg)
		http.Redirect(w, r, "/console/sessions/"+id, http.StatusSeeOther)
	}
}

func (h *Handler) pause(ctx context.Context, id string) (string, error) {
	resp, err := h.clients.Lifecycle.PauseSession(ctx, &lifecyclev1.PauseSessionRequest{SessionId: id})
	if err != nil {
		return "", err
	}
	return resp.GetMessage(), nil
}

// archive moves the session to the trash; "Archive anyway" (force) goes
// over the queued messages the guard refused it for.
func (h *Handler) archive(force bool) func(ctx context.Context, id string) (string, error) {
	return func(ctx context.Context, id string) (string, error) {
		resp, err := h.clients.Lifecycle.ArchiveSession(ctx, &lifecyclev1.ArchiveSessionRequest{SessionId: id, Force: force})
		if err != nil {
			return "", err
		}
		if m := resp.GetMessage(); m != "" {
			return m, nil
		}
		return fmt.Sprintf("Session #%d moved to trash.", resp.GetSession().GetId()), nil
	}
}

func (h *Handler) restore(ctx context.Context, id string) (string, error) {
	resp, err := h.clients.Lifecycle.UnarchiveSession(ctx, &lifecyclev1.UnarchiveSessionRequest{SessionId: id})
	if err != nil {
		return "", err
	}
	if m := resp.GetMessage(); m != "" {
		return m, nil
	}
	return fmt.Sprintf("Session #%d restored.", resp.GetSession().GetId()), nil
}
