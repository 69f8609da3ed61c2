package console

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"
	runnerv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/runner/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

const (
	// FiltersCookieName keeps the dashboard's status and scheduling class
	// filters between visits (the spec's sessions_filters cookie).
	FiltersCookieName = "sessions_filters"
	// DashboardPageSize is how many cards the dashboard shows.
	DashboardPageSize = 50
)

// DefaultStatuses is what the dashboard shows until the human picks
// others: what waits for them (session-lifecycle.md, "What the dashboard
// shows you").
var DefaultStatuses = []string{rules.StatusNeedsInput}

// filters is the dashboard's selection.
type filters struct {
	Statuses        []string
	SchedulingClass string
	Query           string
	// The Advanced disclosure's: an agent root, a genesis, words in the
	// transcript. Like Query they travel in the URL, never the cookie.
	AgentRoot, Genesis, Transcript string
}

// Search says whether f is a search — free text, an agent root, a genesis
// or transcript words — which replaces the category grids with one flat
// result list; statuses and the scheduling class only narrow the grids
// (session-lifecycle.md, "What the dashboard shows you").
func (f filters) Search() bool {
	return f.Query != "" || f.AgentRoot != "" || f.Genesis != "" || f.Transcript != ""
}

// Advanced says whether the Advanced disclosure holds a value (it opens).
func (f filters) Advanced() bool { return f.AgentRoot != "" || f.Genesis != "" || f.Transcript != "" }

// searchFilters reads the search's words from q.
func searchFilters(f *filters, q url.Values) {
	f.Query = q.Get("q")
	f.AgentRoot, f.Genesis, f.Transcript = strings.TrimSpace(q.Get("agent_root")), strings.TrimSpace(q.Get("genesis")), strings.TrimSpace(q.Get("transcript"))
}

// readFilters takes the filters from the form when it was submitted (and
// keeps them in the cookie), from the cookie otherwise, else the default.
// Reset forgets the cookie. Unknown words are dropped, never sent on.
func (h *Handler) readFilters(w http.ResponseWriter, r *http.Request) filters {
	q := r.URL.Query()
	var f filters
	searchFilters(&f, q)
	switch {
	case q.Has("reset"):
		http.SetCookie(w, h.cookie(r, FiltersCookieName, "", -1))
		f = filters{}
	case q.Has("filter"):
		f.Statuses, f.SchedulingClass = knownStatuses(q["status"]), knownClass(q.Get("class"))
		kept := url.Values{"status": f.Statuses, "class": {f.SchedulingClass}}
		http.SetCookie(w, h.cookie(r, FiltersCookieName, kept.Encode(), 365*24*3600))
		return f
	default:
		if c, err := r.Cookie(FiltersCookieName); err == nil {
			if kept, err := url.ParseQuery(c.Value); err == nil {
				f.Statuses, f.SchedulingClass = knownStatuses(kept["status"]), knownClass(kept.Get("class"))
				return f
			}
		}
	}
	f.Statuses = slices.Clone(DefaultStatuses)
	return f
}

