package console_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/zimmerhq/zimmer/gateway/internal/console"
	"github.com/zimmerhq/zimmer/gateway/internal/lineagefake"
	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"
	runnerv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/runner/v1"
	"github.com/zimmerhq/zimmer/services/platform/slogx"
)

// GetLatestTranscriptLines answers with the fake transcript's last line.
func (r fakeRunner) GetLatestTranscriptLines(_ context.Context, in *runnerv1.GetLatestTranscriptLinesRequest, _ ...grpc.CallOption) (*runnerv1.GetLatestTranscriptLinesResponse, error) {
	resp := &runnerv1.GetLatestTranscriptLinesResponse{}
	if n := len(r.f.transcript); n > 0 {
		for _, id := range in.GetSessionIds() {
			l := proto.Clone(r.f.transcript[n-1]).(*runnerv1.TranscriptLine)
			l.SessionId = id
			resp.Lines = append(resp.Lines, l)
		}
	}
	return resp, nil
}

// CountPendingMessages counts what the fake queue took as pending.
func (q fakeQueue) CountPendingMessages(_ context.Context, in *queuev1.CountPendingMessagesRequest, _ ...grpc.CallOption) (*queuev1.CountPendingMessagesResponse, error) {
	q.f.mu.Lock()
	defer q.f.mu.Unlock()
	resp := &queuev1.CountPendingMessagesResponse{Pending: map[int64]int32{}}
	for _, id := range in.GetSessionIds() {
		if n := len(q.f.enqueued); n > 0 {
			resp.Pending[id] = int32(n)
		}
	}
	return resp, nil
}

// liveFakes is what the live dashboard's fakes hold beside fakes: the
// watch the console opened, the sessions lifecycle lists, what was asked.
type liveFakes struct {
	mu       sync.Mutex
	sessions []*lifecyclev1.Session
	watches  []*lifecyclev1.WatchSessionChangesRequest
	// changes feeds the open watch; start is its first position.
	changes   chan *lifecyclev1.WatchSessionChangesResponse
	start     int64
	refreshes []*lifecyclev1.RefreshSessionRequest
	restored  []string
	archived  []*lifecyclev1.ArchiveSessionRequest
	lineCalls [][]int64
	// frozen are the frozen categories lifecycle's list leaves out when
	// asked to skip them.
	frozen map[int64]bool
	// categories are what ListCategories answers (none: fakeLifecycle's);
	// lists the list requests with a search in them.
	categories []*lifecyclev1.Category
	searches   []*lifecyclev1.ListSessionsRequest
}

type liveLifecycle struct {
	fakeLifecycle
	l *liveFakes
}

func (l liveLifecycle) ListSessions(_ context.Context, in *lifecyclev1.ListSessionsRequest, _ ...grpc.CallOption) (*lifecyclev1.ListSessionsResponse, error) {
	l.l.mu.Lock()
	defer l.l.mu.Unlock()
	if in.GetQ() != "" || in.GetAgentRoot() != "" || in.GetGenesis() != "" || in.GetTranscript() != "" {
		l.l.searches = append(l.l.searches, proto.CloneOf(in))
	}
	var out []*lifecyclev1.Session
	for _, s := range l.l.sessions {
		switch {
		case in.Starred != nil && s.GetStarred() != in.GetStarred():
			continue
		case in.CategoryId != nil && s.GetCategoryId() != in.GetCategoryId():
			continue
		case in.GetAgentRoot() != "" && s.GetAgentRoot() != in.GetAgentRoot():
			continue
		case in.GetSkipFrozenCategories() && s.CategoryId != nil && l.l.frozen[s.GetCategoryId()]:
			continue
		}
		if len(in.GetStatus()) == 0 || contains(in.GetStatus(), s.GetStatus()) {
			out = append(out, proto.Clone(s).(*lifecyclev1.Session))
		}
	}
	total := int64(len(out))
	if in.GetPerPage() > 0 && len(out) > int(in.GetPerPage()) {
		out = out[:in.GetPerPage()]
	}
	return &lifecyclev1.ListSessionsResponse{Sessions: out, Pagination: &lifecyclev1.Pagination{TotalCount: total, TotalPages: 1}}, nil
}

func (l liveLifecycle) ListCategories(ctx context.Context, in *lifecyclev1.ListCategoriesRequest, opts ...grpc.CallOption) (*lifecyclev1.ListCategoriesResponse, error) {
	l.l.mu.Lock()
	defer l.l.mu.Unlock()
	return &lifecyclev1.ListCategoriesResponse{Categories: l.l.categories}, nil
}

