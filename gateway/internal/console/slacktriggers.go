package console

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/zimmerhq/zimmer/gateway/internal/grpcerr"
	notificationv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/notification/v1"
)

// slackTriggersPage is the Slack triggers page: the list, and the form
// kept as typed when the notification service refuses it.
type slackTriggersPage struct {
	Triggers []*notificationv1.SlackTrigger
	// Unavailable says why the list could not be read.
	Unavailable string
	Form        slackTriggerForm
}

// slackTriggerForm is the new-trigger form's fields.
type slackTriggerForm struct {
	Channel, AllowedUserIDs, Prefix, GitRoot, AgentRoot, AgentRuntime string
	RequireMention                                                    bool
	Problems                                                          []string
}

func (h *Handler) slackTriggers(ctx context.Context) ([]*notificationv1.SlackTrigger, string) {
	if h.clients.Notifications == nil {
		return nil, "The notification service is not configured on this gateway."
	}
	resp, err := h.clients.Notifications.ListSlackTriggers(ctx, &notificationv1.ListSlackTriggersRequest{})
	if err != nil {
		h.logger.WarnContext(ctx, "list slack triggers", "error", err)
		return nil, "The Slack triggers could not be read: " + grpcerr.From("notification", err).Message
	}
	return resp.GetSlackTriggers(), ""
}

func (h *Handler) slackTriggersPage(w http.ResponseWriter, r *http.Request, cookie string, in signIn) {
	ctx, cancel := context.WithTimeout(r.Context(), callTimeout)
	defer cancel()
	p := slackTriggersPage{}
	p.Triggers, p.Unavailable = h.slackTriggers(ctx)
	h.render(w, r, http.StatusOK, "slack", h.signedInPage(ctx, w, r, in, "Slack triggers", p))
}

// createSlackTrigger adds the trigger the human described; a refused form
// is shown again with the service's reasons.
func (h *Handler) createSlackTrigger(w http.ResponseWriter, r *http.Request, cookie string, in signIn) {
	ctx, cancel := context.WithTimeout(r.Context(), callTimeout)
	defer cancel()
	f := slackTriggerForm{
		Channel: r.PostForm.Get("channel"), AllowedUserIDs: r.PostForm.Get("allowed_user_ids"), Prefix: r.PostForm.Get("prefix"),
		GitRoot: r.PostForm.Get("git_root"), AgentRoot: r.PostForm.Get("agent_root"), AgentRuntime: r.PostForm.Get("agent_runtime"),
		RequireMention: r.PostForm.Get("require_mention") != "",
	}
	if h.clients.Notifications == nil {
		h.problem(w, r, http.StatusServiceUnavailable, "The notification service is not configured on this gateway.")
		return
	}
	_, err := h.clients.Notifications.CreateSlackTrigger(ctx, &notificationv1.CreateSlackTriggerRequest{
		// One ID per line or comma: the service trims and merges them.
		Channel: f.Channel, AllowedUserIds: strings.FieldsFunc(f.AllowedUserIDs, func(c rune) bool { return c == ',' || c == '\n' }),
		Prefix: f.Prefix, RequireMention: f.RequireMention, GitRoot: f.GitRoot, AgentRoot: f.AgentRoot, AgentRuntime: f.AgentRuntime,
	})
	if err != nil {
		p := grpcerr.From("notification", err)
		if p.Internal() {
			h.failed(w, r, "notification", err)
			return
		}
		page := slackTriggersPage{Form: f}
		page.Form.Problems = p.Messages
		page.Triggers, page.Unavailable = h.slackTriggers(ctx)
		h.render(w, r, p.HTTPStatus, "slack", h.signedInPage(ctx, w, r, in, "Slack triggers", page))
		return
	}
	h.setFlash(w, r, "Slack trigger added.")
	http.Redirect(w, r, "/console/slack/triggers", http.StatusSeeOther)
}

// deleteSlackTrigger removes one trigger.
func (h *Handler) deleteSlackTrigger(w http.ResponseWriter, r *http.Request, cookie string, _ signIn) {
	ctx, cancel := context.WithTimeout(r.Context(), callTimeout)
	defer cancel()
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		h.problem(w, r, http.StatusNotFound, fmt.Sprintf("There is no Slack trigger %q.", r.PathValue("id")))
		return
	}
	if h.clients.Notifications == nil {
		h.problem(w, r, http.StatusServiceUnavailable, "The notification service is not configured on this gateway.")
		return
	}
	if _, err := h.clients.Notifications.DeleteSlackTrigger(ctx, &notificationv1.DeleteSlackTriggerRequest{TriggerId: id}); err != nil {
		h.failed(w, r, "notification", err)
		return
	}
	h.setFlash(w, r, fmt.Sprintf("Slack trigger #%d deleted; the sessions it started go on.", id))
	http.Redirect(w, r, "/console/slack/triggers", http.StatusSeeOther)
}
