package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/zimmerhq/zimmer/gateway/internal/grpcerr"
	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

// rankedLimit is how much of the line the Ranked page shows: lifecycle's
// page size cap; the page says when the line is longer.
const rankedLimit = 100

// rankedRoutes are the Ranked page (the spot queue in the order it will
// run, lifecycle's view=ranked) and its edits: a session's precedence, and
// making a spot session priority. Lifecycle orders the line and runs a
// scheduler pass on each edit (LC-36); the page only shows and asks.
func (h *Handler) rankedRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /console/ranked", h.signedIn(h.rankedPage))
	mux.HandleFunc("POST /console/sessions/{id}/precedence", h.mutating(h.rankedEdit(h.setPrecedence)))
	mux.HandleFunc("POST /console/sessions/{id}/priority", h.mutating(h.rankedEdit(h.makePriority)))
	mux.HandleFunc("POST /console/sessions/{id}/spot-queue", h.mutating(h.act("lifecycle", h.pauseIntoSpotQueue, nil)))
}

// rankedData is the Ranked page: the line, or why it could not be read,
// and a refused edit's reason with the value typed.
type rankedData struct {
	Line []*lifecyclev1.Session
	// More says the line is longer than the page (its total).
	More        int64
	Unavailable string
	Refusal     string
	// RefusedID and PrecedenceDraft keep a refused precedence as typed.
	RefusedID       string
	PrecedenceDraft string
}

func (h *Handler) ranked(ctx context.Context) (d rankedData) {
	resp, err := h.clients.Lifecycle.ListSessions(ctx, &lifecyclev1.ListSessionsRequest{View: "ranked", PerPage: rankedLimit})
	if err != nil {
		h.logger.WarnContext(ctx, "list the ranked view", "error", err)
		d.Unavailable = "The spot queue could not be read: " + grpcerr.From("lifecycle", err).Message
		return d
	}
	d.Line = resp.GetSessions()
	if total := resp.GetPagination().GetTotalCount(); total > int64(len(d.Line)) {
		d.More = total
	}
	return d
}

func (h *Handler) rankedPage(w http.ResponseWriter, r *http.Request, cookie string, in signIn) {
	ctx, cancel := context.WithTimeout(r.Context(), callTimeout)
	defer cancel()
	h.render(w, r, http.StatusOK, "ranked", h.signedInPage(ctx, w, r, in, "Ranked", h.ranked(ctx)))
}

// rankedEdit runs one edit of the line and goes back to the page; a
// refusal (a form the console or lifecycle refused) is shown on the page
// with what was typed, and changes nothing.
func (h *Handler) rankedEdit(call func(ctx context.Context, r *http.Request) (string, error)) func(http.ResponseWriter, *http.Request, string, signIn) {
	return func(w http.ResponseWriter, r *http.Request, cookie string, in signIn) {
		ctx, cancel := context.WithTimeout(r.Context(), callTimeout)
		defer cancel()
		msg, err := call(ctx, r)
		if err != nil {
			status, refusal := http.StatusBadRequest, err.Error()
			var bad formError
			if !errors.As(err, &bad) {
				p := grpcerr.From("lifecycle", err)
				if p.Internal() {
					h.failed(w, r, "lifecycle", err)
					return
				}
				status, refusal = p.HTTPStatus, strings.Join(p.Messages, "; ")
			}
			d := h.ranked(ctx)
			d.Refusal, d.RefusedID, d.PrecedenceDraft = refusal, r.PathValue("id"), r.PostForm.Get("precedence")
			h.render(w, r, status, "ranked", h.signedInPage(ctx, w, r, in, "Ranked", d))
			return
		}
		h.setFlash(w, r, msg)
		http.Redirect(w, r, "/console/ranked", http.StatusSeeOther)
	}
}

// setPrecedence edits a session's precedence: higher runs sooner among
// spot work.
func (h *Handler) setPrecedence(ctx context.Context, r *http.Request) (string, error) {
	text := strings.TrimSpace(r.PostForm.Get("precedence"))
	n, err := strconv.ParseInt(text, 10, 32)
	if err != nil {
		return "", formError{fmt.Sprintf("precedence: %q is not a whole number (higher runs sooner)", text)}
	}
	p := int32(n)
	if _, err := h.clients.Lifecycle.UpdateSession(ctx, &lifecyclev1.UpdateSessionRequest{SessionId: r.PathValue("id"), Precedence: &p}); err != nil {
		return "", err
	}
	return fmt.Sprintf("Session #%s's precedence is %d.", r.PathValue("id"), p), nil
}

// makePriority makes a session priority: its turn goes ahead of every
// spot session, and a spot sleeper leaves the queue on the next pass.
func (h *Handler) makePriority(ctx context.Context, r *http.Request) (string, error) {
	class := rules.SchedulingPriority
	if _, err := h.clients.Lifecycle.UpdateSession(ctx, &lifecyclev1.UpdateSessionRequest{SessionId: r.PathValue("id"), SchedulingClass: &class}); err != nil {
		return "", err
	}
	return fmt.Sprintf("Session #%s is priority: its turns go ahead of every spot session's.", r.PathValue("id")), nil
}

// pauseIntoSpotQueue is Pause Until's last choice: asleep with no wake,
// spot, resumed by the spot scheduler when a turn slot is free.
func (h *Handler) pauseIntoSpotQueue(ctx context.Context, r *http.Request) (string, error) {
	resp, err := h.clients.Lifecycle.PauseIntoSpotQueue(ctx, &lifecyclev1.PauseIntoSpotQueueRequest{SessionId: r.PathValue("id")})
	if err != nil {
		return "", err
	}
	return orWords(resp.GetMessage(), "Session #%d sleeps in the spot queue.", resp.GetSession().GetId()), nil
}