func contains(words []string, w string) bool {
	for _, x := range words {
		if x == w {
			return true
		}
	}
	return false
}

func (l liveLifecycle) setStatus(id int64, st string) {
	l.l.mu.Lock()
	defer l.l.mu.Unlock()
	for _, s := range l.l.sessions {
		if s.GetId() == id {
			s.Status = st
		}
	}
}

func (l liveLifecycle) WatchSessionChanges(ctx context.Context, in *lifecyclev1.WatchSessionChangesRequest, _ ...grpc.CallOption) (grpc.ServerStreamingClient[lifecyclev1.WatchSessionChangesResponse], error) {
	l.l.mu.Lock()
	defer l.l.mu.Unlock()
	l.l.watches = append(l.l.watches, in)
	start := l.l.start
	if in.AfterEventId != nil {
		start = in.GetAfterEventId()
	}
	return &fakeWatch{ctx: ctx, first: &lifecyclev1.WatchSessionChangesResponse{Position: start}, changes: l.l.changes}, nil
}

func (l liveLifecycle) RefreshSession(_ context.Context, in *lifecyclev1.RefreshSessionRequest, _ ...grpc.CallOption) (*lifecyclev1.RefreshSessionResponse, error) {
	l.l.mu.Lock()
	defer l.l.mu.Unlock()
	l.l.refreshes = append(l.l.refreshes, in)
	return &lifecyclev1.RefreshSessionResponse{Refreshed: in.GetBulk(), Message: "Session " + in.GetSessionId() + " <b>refreshed</b>."}, nil
}

func (l liveLifecycle) UnarchiveSession(_ context.Context, in *lifecyclev1.UnarchiveSessionRequest, _ ...grpc.CallOption) (*lifecyclev1.UnarchiveSessionResponse, error) {
	l.l.mu.Lock()
	l.l.restored = append(l.l.restored, in.GetSessionId())
	l.l.mu.Unlock()
	l.setStatus(7, "needs_input")
	return &lifecyclev1.UnarchiveSessionResponse{Session: &lifecyclev1.Session{Id: 7, Status: "needs_input"}}, nil
}

// ArchiveSession refuses as the archive guard does, unless forced.
func (l liveLifecycle) ArchiveSession(_ context.Context, in *lifecyclev1.ArchiveSessionRequest, _ ...grpc.CallOption) (*lifecyclev1.ArchiveSessionResponse, error) {
	l.l.mu.Lock()
	l.l.archived = append(l.l.archived, in)
	l.l.mu.Unlock()
	if in.GetSessionId() == "9" && !in.GetForce() {
		return nil, status.Error(codes.FailedPrecondition, "Cannot archive session 9: 1 queued message has not been delivered.")
	}
	l.setStatus(7, "archived")
	return &lifecyclev1.ArchiveSessionResponse{Session: &lifecyclev1.Session{Id: 7, Status: "archived"}}, nil
}

type liveRunner struct {
	fakeRunner
	l *liveFakes
}

func (r liveRunner) GetLatestTranscriptLines(ctx context.Context, in *runnerv1.GetLatestTranscriptLinesRequest, opts ...grpc.CallOption) (*runnerv1.GetLatestTranscriptLinesResponse, error) {
	r.l.mu.Lock()
	r.l.lineCalls = append(r.l.lineCalls, in.GetSessionIds())
	r.l.mu.Unlock()
	return r.fakeRunner.GetLatestTranscriptLines(ctx, in, opts...)
}

// fakeWatch is lifecycle's stream as the console reads it.
type fakeWatch struct {
	grpc.ClientStream
	ctx     context.Context
	first   *lifecyclev1.WatchSessionChangesResponse
	changes chan *lifecyclev1.WatchSessionChangesResponse
}

func (w *fakeWatch) Recv() (*lifecyclev1.WatchSessionChangesResponse, error) {
	if w.first != nil {
		first := w.first
		w.first = nil
		return first, nil
	}
	select {
	case c := <-w.changes:
		return c, nil
	case <-w.ctx.Done():
		return nil, status.FromContextError(w.ctx.Err()).Err()
	}
}

type liveBundle struct {
	testBundle
	live      *liveFakes
	lifecycle liveLifecycle
}