func knownStatuses(words []string) []string {
	var out []string
	for _, w := range words {
		if slices.Contains(rules.Statuses(), w) && !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

func knownClass(word string) string {
	if slices.Contains(rules.SchedulingClasses(), word) {
		return word
	}
	return ""
}

// statusCount is one entry of the status summary.
type statusCount struct {
	Status   string
	Count    int64
	Selected bool
}

type dashboardData struct {
	Filters filters
	Summary []statusCount
	Classes []string
	// Cards and Total are a search's flat result list; Groups the grids
	// otherwise (Cards then holds every group's cards, in order).
	Cards     []card
	Total     int64
	Truncated bool
	Groups    []group
	// QuickGitRoot is the repository the quick prompt starts sessions in:
	// the one it used last.
	QuickGitRoot string
	// LiveQuery is the live stream's query for this view, LiveEvent the
	// event it sends.
	LiveQuery, LiveEvent string
}

// group is one of the dashboard's grids: Starred first, then each category
// in position order, then Uncategorized. A starred session sits in Starred
// alone, whatever its category — one card per session — which is what
// "Refresh starred" acts on (session-lifecycle.md, "Manual refresh").
type group struct {
	// GridID is the grid's element id, the spec's names: category_grid_<id>
	// for a category, sessions_grid for Uncategorized, starred_grid.
	GridID string
	Name   string
	// Category is nil for Starred and Uncategorized.
	Category *lifecyclev1.Category
	Cards    []card
	// Total counts the group's sessions in view; Truncated says the grid
	// shows the newest DashboardPageSize of them.
	Total     int64
	Truncated bool
	// RefreshAction is the group's refresh control ("" none): a frozen
	// category has none, as "Refresh all" skips it.
	RefreshAction string
}

// card is one session on the dashboard, with what other contexts know of
// it.
type card struct {
	Session *lifecyclev1.Session
	// LastLine is the newest line of its transcript ("" when none or when
	// the runner could not say).
	LastLine string
	// Pending is how many of its queued messages wait for delivery;
	// PendingKnown is false when the queue could not say.
	Pending      int32
	PendingKnown bool
	// Refreshable offers the per-card refresh: never on a running session,
	// which already streams into its card (session-lifecycle.md, "Manual
	// refresh").
	Refreshable bool
	// Trashable offers Trash: the status allows an archive.
	Trashable bool
	// Category is the name of the session's category ("" when it has
	// none); Categories are the ones it may be moved to, in order.
	Category   string
	Categories []*lifecyclev1.Category
	// CSRF is the sign-in's token for the card's forms.
	CSRF string
}

func (h *Handler) dashboard(w http.ResponseWriter, r *http.Request, cookie string, in signIn) {
	f := h.readFilters(w, r)
	ctx, cancel := context.WithTimeout(r.Context(), callTimeout)
	defer cancel()
	data, err := h.dashboardView(ctx, f, in)
	if err != nil {
		h.failed(w, r, "lifecycle", err)
		return
	}
	data.QuickGitRoot = quickGitRoot(r)
	h.render(w, r, http.StatusOK, "dashboard", h.signedInPage(ctx, w, r, in, "Sessions", data))
}

// dashboardView reads what the dashboard shows for f: the page of cards
// and the status summary from lifecycle, at once, then each card's last
// transcript line and queue count in one call to the runner and one to the
// queue for the whole page (never one per card). Only lifecycle's failure
// is the view's: without the runner or the queue, the cards say less.
func (h *Handler) dashboardView(ctx context.Context, f filters, in signIn) (dashboardData, error) {
	data := dashboardData{Filters: f, Classes: rules.SchedulingClasses(), LiveQuery: liveQuery(f), LiveEvent: LiveEvent}
	statuses := rules.Statuses()
	counts := make([]int64, len(statuses))
	var (
		page *lifecyclev1.ListSessionsResponse
		cats []*lifecyclev1.Category
	)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		// Without them the cards name no category and offer no move.
		got, err := h.clients.Lifecycle.ListCategories(gctx, &lifecyclev1.ListCategoriesRequest{})
		if err != nil {
			h.logger.WarnContext(ctx, "console could not read the categories", "error", err)
			return nil
		}
		cats = got.GetCategories()
		return nil
	})
	if f.Search() {
		g.Go(func() error {
			var err error
			page, err = h.clients.Lifecycle.ListSessions(gctx, &lifecyclev1.ListSessionsRequest{
				Status: f.Statuses, Q: f.Query, SchedulingClass: f.SchedulingClass, PerPage: DashboardPageSize,
				AgentRoot: f.AgentRoot, Genesis: f.Genesis, Transcript: f.Transcript,
			})
			return err
		})
	}
	// The summary above the search box: how many sessions each status
	// holds, whatever the filters.
	for i, s := range statuses {
		g.Go(func() error {
			n, err := h.clients.Lifecycle.ListSessions(gctx, &lifecyclev1.ListSessionsRequest{Status: []string{s}, PerPage: 1})
			counts[i] = n.GetPagination().GetTotalCount()
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return dashboardData{}, err
	}
	for i, s := range statuses {
		data.Summary = append(data.Summary, statusCount{Status: s, Count: counts[i], Selected: slices.Contains(f.Statuses, s)})
	}
	if f.Search() {
		data.Total = page.GetPagination().GetTotalCount()
		data.Truncated = data.Total > int64(len(page.GetSessions()))
		data.Cards = h.cards(ctx, page.GetSessions(), in)
	} else {
		groups, err := h.grids(ctx, f, cats, in)
		if err != nil {
			return dashboardData{}, err
		}
		data.Groups = groups
		for _, gr := range groups {
			data.Total += gr.Total
		}
	}
	names := make(map[int64]string, len(cats))
	for _, c := range cats {
		names[c.GetId()] = c.GetName()
	}
	name := func(cs []card) {
		for i := range cs {
			cs[i].Categories = cats
			if s := cs[i].Session; s.CategoryId != nil {
				cs[i].Category = names[s.GetCategoryId()]
			}
		}
	}
	name(data.Cards)
	for i := range data.Groups {
		name(data.Groups[i].Cards)
	}
	return data, nil
}

// grids reads the groups of the grid view: one list call per group, at
// once (the statuses and the scheduling class narrow each), then the
// cards of them all completed in one runner and one queue call. Empty
// groups are left out.
func (h *Handler) grids(ctx context.Context, f filters, cats []*lifecyclev1.Category, in signIn) ([]group, error) {
	starred, unstarred, none := true, false, int64(0)
	groups := []group{{GridID: "starred_grid", Name: "Starred", RefreshAction: "/console/refresh-starred"}}
	scopes := []*lifecyclev1.ListSessionsRequest{{Starred: &starred}}
	for _, c := range cats {
		gr := group{GridID: fmt.Sprintf("category_grid_%d", c.GetId()), Name: c.GetName(), Category: c}
		if !c.GetFrozen() {
			gr.RefreshAction = fmt.Sprintf("/console/categories/%d/refresh", c.GetId())
		}
		groups = append(groups, gr)
		scopes = append(scopes, &lifecyclev1.ListSessionsRequest{CategoryId: &c.Id, Starred: &unstarred})
	}
	groups = append(groups, group{GridID: "sessions_grid", Name: "Uncategorized"})
	scopes = append(scopes, &lifecyclev1.ListSessionsRequest{CategoryId: &none, Starred: &unstarred})
	pages := make([]*lifecyclev1.ListSessionsResponse, len(scopes))
	g, gctx := errgroup.WithContext(ctx)
	for i, scope := range scopes {
		scope.Status, scope.SchedulingClass, scope.PerPage = f.Statuses, f.SchedulingClass, DashboardPageSize
		g.Go(func() error {
			var err error
			pages[i], err = h.clients.Lifecycle.ListSessions(gctx, scope)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var all []*lifecyclev1.Session
	for _, p := range pages {
		all = append(all, p.GetSessions()...)
	}
	cards := h.cards(ctx, all, in)
	out := groups[:0]
	for i, gr := range groups {
		n := len(pages[i].GetSessions())
		gr.Cards, cards = cards[:n:n], cards[n:]
		gr.Total = pages[i].GetPagination().GetTotalCount()
		gr.Truncated = gr.Total > int64(n)
		if n > 0 {
			out = append(out, gr)
		}
	}
	return out, nil
}

// cards completes sessions with their last transcript line and queue
// count, two batched calls whatever the number of cards.
func (h *Handler) cards(ctx context.Context, sessions []*lifecyclev1.Session, in signIn) []card {
	cards := make([]card, len(sessions))
	ids := make([]int64, len(sessions))
	for i, s := range sessions {
		ids[i] = s.GetId()
		cards[i] = card{Session: s, Refreshable: s.GetStatus() != rules.StatusRunning,
			Trashable: allowedActions(s.GetStatus()).Archive, CSRF: in.csrf}
	}
	if len(ids) == 0 {
		return cards
	}
	var (
		lines   map[int64]string
		pending map[int64]int32
		queueOK bool
	)
	var g errgroup.Group
	g.Go(func() error {
		got, err := h.clients.Runner.GetLatestTranscriptLines(ctx, &runnerv1.GetLatestTranscriptLinesRequest{SessionIds: ids})
		if err != nil {
			h.logger.WarnContext(ctx, "console could not read the cards' last transcript lines", "error", err)
			return nil
		}
		lines = make(map[int64]string, len(got.GetLines()))
		for _, l := range got.GetLines() {
			lines[l.GetSessionId()] = l.GetText()
		}
		return nil
	})
	g.Go(func() error {
		got, err := h.clients.Queue.CountPendingMessages(ctx, &queuev1.CountPendingMessagesRequest{SessionIds: ids})
		if err != nil {
			h.logger.WarnContext(ctx, "console could not read the cards' queue counts", "error", err)
			return nil
		}
		pending, queueOK = got.GetPending(), true
		return nil
	})
	_ = g.Wait()
	for i := range cards {
		cards[i].LastLine = lines[ids[i]]
		cards[i].Pending, cards[i].PendingKnown = pending[ids[i]], queueOK
	}
	return cards
}

// sessionTemplate is the session page's template, or the drawer's (its
// content alone) when the dashboard's drawer asks.
func sessionTemplate(r *http.Request) string {
	if strings.HasSuffix(r.URL.Path, "/drawer") {
		return "drawer"
	}
	return "session"
}

// viewFilters reads the view a live dashboard shows from its URL (LiveQuery
// wrote it), words unknown to lifecycle dropped; unlike readFilters it keeps
// nothing in the cookie.
func viewFilters(q url.Values) filters {
	f := filters{Statuses: knownStatuses(q["status"]), SchedulingClass: knownClass(q.Get("class"))}
	searchFilters(&f, q)
	return f
}

// liveQuery is the live stream's query for the view f (viewFilters reads
// it back): each dashboard streams the view it shows, whatever another tab
// keeps in the cookie.
func liveQuery(f filters) string {
	v := url.Values{"status": f.Statuses, "class": {f.SchedulingClass}, "q": {f.Query}}
	for k, w := range map[string]string{"agent_root": f.AgentRoot, "genesis": f.Genesis, "transcript": f.Transcript} {
		if w != "" {
			v.Set(k, w)
		}
	}
	return v.Encode()
}
