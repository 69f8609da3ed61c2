package console

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"google.golang.org/protobuf/proto"

	"github.com/zimmerhq/zimmer/gateway/internal/grpcerr"
	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

// The dashboard's own actions: a card's Trash (with its Undo) and
// refresh, "Refresh all", and the quick prompt. Asked by htmx (HX-Request),
// each answers with what changes on the dashboard — the toast, the card it
// took away or brought back — swapped out of band, so the answer does not
// depend on the live stream (a dead stream must not lose a click's result);
// asked by a plain form, each comes back to the dashboard with the words
// as its flash.

const (
	// ProvenanceQuickPrompt is the human message's entry point for a
	// session started from the dashboard's quick prompt (the spec's
	// capture table).
	ProvenanceQuickPrompt = "web_ui.quick_prompt"
	// QuickGitRootCookieName keeps the repository the quick prompt used
	// last, for the next one.
	QuickGitRootCookieName = "quick_git_root"
	// refreshAllConcurrency bounds the refreshes "Refresh all" has in
	// flight at once.
	refreshAllConcurrency = 4
	// refreshAllTimeout bounds "Refresh all" as a whole.
	refreshAllTimeout = 2 * time.Minute
)

// toastData is what the toast says and offers.
type toastData struct {
	Text string
	// Undo offers Undo for the session just trashed; ArchiveAnyway offers
	// the archive guard's override for the session it refused.
	Undo, ArchiveAnyway int64
	// View, beside Undo's answer, is the dashboard as it now stands.
	View *dashboardData
}

func fromHTMX(r *http.Request) bool { return r.Header.Get("HX-Request") == "true" }