func setupLive(t *testing.T) liveBundle {
	t.Helper()
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	require.NoError(t, err)
	f := &fakes{
		roster: []string{adminUser},
		session: &lifecyclev1.Session{Id: 7, Status: "needs_input", Title: "The seventh", Prompt: hostile,
			AgentRoot: "root", Genesis: "api", UpdatedAt: timestamppb.Now()},
		transcript: []*runnerv1.TranscriptLine{{Id: 1, Kind: "assistant", Text: "first"}, {Id: 2, Kind: "assistant", Text: hostile}},
		page:       newPageFakes(),
	}
	lf := &liveFakes{
		sessions: []*lifecyclev1.Session{
			{Id: 9, Status: "needs_input", Title: "The ninth", UpdatedAt: timestamppb.Now()},
			{Id: 8, Status: "running", Title: "The eighth", UpdatedAt: timestamppb.Now()},
			{Id: 7, Status: "needs_input", Title: "The seventh", UpdatedAt: timestamppb.Now()},
		},
		changes: make(chan *lifecyclev1.WatchSessionChangesResponse),
		start:   40,
	}
	lc := liveLifecycle{fakeLifecycle: fakeLifecycle{f: f}, l: lf}
	now, mu := time.Now(), &sync.Mutex{}
	h, err := console.New(console.Clients{
		Lifecycle: lc, Queue: fakeQueue{f: f}, Runner: liveRunner{fakeRunner: fakeRunner{f: f}, l: lf}, Provenance: fakeProvenance{f: f},
		Triggers: fakeTriggers{f: f}, Notifications: fakeNotifications{f: f}, SignIns: lineagefake.NewSignIns().Client(),
	}, console.Options{AdminUser: adminUser, PasswordHash: string(hash), Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now }},
		slogx.Discard())
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	t.Cleanup(h.StopLive)
	return liveBundle{testBundle: testBundle{fakes: f, srv: srv, now: &now, mu: mu}, live: lf, lifecycle: lc}
}

// sseEvent is one server-sent event as a browser's EventSource reads it.
type sseEvent struct{ id, name, data string }

// openLive opens the dashboard's stream with lastEventID ("" for none)
// and answers its status, its headers and its events; the body is closed
// when the test ends.
func (b liveBundle) openLive(t *testing.T, c *http.Client, query, lastEventID string) (int, http.Header, <-chan sseEvent) {
	t.Helper()
	return b.openStream(t, c, "/console/live?"+query, lastEventID)
}

// openStream opens a live page's stream at path (openLive).
func (b liveBundle) openStream(t *testing.T, c *http.Client, path, lastEventID string) (int, http.Header, <-chan sseEvent) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.srv.URL+path, nil)
	require.NoError(t, err)
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := c.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp.StatusCode, resp.Header, readSSE(resp.Body)
}

func readSSE(body io.Reader) <-chan sseEvent {
	events := make(chan sseEvent, 16)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var e sseEvent
		var data []string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if e.name != "" || len(data) > 0 {
					e.data = strings.Join(data, "\n")
					events <- e
				}
				e, data = sseEvent{}, nil
			case strings.HasPrefix(line, "id: "):
				e.id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "event: "):
				e.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				data = append(data, strings.TrimPrefix(line, "data: "))
			}
		}
	}()
	return events
}

func next(t *testing.T, events <-chan sseEvent) sseEvent {
	t.Helper()
	select {
	case e, ok := <-events:
		require.True(t, ok, "the stream ended")
		return e
	case <-time.After(5 * time.Second):
		t.Fatal("no event within 5s")
		return sseEvent{}
	}
}

