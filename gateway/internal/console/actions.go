package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/zimmerhq/zimmer/gateway/internal/grpcerr"
	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

// actions are the status header's buttons a session's status allows, as
// lifecycle's machine says (rules): the console keeps no copy of it.
type actions struct {
	Pause, Archive, Restore bool
	// PauseUntil: asleep until a time, with one wake armed (the states a
	// wake may be armed in).
	PauseUntil bool
	// Resume is the deliberate resume (RestartSession), ResumeLabel its
	// button: "Restart" on a failed session, "Resume" on an idle one.
	Resume      bool
	ResumeLabel string
}

func allowedActions(status string) actions {
	may := func(event string) bool {
		t, ok := rules.Lookup(event)
		return ok && slices.Contains(t.From, status)
	}
	a := actions{Pause: may(rules.EventPause), Archive: may(rules.EventArchive), Restore: may(rules.RestoreEvent),
		PauseUntil: slices.Contains(rules.WakeableStatuses(), status), Resume: may(rules.EventResume), ResumeLabel: "Resume"}
	if status == rules.StatusFailed {
		a.ResumeLabel = "Restart"
	}
	return a
}

// sessionAction runs one status action and comes back to the session's
// page with lifecycle's words for what happened.
func (h *Handler) sessionAction(name string, call func(ctx context.Context, id string) (string, error)) func(http.ResponseWriter, *http.Request, string, signIn) {
	return h.act("lifecycle", func(ctx context.Context, r *http.Request) (string, error) {
		return call(ctx, r.PathValue("id"))
	}, func(d *sessionData, r *http.Request) {
		d.OfferArchiveAnyway = name == "archive" && r.PostForm.Get("force") == ""
	})
}

// act runs one action of the session's page (service is who answers it)
// and comes back to the page with the service's words for what happened.
// A refusal is shown on the page, in those words, with keep adding what
// the form had (what was typed, "Archive anyway"); what is the system's
// fault is a problem page. A session that does not exist is the page's
// own 404.
func (h *Handler) act(service string, call func(ctx context.Context, r *http.Request) (string, error),
	keep func(*sessionData, *http.Request),
) func(http.ResponseWriter, *http.Request, string, signIn) {
	return func(w http.ResponseWriter, r *http.Request, cookie string, in signIn) {
		ctx, cancel := context.WithTimeout(r.Context(), callTimeout)
		defer cancel()
		id := r.PathValue("id")
		msg, err := call(ctx, r)
		var bad formError
		if errors.As(err, &bad) {
			h.renderSession(w, r, cookie, in, http.StatusBadRequest, func(d *sessionData) { d.Refusal = bad.Error() })
			return
		}
		if err != nil {
			p := grpcerr.From(service, err)
			if p.Internal() {
				h.failed(w, r, service, err)
				return
			}
			h.renderSession(w, r, cookie, in, p.HTTPStatus, func(d *sessionData) {
				d.Refusal = strings.Join(p.Messages, "; ")
				if keep != nil {
					keep(d, r)
				}
			})
			return
		}
		h.setFlash(w, r, msg)
		http.Redirect(w, r, "/console/sessions/"+id+redirectSuffix(r), http.StatusSeeOther)
	}
}

// redirectSuffix is what the page an action redirects to needs to know:
// an archive from the page offers its Undo there (the page stays, and
// its Archive has become Restore).
func redirectSuffix(r *http.Request) string {
	if strings.HasSuffix(r.URL.Path, "/archive") {
		return "?trashed=1"
	}
	return ""
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
		if _, err := h.clients.Lifecycle.ArchiveSession(ctx, &lifecyclev1.ArchiveSessionRequest{SessionId: id, Force: force}); err != nil {
			return "", err
		}
		return TrashedToast, nil
	}
}

// TrashedToast is the toast a trashed session leaves, the spec's words
// (session-lifecycle.md, "How the dashboard answers"); its Undo is beside it.
const TrashedToast = "Session moved to trash."

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