// answerCard answers a card's action: the named part of cards.html for
// htmx, the dashboard with the toast's words as flash otherwise.
func (h *Handler) answerCard(w http.ResponseWriter, r *http.Request, cookie string, in signIn, part string, t toastData) {
	if !fromHTMX(r) {
		h.setFlash(w, r, t.Text)
		http.Redirect(w, r, Prefix, http.StatusSeeOther)
		return
	}
	var b bytes.Buffer
	if err := h.liveTemplate.ExecuteTemplate(&b, part, page{CSRF: in.csrf, Data: t}); err != nil {
		h.logger.ErrorContext(r.Context(), "render a card's answer", "part", part, "error", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(b.Bytes())
}

// refusal is a toast for a service's refusal or failure, in its words.
func (h *Handler) refusal(r *http.Request, service string, err error) toastData {
	p := grpcerr.From(service, err)
	if p.Internal() {
		h.logger.ErrorContext(r.Context(), "console call failed", "service", service, "path", r.URL.Path, "code", p.Code.String(), "error", err)
	}
	return toastData{Text: p.Message}
}

// trash archives a card's session: the card goes and the toast offers Undo
// (session-lifecycle.md, "How the dashboard answers"). The archive is the
// session page's (the guard's refusal offers "Archive anyway"), so its line
// says it was moved to trash by a user in the web UI.
func (h *Handler) trash(w http.ResponseWriter, r *http.Request, cookie string, in signIn) {
	ctx, cancel := context.WithTimeout(r.Context(), callTimeout)
	defer cancel()
	force := r.PostForm.Get("force") != ""
	resp, err := h.clients.Lifecycle.ArchiveSession(ctx, &lifecyclev1.ArchiveSessionRequest{SessionId: r.PathValue("id"), Force: force})
	if err != nil {
		t := h.refusal(r, "lifecycle", err)
		if p := grpcerr.From("lifecycle", err); !force && !p.Internal() && p.HTTPStatus != http.StatusNotFound {
			if id, perr := strconv.ParseInt(r.PathValue("id"), 10, 64); perr == nil {
				t.ArchiveAnyway = id
			}
		}
		h.answerCard(w, r, cookie, in, "toast", t)
		return
	}
	id := resp.GetSession().GetId()
	h.answerCard(w, r, cookie, in, "trashed", toastData{Text: TrashedToast, Undo: id})
}

// undoTrash restores a session the toast's Undo names, back in its place
// among the cards.
func (h *Handler) undoTrash(w http.ResponseWriter, r *http.Request, cookie string, in signIn) {
	ctx, cancel := context.WithTimeout(r.Context(), callTimeout)
	defer cancel()
	resp, err := h.clients.Lifecycle.UnarchiveSession(ctx, &lifecyclev1.UnarchiveSessionRequest{SessionId: r.PathValue("id")})
	if err != nil {
		h.answerCard(w, r, cookie, in, "toast", h.refusal(r, "lifecycle", err))
		return
	}
	t := toastData{Text: fmt.Sprintf("Session #%d restored.", resp.GetSession().GetId())}
	if fromHTMX(r) {
		view, err := h.dashboardView(ctx, h.readFilters(w, r), in)
		if err == nil {
			t.View = &view
		} // else the live stream brings the card back
	}
	h.answerCard(w, r, cookie, in, "restored", t)
}

// refresh is a card's refresh: lifecycle's rule for one session, in its
// words.
func (h *Handler) refresh(w http.ResponseWriter, r *http.Request, cookie string, in signIn) {
	ctx, cancel := context.WithTimeout(r.Context(), callTimeout)
	defer cancel()
	resp, err := h.clients.Lifecycle.RefreshSession(ctx, &lifecyclev1.RefreshSessionRequest{SessionId: r.PathValue("id")})
	if err != nil {
		h.answerCard(w, r, cookie, in, "toast", h.refusal(r, "lifecycle", err))
		return
	}
	h.answerCard(w, r, cookie, in, "toast", toastData{Text: resp.GetMessage()})
}

// refreshAll is "Refresh all": every session not archived outside a
// frozen category (lifecycle's skip_frozen_categories filter), each
// refreshed by lifecycle's rule as a bulk act (RefreshSessionRequest.bulk).
// The toast says how many got a turn, how many were left alone and how
// many a frozen category kept out.
func (h *Handler) refreshAll(w http.ResponseWriter, r *http.Request, cookie string, in signIn) {
	h.refreshScope(w, r, cookie, in, "sessions not archived", &lifecyclev1.ListSessionsRequest{SkipFrozenCategories: true})
}

// refreshStarred is "Refresh starred": every starred session not archived,
// frozen category or not — starring outranks the category's parked flag
// (session-lifecycle.md, "Manual refresh").
func (h *Handler) refreshStarred(w http.ResponseWriter, r *http.Request, cookie string, in signIn) {
	starred := true
	h.refreshScope(w, r, cookie, in, "starred sessions not archived", &lifecyclev1.ListSessionsRequest{Starred: &starred})
}

// refreshCategory is a category grid's refresh: that category's sessions
// not archived, each by lifecycle's rule as a bulk act. A frozen category is
// skipped, as "Refresh all" skips it (its grid offers no control; this
// answers a page older than the freeze); its starred sessions are the
// Starred group's, and "Refresh starred" reaches them.
func (h *Handler) refreshCategory(w http.ResponseWriter, r *http.Request, cookie string, in signIn) {
	cid, err := strconv.ParseInt(r.PathValue("cid"), 10, 64)
	if err != nil || cid < 1 {
		h.answerCard(w, r, cookie, in, "toast", toastData{Text: "That is not a category: refresh a category from its grid's control."})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), callTimeout)
	defer cancel()
	cats, err := h.clients.Lifecycle.ListCategories(ctx, &lifecyclev1.ListCategoriesRequest{})
	if err != nil {
		h.answerCard(w, r, cookie, in, "toast", h.refusal(r, "lifecycle", err))
		return
	}
	i := slices.IndexFunc(cats.GetCategories(), func(c *lifecyclev1.Category) bool { return c.GetId() == cid })
	if i < 0 {
		h.answerCard(w, r, cookie, in, "toast", toastData{Text: fmt.Sprintf("Category #%d does not exist any more; reload the dashboard.", cid)})
		return
	}
	c := cats.GetCategories()[i]
	if c.GetFrozen() {
		h.answerCard(w, r, cookie, in, "toast", toastData{Text: fmt.Sprintf(
			"Category %q is frozen, so its sessions are not refreshed (Refresh all skips it too); thaw it, or refresh a session on its own.", c.GetName())})
		return
	}
	h.refreshScope(w, r, cookie, in, fmt.Sprintf("sessions not archived in %q", c.GetName()), &lifecyclev1.ListSessionsRequest{CategoryId: &cid})
}

// liveStatuses are the statuses a bulk refresh looks at: all but archived.
func liveStatuses() []string {
	var live []string
	for _, s := range rules.Statuses() {
		if s != rules.StatusArchived {
			live = append(live, s)
		}
	}
	return live
}

// listIDs lists the ids of the sessions scope selects, every page.
func (h *Handler) listIDs(ctx context.Context, scope *lifecyclev1.ListSessionsRequest) ([]string, error) {
	var ids []string
	for pageNo := int32(1); ; pageNo++ {
		req := proto.CloneOf(scope)
		req.Status, req.Page, req.PerPage = liveStatuses(), pageNo, rules.MaxPerPage
		resp, err := h.clients.Lifecycle.ListSessions(ctx, req)
		if err != nil {
			return nil, err
		}
		for _, s := range resp.GetSessions() {
			ids = append(ids, strconv.FormatInt(s.GetId(), 10))
		}
		if pageNo >= resp.GetPagination().GetTotalPages() || len(resp.GetSessions()) == 0 {
			return ids, nil
		}
	}
}

// refreshScope refreshes every session not archived that scope selects
// (what names them in the toast), each by lifecycle's rule as a bulk act.
func (h *Handler) refreshScope(w http.ResponseWriter, r *http.Request, cookie string, in signIn, what string,
	scope *lifecyclev1.ListSessionsRequest,
) {
	ctx, cancel := context.WithTimeout(r.Context(), refreshAllTimeout)
	defer cancel()
	ids, err := h.listIDs(ctx, scope)
	if err != nil {
		h.answerCard(w, r, cookie, in, "toast", h.refusal(r, "lifecycle", err))
		return
	}
	var (
		mu                sync.Mutex
		refreshed, leftBe int
		failures          []string
	)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(refreshAllConcurrency)
	for _, id := range ids {
		g.Go(func() error {
			resp, err := h.clients.Lifecycle.RefreshSession(gctx, &lifecyclev1.RefreshSessionRequest{SessionId: id, Bulk: true})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				failures = append(failures, "#"+id+": "+grpcerr.From("lifecycle", err).Message)
			case resp.GetRefreshed():
				refreshed++
			default:
				leftBe++
			}
			return nil
		})
	}
	_ = g.Wait()
	text := fmt.Sprintf("Refreshed all %d %s: %d got the continue nudge, %d were left as they are (refresh one to see why).",
		len(ids), what, refreshed, leftBe)
	if scope.GetSkipFrozenCategories() {
		// How many a frozen category kept out: all live ones, counted.
		every, err := h.clients.Lifecycle.ListSessions(ctx, &lifecyclev1.ListSessionsRequest{Status: liveStatuses(), PerPage: 1})
		if n := every.GetPagination().GetTotalCount() - int64(len(ids)); err == nil && n > 0 {
			text += fmt.Sprintf(" Left out %d in frozen categories.", n)
		}
	}
	if len(failures) > 0 {
		text += " Not refreshed: " + strings.Join(failures, "; ")
	}
	h.answerCard(w, r, cookie, in, "toast", toastData{Text: text})
}

