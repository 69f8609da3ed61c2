package console

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/zimmerhq/zimmer/gateway/internal/grpcerr"
	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

// ProvenanceNewSession is the human message's entry point for a session
// created in the console (the spec's capture table).
const ProvenanceNewSession = "web_ui.new_session"

// newSessionForm is the new-session form's fields, kept when lifecycle
// refuses them so that nothing typed is lost.
type newSessionForm struct {
	Prompt, Title, GitRoot, Branch, AgentRoot, AgentRuntime, Parent, SchedulingClass string
	Classes                                                                          []string
	// Problems are lifecycle's words for what it refused.
	Problems []string
}

func (h *Handler) newSessionPage(w http.ResponseWriter, r *http.Request, cookie string, in signIn) {
	ctx, cancel := context.WithTimeout(r.Context(), callTimeout)
	defer cancel()
	h.render(w, r, http.StatusOK, "new", h.signedInPage(ctx, w, r, in, "New session",
		newSessionForm{Classes: rules.SchedulingClasses(), Parent: r.URL.Query().Get("parent")}))
}

// createSession creates the session the human described, then records
// its prompt as their human message (web_ui.new_session) in it. A refused
// form shows the form again, with lifecycle's reasons.
func (h *Handler) createSession(w http.ResponseWriter, r *http.Request, cookie string, in signIn) {
	ctx, cancel := context.WithTimeout(r.Context(), callTimeout)
	defer cancel()
	f := newSessionForm{
		Prompt: r.PostForm.Get("prompt"), Title: r.PostForm.Get("title"), GitRoot: r.PostForm.Get("git_root"),
		Branch: r.PostForm.Get("branch"), AgentRoot: r.PostForm.Get("agent_root"), AgentRuntime: r.PostForm.Get("agent_runtime"),
		Parent: strings.TrimSpace(r.PostForm.Get("parent")), SchedulingClass: r.PostForm.Get("scheduling_class"),
		Classes: rules.SchedulingClasses(),
	}
	req := &lifecyclev1.CreateSessionRequest{
		Prompt: f.Prompt, Title: f.Title, GitRoot: f.GitRoot, Branch: f.Branch, AgentRoot: f.AgentRoot,
		AgentRuntime: f.AgentRuntime, SchedulingClass: f.SchedulingClass,
	}
	if f.Parent != "" {
		parent, err := strconv.ParseInt(strings.TrimPrefix(f.Parent, "#"), 10, 64)
		if err != nil || parent < 1 {
			f.Problems = []string{fmt.Sprintf("parent: %q is not a session id; write its number, e.g. 12", f.Parent)}
			h.render(w, r, http.StatusUnprocessableEntity, "new", h.signedInPage(ctx, w, r, in, "New session", f))
			return
		}
		req.ParentSessionId = &parent
	}
	resp, err := h.clients.Lifecycle.CreateSession(ctx, req)
	if err != nil {
		p := grpcerr.From("lifecycle", err)
		if p.Internal() {
			h.failed(w, r, "lifecycle", err)
			return
		}
		f.Problems = p.Messages
		h.render(w, r, p.HTTPStatus, "new", h.signedInPage(ctx, w, r, in, "New session", f))
		return
	}
	id := resp.GetSession().GetId()
	flash := fmt.Sprintf("Session #%d created.", id)
	if note := h.recordHumanMessage(ctx, id, ProvenanceNewSession, f.Prompt, ""); note != "" {
		flash += " " + note
	}
	h.setFlash(w, r, flash)
	http.Redirect(w, r, fmt.Sprintf("/console/sessions/%d", id), http.StatusSeeOther)
}
