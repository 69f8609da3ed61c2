package console

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/zimmerhq/zimmer/gateway/internal/grpcerr"
	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"
	runnerv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/runner/v1"
	"github.com/zimmerhq/zimmer/services/platform/boundary"
)

const (
	// TranscriptLines is how many transcript lines the session page shows.
	TranscriptLines = 200
	// ProvenanceFollowUp is the human message's entry point for a
	// follow-up typed in the console (the spec's capture table).
	ProvenanceFollowUp = "web_ui.follow_up"
	callTimeout        = 10 * time.Second
)

// signedInPage is a page's frame for a signed-in human.
func (h *Handler) signedInPage(ctx context.Context, w http.ResponseWriter, r *http.Request, in signIn, title string, data any) page {
	return page{Title: title, CSRF: in.csrf, RosterWarning: h.rosterWarning(ctx), Flash: h.takeFlash(w, r),
		Unread: h.unreadCount(ctx), Data: data}
}

// rosterWarning says, when it is so, that what the human types is not
// recorded: ZIMMER_ADMIN_USER names nobody in the roster (lineage then
// records nothing rather than guess an author).
func (h *Handler) rosterWarning(ctx context.Context) string {
	resp, err := h.clients.Provenance.ListUsers(ctx, &lineagev1.ListUsersRequest{})
	if err != nil {
		h.logger.WarnContext(ctx, "console could not read the roster", "error", err)
		return "The users roster could not be read, so it is unknown whether what you type is recorded as your human message."
	}
	for _, u := range resp.GetUsers() {
		if u.GetKey() == h.opts.AdminUser {
			return ""
		}
	}
	return fmt.Sprintf("%s %q names nobody in the users roster (/supervisor/users): what you type here is delivered but NOT recorded as a human message.",
		AdminUserEnv, h.opts.AdminUser)
}

type sessionData struct {
	Session *lifecyclev1.Session
	// Transcript is the newest turns' lines, newest turn first.
	Transcript      []*runnerv1.TranscriptLine
	TranscriptError string
	HumanMessages   []*lineagev1.HumanMessage
	HereCount       int32
	ElsewhereCount  int32
	OlderCount      int32
	// IdempotencyKey and EnqueueKey make the follow-up and queue forms
	// deliver once however often they are submitted.
	IdempotencyKey string
	EnqueueKey     string
	// Actions are the status actions the session's status allows.
	Actions actions
	// Refusal is lifecycle's words for an action it just refused;
	// OfferArchiveAnyway shows the archive guard's "Archive anyway".
	Refusal            string
	OfferArchiveAnyway bool
	// The rest of the page (details.go).
	details
	// Elicitation is the elicitation partial's (elicitation.go).
	Elicitation *elicitationView
}

func (h *Handler) sessionPage(w http.ResponseWriter, r *http.Request, cookie string, in signIn) {
	h.renderSession(w, r, cookie, in, http.StatusOK, nil)
}