// star stars a card's session (the form's starred is "1") or takes its
// star away.
func (h *Handler) star(w http.ResponseWriter, r *http.Request, cookie string, in signIn) {
	ctx, cancel := context.WithTimeout(r.Context(), callTimeout)
	defer cancel()
	id := r.PathValue("id")
	var (
		s   *lifecyclev1.Session
		err error
	)
	if r.PostForm.Get("starred") == "1" {
		var resp *lifecyclev1.StarSessionResponse
		resp, err = h.clients.Lifecycle.StarSession(ctx, &lifecyclev1.StarSessionRequest{SessionId: id})
		s = resp.GetSession()
	} else {
		var resp *lifecyclev1.UnstarSessionResponse
		resp, err = h.clients.Lifecycle.UnstarSession(ctx, &lifecyclev1.UnstarSessionRequest{SessionId: id})
		s = resp.GetSession()
	}
	if err != nil {
		h.answerCard(w, r, cookie, in, "toast", h.refusal(r, "lifecycle", err))
		return
	}
	text := fmt.Sprintf("Session #%d starred.", s.GetId())
	if !s.GetStarred() {
		text = fmt.Sprintf("Session #%d is not starred any more.", s.GetId())
	}
	h.answerChanged(ctx, w, r, cookie, in, text)
}