func TestTheDashboardUpdatesLiveFromLifecyclesChanges(t *testing.T) {
	t.Parallel()
	b := setupLive(t)
	c := b.signedIn(t)

	// The page connects to the stream of its own view.
	page := b.get(t, c, "/console/")
	require.Equal(t, http.StatusOK, page.code, page.body)
	require.Contains(t, page.body, `sse-connect="/console/live?class=&amp;q=&amp;status=needs_input"`)
	require.Contains(t, page.body, `src="/console/static/htmx-ext-sse-2.2.4.min.js"`)

	code, header, events := b.openLive(t, c, "status=needs_input&q=&class=", "")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "text/event-stream", header.Get("Content-Type"))
	// Without a cursor the view is sent at once, under the watch's start.
	e := next(t, events)
	require.Equal(t, console.LiveEvent, e.name)
	require.Equal(t, "40", e.id)
	require.Contains(t, e.data, `id="session-7"`)
	require.Contains(t, e.data, `id="session-9"`)
	require.NotContains(t, e.data, `id="session-8"`, "running is not in the view")
	require.Contains(t, e.data, `<div id="cards" hx-swap-oob="true">`)
	require.Contains(t, e.data, `<ul id="summary" class="summary"`)
	b.live.mu.Lock()
	require.Len(t, b.live.watches, 1)
	require.Nil(t, b.live.watches[0].AfterEventId, "no cursor: from now")
	b.live.mu.Unlock()

	// Session 7 starts running: its card leaves the view; session 8 comes
	// to rest and its card comes in.
	b.lifecycle.setStatus(7, "running")
	b.lifecycle.setStatus(8, "needs_input")
	b.live.changes <- &lifecyclev1.WatchSessionChangesResponse{Position: 41, Change: &lifecyclev1.SessionChange{EventId: 41, SessionId: 7, From: "needs_input", To: "running"}}
	b.live.changes <- &lifecyclev1.WatchSessionChangesResponse{Position: 42, Change: &lifecyclev1.SessionChange{EventId: 42, SessionId: 8, From: "running", To: "needs_input"}}
	e = next(t, events)
	require.Equal(t, "42", e.id, "the changes that come together are one render, under the last one's id")
	require.NotContains(t, e.data, `id="session-7"`)
	require.Contains(t, e.data, `id="session-8"`)
}

func TestALiveDashboardResumesFromItsLastEventID(t *testing.T) {
	t.Parallel()
	b := setupLive(t)
	c := b.signedIn(t)

	code, _, events := b.openLive(t, c, "status=needs_input", "41")
	require.Equal(t, http.StatusOK, code)
	b.live.mu.Lock()
	require.Len(t, b.live.watches, 1)
	require.Equal(t, int64(41), b.live.watches[0].GetAfterEventId(), "Last-Event-ID is the cursor")
	b.live.mu.Unlock()
	// Nothing missed, nothing sent; the missed change is.
	b.lifecycle.setStatus(9, "archived")
	b.live.changes <- &lifecyclev1.WatchSessionChangesResponse{Position: 43, Change: &lifecyclev1.SessionChange{EventId: 43, SessionId: 9, To: "archived"}}
	e := next(t, events)
	require.Equal(t, "43", e.id)
	require.NotContains(t, e.data, `id="session-9"`)

	// ?after is the cursor of a stream the page opens anew.
	_, _, _ = b.openLive(t, c, "after=40", "")
	require.Eventually(t, func() bool {
		b.live.mu.Lock()
		defer b.live.mu.Unlock()
		return len(b.live.watches) == 2 && b.live.watches[1].GetAfterEventId() == 40
	}, 5*time.Second, 10*time.Millisecond)

	a := b.get(t, c, "/console/live?after=-1")
	require.Equal(t, http.StatusBadRequest, a.code)
	require.Contains(t, a.body, "is not an event id")
}

func TestASignedOutLiveDashboardIsToldSo(t *testing.T) {
	t.Parallel()
	b := setupLive(t)
	a := b.get(t, b.browser(t), "/console/live")
	require.Equal(t, http.StatusOK, a.code, "an EventSource must read it")
	require.Equal(t, "text/event-stream", a.header.Get("Content-Type"))
	require.Contains(t, a.body, "retry: 60000")
	require.Contains(t, a.body, `id="live-status"`)
	require.Contains(t, a.body, "You are signed out")
	b.live.mu.Lock()
	defer b.live.mu.Unlock()
	require.Empty(t, b.live.watches, "nothing is watched for nobody")
}

func TestCardsShowTheLastLineAndQueueCountFromOneCallEach(t *testing.T) {
	t.Parallel()
	b := setupLive(t)
	c := b.signedIn(t)
	b.fakes.mu.Lock()
	b.fakes.enqueued = map[string]bool{"a": true, "b": true}
	b.fakes.mu.Unlock()

	a := b.get(t, c, "/console/?filter=1")
	require.Equal(t, http.StatusOK, a.code, a.body)
	require.Contains(t, a.body, `&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;`, "the last line, escaped")
	require.NotContains(t, a.body, "<script>alert")
	require.Equal(t, 3, strings.Count(a.body, "2 queued"))
	b.live.mu.Lock()
	defer b.live.mu.Unlock()
	require.Equal(t, [][]int64{{9, 8, 7}}, b.live.lineCalls, "one call for every card")
}