// renderSession answers the session's page with status; adjust, when not
// nil, adds what the request that led here has to say.
func (h *Handler) renderSession(w http.ResponseWriter, r *http.Request, cookie string, in signIn, status int, adjust func(*sessionData)) {
	ctx, cancel := context.WithTimeout(r.Context(), callTimeout)
	defer cancel()
	got, err := h.clients.Lifecycle.GetSession(ctx, &lifecyclev1.GetSessionRequest{SessionId: r.PathValue("id")})
	if err != nil {
		h.failed(w, r, "lifecycle", err)
		return
	}
	s := got.GetSession()
	data := sessionData{Session: s, IdempotencyKey: randomToken(), EnqueueKey: randomToken(), Actions: allowedActions(s.GetStatus())}
	data.Trashed = r.URL.Query().Has("trashed") && data.Actions.Restore
	if adjust != nil {
		adjust(&data)
	}
	data.TitleValue, data.NotesValue = s.GetTitle(), s.GetNotes()
	if data.TitleDraft != nil {
		data.TitleValue = *data.TitleDraft
	}
	if data.NotesDraft != nil {
		data.NotesValue = *data.NotesDraft
	}
	data.Elicitation = h.elicitationView(ctx, s)
	id := strconv.FormatInt(s.GetId(), 10)
	// The page's parts come from four services; asked at once, the page
	// costs the slowest of them, not their sum.
	var wg sync.WaitGroup
	wg.Go(func() {
		if tr, err := h.clients.Runner.GetTranscript(ctx, &runnerv1.GetTranscriptRequest{SessionId: id, PageSize: TranscriptLines}); err != nil {
			data.TranscriptError = grpcerr.From("runner", err).Message
		} else {
			data.Transcript = tr.GetLines()
		}
	})
	wg.Go(func() { h.loadProvenance(ctx, s.GetId(), &data, nil) })
	h.loadDetails(ctx, &wg, id, &data.details)
	wg.Wait()
	data.StreamAfter = lastLineID(data.Transcript)
	title := fmt.Sprintf("#%d", s.GetId())
	if s.GetTitle() != "" {
		title += " " + s.GetTitle()
	}
	h.render(w, r, status, sessionTemplate(r), h.signedInPage(ctx, w, r, in, title, data))
}

// loadProvenance reads the page's hierarchy and human messages from
// lineage into data; a failure is said in the hierarchy's place. statuses,
// when set, are newer statuses of some of its sessions than lineage has
// recorded yet (the live stream's, sessionlive.go), shown instead.
func (h *Handler) loadProvenance(ctx context.Context, id int64, data *sessionData, statuses map[int64]string) {
	pv, err := h.clients.Provenance.GetSessionProvenance(ctx, &lineagev1.GetSessionProvenanceRequest{SessionId: id})
	if err != nil {
		data.HierarchyError = grpcerr.From("lineage", err).Message
		h.logger.WarnContext(ctx, "console could not read a session's provenance", "session_id", id, "error", err)
		return
	}
	hierarchy := pv.GetSessionHierarchy()
	if len(statuses) > 0 {
		hierarchy = proto.Clone(hierarchy).(*lineagev1.SessionHierarchy) // the answer is not ours to change
		for _, n := range hierarchy.GetNodes() {
			if st, ok := statuses[n.GetId()]; ok {
				n.Status = st
			}
		}
	}
	data.HumanMessages, data.OlderCount = pv.GetHumanMessages(), pv.GetOlderCount()
	data.HereCount, data.ElsewhereCount = pv.GetHereCount(), pv.GetElsewhereCount()
	data.ElsewhereIsFloor = pv.GetElsewhereCountIsFloor()
	data.Hierarchy, data.HierarchyTree = hierarchy, hierarchyTree(hierarchy.GetNodes())
}

// followUp sends what the human typed as the session's next prompt, then
// records it as their human message (web_ui.follow_up) through the human
// boundary: the console's connection is the service "console" acting as
// itself, declaring the web UI's admin, which is what lineage believes. A
// follow-up the queue refused was not delivered, so nothing is recorded.
func (h *Handler) followUp(w http.ResponseWriter, r *http.Request, cookie string, _ signIn) {
	ctx, cancel := context.WithTimeout(r.Context(), callTimeout)
	defer cancel()
	got, err := h.clients.Lifecycle.GetSession(ctx, &lifecyclev1.GetSessionRequest{SessionId: r.PathValue("id")})
	if err != nil {
		h.failed(w, r, "lifecycle", err)
		return
	}
	id := got.GetSession().GetId()
	prompt := r.PostForm.Get("prompt")
	resp, err := h.clients.Queue.FollowUp(ctx, &queuev1.FollowUpRequest{
		SessionId: strconv.FormatInt(id, 10), Prompt: prompt,
		ForceImmediate: r.PostForm.Get("force_immediate") != "", IdempotencyKey: r.PostForm.Get("idempotency_key"),
	})
	if err != nil {
		h.failed(w, r, "queue", err)
		return
	}
	flash := resp.GetMessage()
	if note := h.recordHumanMessage(ctx, id, ProvenanceFollowUp, prompt, r.PostForm.Get("idempotency_key")); note != "" {
		flash += " " + note
	}
	h.setFlash(w, r, flash)
	http.Redirect(w, r, fmt.Sprintf("/console/sessions/%d", id), http.StatusSeeOther)
}