// moveToCategory files a card's session under the form's category_id
// ("0": uncategorized). Lifecycle refuses an id that is not a category.
func (h *Handler) moveToCategory(w http.ResponseWriter, r *http.Request, cookie string, in signIn) {
	ctx, cancel := context.WithTimeout(r.Context(), callTimeout)
	defer cancel()
	cat, err := strconv.ParseInt(r.PostForm.Get("category_id"), 10, 64)
	if err != nil {
		h.answerCard(w, r, cookie, in, "toast", toastData{Text: "Choose a category to move the session to."})
		return
	}
	resp, err := h.clients.Lifecycle.UpdateSession(ctx, &lifecyclev1.UpdateSessionRequest{SessionId: r.PathValue("id"), CategoryId: &cat})
	if err != nil {
		h.answerCard(w, r, cookie, in, "toast", h.refusal(r, "lifecycle", err))
		return
	}
	text := fmt.Sprintf("Session #%d is uncategorized.", resp.GetSession().GetId())
	if cat != 0 {
		text = fmt.Sprintf("Session #%d moved to category #%d.", resp.GetSession().GetId(), cat)
	}
	h.answerChanged(ctx, w, r, cookie, in, text)
}

// answerChanged answers a change of a card's session: the toast and, for
// htmx, the cards as they now stand (the live stream follows transitions,
// not edits).
func (h *Handler) answerChanged(ctx context.Context, w http.ResponseWriter, r *http.Request, cookie string, in signIn, text string) {
	t := toastData{Text: text}
	if fromHTMX(r) {
		if view, err := h.dashboardView(ctx, h.readFilters(w, r), in); err == nil {
			t.View = &view
		}
	}
	h.answerCard(w, r, cookie, in, "restored", t)
}

// quickPrompt starts a session from the dashboard's quick prompt — a
// prompt and the repository it works in, nothing else — and records the
// prompt as the human's web_ui.quick_prompt message in it, then opens it.
func (h *Handler) quickPrompt(w http.ResponseWriter, r *http.Request, cookie string, _ signIn) {
	ctx, cancel := context.WithTimeout(r.Context(), callTimeout)
	defer cancel()
	prompt, gitRoot := r.PostForm.Get("prompt"), strings.TrimSpace(r.PostForm.Get("git_root"))
	resp, err := h.clients.Lifecycle.CreateSession(ctx, &lifecyclev1.CreateSessionRequest{Prompt: prompt, GitRoot: gitRoot})
	if err != nil {
		p := grpcerr.From("lifecycle", err)
		if p.Internal() {
			h.failed(w, r, "lifecycle", err)
			return
		}
		why := p.Message
		if len(p.Messages) > 0 {
			why = strings.Join(p.Messages, "; ")
		}
		h.setFlash(w, r, "The quick prompt started nothing: "+why)
		http.Redirect(w, r, Prefix, http.StatusSeeOther)
		return
	}
	http.SetCookie(w, h.cookie(r, QuickGitRootCookieName, url.QueryEscape(gitRoot), 365*24*3600))
	id := resp.GetSession().GetId()
	flash := fmt.Sprintf("Session #%d started.", id)
	if note := h.recordHumanMessage(ctx, id, ProvenanceQuickPrompt, prompt, ""); note != "" {
		flash += " " + note
	}
	h.setFlash(w, r, flash)
	http.Redirect(w, r, fmt.Sprintf("/console/sessions/%d", id), http.StatusSeeOther)
}

// quickGitRoot is the repository the quick prompt used last.
func quickGitRoot(r *http.Request) string {
	if c, err := r.Cookie(QuickGitRootCookieName); err == nil {
		if v, err := url.QueryUnescape(c.Value); err == nil {
			return v
		}
	}
	return ""
}