func TestThePerCardRefreshIsHiddenWhileRunning(t *testing.T) {
	t.Parallel()
	b := setupLive(t)
	c := b.signedIn(t)
	a := b.get(t, c, "/console/?filter=1")
	require.Equal(t, http.StatusOK, a.code, a.body)
	require.Contains(t, a.body, `action="/console/sessions/9/refresh"`)
	require.Contains(t, a.body, `action="/console/sessions/7/refresh"`)
	require.NotContains(t, a.body, `action="/console/sessions/8/refresh"`, "8 is running")
	require.Contains(t, a.body, `action="/console/refresh-all"`)

	token := csrfField.FindStringSubmatch(a.body)[1]
	a = b.htmxPost(t, c, "/console/sessions/9/refresh", url.Values{"csrf": {token}})
	require.Equal(t, http.StatusOK, a.code, a.body)
	require.Contains(t, a.body, `id="toast"`)
	require.Contains(t, a.body, "Session 9 &lt;b&gt;refreshed&lt;/b&gt;.", "lifecycle's words, escaped")

	a = b.htmxPost(t, c, "/console/refresh-all", url.Values{"csrf": {token}})
	require.Equal(t, http.StatusOK, a.code, a.body)
	require.Contains(t, a.body, "Refreshed all 3 sessions not archived: 3 got the continue nudge")
	b.live.mu.Lock()
	defer b.live.mu.Unlock()
	var bulk []string
	for _, r := range b.live.refreshes[1:] {
		require.True(t, r.GetBulk(), "Refresh all is a bulk refresh")
		bulk = append(bulk, r.GetSessionId())
	}
	require.ElementsMatch(t, []string{"9", "8", "7"}, bulk)
}

// "Refresh all" leaves out the sessions in frozen categories, and says how
// many; "Refresh starred" takes the starred ones, frozen or not
// (session-lifecycle.md, "Manual refresh").
func TestRefreshAllSkipsFrozenCategoriesAndRefreshStarredDoesNot(t *testing.T) {
	t.Parallel()
	b := setupLive(t)
	parked := int64(3)
	b.live.mu.Lock()
	b.live.frozen = map[int64]bool{parked: true}
	b.live.sessions[0].CategoryId, b.live.sessions[0].Starred = &parked, true // #9
	b.live.mu.Unlock()
	c := b.signedIn(t)
	a := b.get(t, c, "/console/?filter=1")
	require.Contains(t, a.body, "★ starred")
	require.Contains(t, a.body, `action="/console/refresh-starred"`)
	require.Contains(t, a.body, `aria-label="Unstar session #9"`)
	token := csrfField.FindStringSubmatch(a.body)[1]

	refreshed := func() []string {
		b.live.mu.Lock()
		defer b.live.mu.Unlock()
		var ids []string
		for _, r := range b.live.refreshes {
			ids = append(ids, r.GetSessionId())
		}
		b.live.refreshes = nil
		return ids
	}
	a = b.htmxPost(t, c, "/console/refresh-all", url.Values{"csrf": {token}})
	require.Equal(t, http.StatusOK, a.code, a.body)
	require.Contains(t, a.body, "Refreshed all 2 sessions not archived")
	require.Contains(t, a.body, "Left out 1 in frozen categories.")
	require.ElementsMatch(t, []string{"8", "7"}, refreshed())

	a = b.htmxPost(t, c, "/console/refresh-starred", url.Values{"csrf": {token}})
	require.Equal(t, http.StatusOK, a.code, a.body)
	require.Contains(t, a.body, "Refreshed all 1 starred sessions not archived")
	require.Equal(t, []string{"9"}, refreshed())

	a = b.htmxPost(t, c, "/console/refresh-starred", url.Values{})
	require.Equal(t, http.StatusForbidden, a.code, "CSRF as every form")
}

func (b liveBundle) htmxPost(t *testing.T, c *http.Client, path string, form url.Values) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.srv.URL+path, strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("HX-Request", "true")
	return do(t, c, req)
}