// ProvenanceEnqueuedMessage is the human message's entry point for a
// message queued in the console: recorded when typed, not when delivered
// (the spec's capture table).
const ProvenanceEnqueuedMessage = "web_ui.enqueued_message"

// enqueue queues what the human typed as the session's next message and
// records it as their human message when the queue created it (a
// resubmitted form, answered from its idempotency key, records nothing
// twice).
func (h *Handler) enqueue(w http.ResponseWriter, r *http.Request, cookie string, _ signIn) {
	ctx, cancel := context.WithTimeout(r.Context(), callTimeout)
	defer cancel()
	got, err := h.clients.Lifecycle.GetSession(ctx, &lifecyclev1.GetSessionRequest{SessionId: r.PathValue("id")})
	if err != nil {
		h.failed(w, r, "lifecycle", err)
		return
	}
	id := got.GetSession().GetId()
	content := r.PostForm.Get("content")
	resp, err := h.clients.Queue.EnqueueMessage(ctx, &queuev1.EnqueueMessageRequest{
		SessionId: strconv.FormatInt(id, 10), Content: content, IdempotencyKey: r.PostForm.Get("idempotency_key"),
	})
	if err != nil {
		h.failed(w, r, "queue", err)
		return
	}
	flash := resp.GetMessage()
	if resp.GetCreated() {
		if note := h.recordHumanMessage(ctx, id, ProvenanceEnqueuedMessage, content, r.PostForm.Get("idempotency_key")); note != "" {
			flash += " " + note
		}
	}
	h.setFlash(w, r, flash)
	http.Redirect(w, r, fmt.Sprintf("/console/sessions/%d", id), http.StatusSeeOther)
}

// recordHumanMessage records what the human said in session id, and
// returns what to tell them when it was not recorded. formKey is the
// form's idempotency key ("" for a form without one): lineage records a
// resubmitted form's message once, however the first submission ended.
func (h *Handler) recordHumanMessage(ctx context.Context, id int64, provenance, content, formKey string) string {
	ctx, err := boundary.Outgoing(ctx, boundary.Actor{Kind: boundary.WebUIAdmin})
	if err != nil {
		h.logger.ErrorContext(ctx, "declare the console's human", "error", err)
		return "It was not recorded as your human message (internal error)."
	}
	req := &lineagev1.RecordHumanMessageRequest{Provenance: provenance, AuthoredInSessionId: id, Content: content}
	if formKey != "" {
		// Namespaced: lineage's keys are unique across every boundary.
		req.IdempotencyKey = provenance + "/" + formKey
	}
	rec, err := h.clients.Provenance.RecordHumanMessage(ctx, req)
	switch {
	case err != nil:
		h.logger.ErrorContext(ctx, "record the console's human message", "session_id", id, "error", err)
		return "It was not recorded as your human message: " + grpcerr.From("lineage", err).Message
	case !rec.GetRecorded():
		return "It was not recorded as your human message: " + rec.GetNotRecordedReason() + "."
	}
	return ""
}

// failed answers a page for a service's refusal or failure, in the
// service's words (grpcerr), logging what is the system's fault.
func (h *Handler) failed(w http.ResponseWriter, r *http.Request, service string, err error) {
	p := grpcerr.From(service, err)
	if p.Internal() {
		h.logger.ErrorContext(r.Context(), "console call failed", "service", service, "path", r.URL.Path, "code", p.Code.String(), "error", err)
	}
	h.problem(w, r, p.HTTPStatus, p.Message)
}