func TestTrashFromACardOffersUndoForTenSeconds(t *testing.T) {
	t.Parallel()
	b := setupLive(t)
	c := b.signedIn(t)
	token := b.csrf(t, c, "/console/")

	a := b.htmxPost(t, c, "/console/sessions/7/trash", url.Values{"csrf": {token}})
	require.Equal(t, http.StatusOK, a.code, a.body)
	require.Contains(t, a.body, `<li id="session-7" hx-swap-oob="delete"></li>`, "the card goes")
	require.Contains(t, a.body, console.TrashedToast)
	require.Contains(t, a.body, `hx-post="/console/sessions/7/undo-trash"`)
	require.Contains(t, a.body, `class="toast shown"`, "the toast that hides after ten seconds (dashboard css)")

	a = b.htmxPost(t, c, "/console/sessions/7/undo-trash", url.Values{"csrf": {token}})
	require.Equal(t, http.StatusOK, a.code, a.body)
	require.Contains(t, a.body, "Session #7 restored.")
	require.Contains(t, a.body, `<div id="cards" hx-swap-oob="true">`)
	require.Regexp(t, `id="session-9"[\s\S]*id="session-7"`, a.body, "back in its place, newest first")

	// The guard's refusal: said in the toast, with "Archive anyway".
	a = b.htmxPost(t, c, "/console/sessions/9/trash", url.Values{"csrf": {token}})
	require.Equal(t, http.StatusOK, a.code, a.body)
	require.Contains(t, a.body, "Cannot archive session 9")
	require.NotContains(t, a.body, `hx-swap-oob="delete"`, "a refused card stays")
	require.Contains(t, a.body, `name="force" value="1"`)

	// Without htmx: back to the dashboard, the words as its flash.
	a = b.post(t, c, "/console/sessions/7/trash", url.Values{"csrf": {token}})
	require.Equal(t, http.StatusSeeOther, a.code, a.body)
	require.Equal(t, "/console/", a.header.Get("Location"))
	require.Contains(t, b.get(t, c, "/console/").body, console.TrashedToast)

	// A card's action is a form like any other: no token, no trash.
	a = b.htmxPost(t, c, "/console/sessions/7/trash", url.Values{})
	require.Equal(t, http.StatusForbidden, a.code)
	b.live.mu.Lock()
	defer b.live.mu.Unlock()
	require.Len(t, b.live.archived, 3)
	require.Equal(t, []string{"7"}, b.live.restored)
}

func TestTheQuickPromptStartsASessionAndRecordsIt(t *testing.T) {
	t.Parallel()
	b := setupLive(t)
	c := b.signedIn(t)
	token := b.csrf(t, c, "/console/")
	a := b.post(t, c, "/console/quick-prompt", url.Values{"csrf": {token}, "prompt": {hostile}, "git_root": {"/srv/repo x"}})
	require.Equal(t, http.StatusSeeOther, a.code, a.body)
	require.Equal(t, "/console/sessions/8", a.header.Get("Location"))
	b.fakes.mu.Lock()
	require.Len(t, b.fakes.creates, 1)
	require.Equal(t, hostile, b.fakes.creates[0].GetPrompt())
	require.Equal(t, "/srv/repo x", b.fakes.creates[0].GetGitRoot())
	require.Len(t, b.fakes.recorded, 1)
	require.Equal(t, console.ProvenanceQuickPrompt, b.fakes.recorded[0].GetProvenance())
	require.Equal(t, hostile, b.fakes.recorded[0].GetContent())
	b.fakes.mu.Unlock()
	// The repository is offered again.
	require.Contains(t, b.get(t, c, "/console/").body, `value="/srv/repo x"`)

	// A refusal records nothing and says why.
	a = b.post(t, c, "/console/quick-prompt", url.Values{"csrf": {token}, "prompt": {"x"}})
	require.Equal(t, http.StatusSeeOther, a.code, a.body)
	require.Contains(t, b.get(t, c, "/console/").body, "The quick prompt started nothing: git_root: required")
	b.fakes.mu.Lock()
	defer b.fakes.mu.Unlock()
	require.Len(t, b.fakes.recorded, 1)
}

func TestTheDrawerIsTheSessionPagesContent(t *testing.T) {
	t.Parallel()
	b := setupLive(t)
	c := b.signedIn(t)
	page := b.get(t, c, "/console/")
	require.Contains(t, page.body, `href="/console/sessions/7" data-drawer="/console/sessions/7/drawer"`,
		"the card's link is the full page; the drawer's URL is beside it")
	require.Contains(t, page.body, `<dialog id="drawer"`)
	require.Contains(t, page.body, `src="/console/static/dashboard-2.js"`)

	drawer := b.get(t, c, "/console/sessions/7/drawer")
	require.Equal(t, http.StatusOK, drawer.code, drawer.body)
	require.NotContains(t, drawer.body, "<html", "no layout")
	require.Contains(t, drawer.body, `<h1 class="title">The seventh</h1>`)
	full := b.get(t, c, "/console/sessions/7")
	require.Contains(t, full.body, "<html")
	require.Contains(t, full.body, `<h1 class="title">The seventh</h1>`)
	for _, static := range []string{"dashboard-2.js", "dashboard-2.css", "htmx-ext-sse-2.2.4.min.js", "htmx-ext-sse-LICENSE"} {
		require.Equal(t, http.StatusOK, b.get(t, c, "/console/static/"+static).code, static)
	}
	require.Equal(t, http.StatusSeeOther, b.get(t, b.browser(t), "/console/sessions/7/drawer").code, "signed out")
}

// TestTheSessionPagesHierarchyUpdatesLive: the session page's hierarchy
// (and human messages) come again from lineage when a session changes
// state, over the dashboard's stream: a child spawned appears, a node's
// new status shows even before lineage has recorded it, and a change that
// alters nothing the page shows sends nothing.
func TestTheSessionPagesHierarchyUpdatesLive(t *testing.T) {
	t.Parallel()
	b := setupLive(t)
	c := b.signedIn(t)

	page := b.get(t, c, "/console/sessions/7")
	require.Equal(t, http.StatusOK, page.code, page.body)
	require.Contains(t, page.body, `sse-connect="/console/sessions/7/live" sse-swap="session"`)
	require.Contains(t, page.body, `<section id="hierarchy" aria-labelledby="hierarchy-heading" hx-swap-oob="true">`)
	require.Contains(t, page.body, `<section id="human" aria-labelledby="human-heading" hx-swap-oob="true">`)

	code, header, events := b.openStream(t, c, "/console/sessions/7/live", "")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "text/event-stream", header.Get("Content-Type"))
	e := next(t, events)
	require.Equal(t, console.SessionLiveEvent, e.name)
	require.Equal(t, "40", e.id, "without a cursor, at once")
	require.Contains(t, e.data, `<section id="hierarchy"`)
	require.Contains(t, e.data, `<section id="human"`)
	require.Contains(t, e.data, "#9 · waiting")
	require.NotContains(t, e.data, "A new child")

	// A child of this session is spawned and starts: lineage has it.
	b.fakes.mu.Lock()
	b.fakes.page.hierarchy.Nodes = append(b.fakes.page.hierarchy.Nodes,
		&lineagev1.HierarchyNode{Id: 12, Label: "A new child", AgentRoot: "zimmer", Status: "waiting", Depth: 2, Genesis: "mcp", SchedulingClass: "priority"})
	b.fakes.mu.Unlock()
	b.live.changes <- &lifecyclev1.WatchSessionChangesResponse{Position: 41, Change: &lifecyclev1.SessionChange{EventId: 41, SessionId: 12, From: "waiting", To: "running"}}
	e = next(t, events)
	require.Equal(t, "41", e.id)
	require.Contains(t, e.data, "A new child")
	require.Contains(t, e.data, "#12 · running", "the stream's status, newer than lineage's record")

	// A change of a session outside the hierarchy shows nothing new: no
	// event. The next that does is sent under its own id.
	b.live.changes <- &lifecyclev1.WatchSessionChangesResponse{Position: 42, Change: &lifecyclev1.SessionChange{EventId: 42, SessionId: 99, From: "running", To: "needs_input"}}
	time.Sleep(300 * time.Millisecond) // past the coalescing window
	b.live.changes <- &lifecyclev1.WatchSessionChangesResponse{Position: 43, Change: &lifecyclev1.SessionChange{EventId: 43, SessionId: 9, From: "waiting", To: "failed"}}
	e = next(t, events)
	require.Equal(t, "43", e.id)
	require.Contains(t, e.data, "#9 · failed")
	require.Contains(t, e.data, "#12 · running")

	// Signed out, the stream says so in the session page's own notice.
	a := b.get(t, b.browser(t), "/console/sessions/7/live")
	require.Equal(t, http.StatusOK, a.code)
	require.Contains(t, a.body, `id="session-live-status"`)
	require.Contains(t, a.body, "You are signed out")
	require.Equal(t, http.StatusBadRequest, b.get(t, c, "/console/sessions/x/live").code)
}

// The grid view: Starred first (a starred session there alone, whatever its
// category), then each category in position order, then Uncategorized, each
// grid under its spec id; a frozen category offers no refresh and its
// refresh is refused saying why; a category's refresh acts on that
// category's sessions. A search — here the Advanced filters — replaces the
// grids with one flat list and asks lifecycle with every word.
func TestTheDashboardsCategoryGridsAndAdvancedSearch(t *testing.T) {
	t.Parallel()
	b := setupLive(t)
	work, parked := int64(4), int64(3)
	b.live.mu.Lock()
	b.live.categories = []*lifecyclev1.Category{
		{Id: work, Name: "<b>Work</b>", Position: 1},
		{Id: parked, Name: "Parked", Position: 2, Frozen: true},
	}
	b.live.sessions[0].CategoryId, b.live.sessions[0].Starred = &parked, true // #9: starred, in a frozen category
	b.live.sessions[1].CategoryId = &parked                                   // #8
	b.live.sessions[2].CategoryId = &work                                     // #7
	b.live.sessions = append(b.live.sessions, &lifecyclev1.Session{Id: 6, Status: "needs_input", Title: "The sixth", AgentRoot: "agents/x", UpdatedAt: timestamppb.Now()})
	b.live.mu.Unlock()
	c := b.signedIn(t)

	a := b.get(t, c, "/console/?filter=1&status=needs_input&status=running")
	order := []string{`id="starred_grid"`, `id="session-9"`, `id="category_grid_4"`, `id="session-7"`,
		`id="category_grid_3"`, `id="session-8"`, `id="sessions_grid"`, `id="session-6"`}
	last := -1
	for _, want := range order {
		i := strings.Index(a.body, want)
		require.Greater(t, i, last, "%s in its place", want)
		last = i
	}
	require.Equal(t, 1, strings.Count(a.body, `id="session-9"`), "a starred session has one card, in Starred")
	require.Contains(t, a.body, "&lt;b&gt;Work&lt;/b&gt;", "a category's name is text")
	require.Contains(t, a.body, `action="/console/categories/4/refresh"`)
	require.NotContains(t, a.body, `action="/console/categories/3/refresh"`, "a frozen category offers no refresh")
	require.Contains(t, a.body, "not refreshed by Refresh all")
	token := csrfField.FindStringSubmatch(a.body)[1]

	b.live.mu.Lock()
	b.live.refreshes = nil
	b.live.mu.Unlock()
	a = b.htmxPost(t, c, "/console/categories/4/refresh", url.Values{"csrf": {token}})
	require.Equal(t, http.StatusOK, a.code, a.body)
	require.Contains(t, a.body, "Refreshed all 1 sessions not archived in &#34;&lt;b&gt;Work&lt;/b&gt;&#34;")
	a = b.htmxPost(t, c, "/console/categories/3/refresh", url.Values{"csrf": {token}})
	require.Equal(t, http.StatusOK, a.code, a.body)
	require.Contains(t, a.body, "is frozen, so its sessions are not refreshed")
	a = b.htmxPost(t, c, "/console/categories/99/refresh", url.Values{"csrf": {token}})
	require.Contains(t, a.body, "does not exist any more")
	a = b.htmxPost(t, c, "/console/categories/4/refresh", url.Values{})
	require.Equal(t, http.StatusForbidden, a.code, "CSRF as every form")
	b.live.mu.Lock()
	var ids []string
	for _, r := range b.live.refreshes {
		ids = append(ids, r.GetSessionId())
	}
	b.live.mu.Unlock()
	require.Equal(t, []string{"7"}, ids, "the category's sessions alone; the frozen one refreshed nothing")

	a = b.get(t, c, "/console/?filter=1&status=needs_input&agent_root=agents/x&genesis=g1&transcript=%3Cscript%3E+ENOENT")
	require.NotContains(t, a.body, `id="starred_grid"`, "a search is one flat list")
	require.Contains(t, a.body, `aria-label="Search results, newest first"`)
	require.Contains(t, a.body, `id="session-6"`)
	require.NotContains(t, a.body, `id="session-7"`)
	require.Contains(t, a.body, `<details class="advanced" open>`, "the Advanced disclosure opens on its values")
	require.Contains(t, a.body, `value="&lt;script&gt; ENOENT"`)
	require.Contains(t, a.body, "transcript=%3Cscript%3E&#43;ENOENT", "the live stream keeps the search")
	b.live.mu.Lock()
	got := b.live.searches[len(b.live.searches)-1]
	b.live.mu.Unlock()
	require.Equal(t, "agents/x", got.GetAgentRoot())
	require.Equal(t, "g1", got.GetGenesis())
	require.Equal(t, "<script> ENOENT", got.GetTranscript())
	require.Equal(t, []string{"needs_input"}, got.GetStatus(), "the ticked statuses narrow the search too")
}
