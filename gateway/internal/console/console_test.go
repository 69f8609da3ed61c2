package console_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/zimmerhq/zimmer/gateway/internal/console"
	"github.com/zimmerhq/zimmer/gateway/internal/lineagefake"
	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"
	runnerv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/runner/v1"
	"github.com/zimmerhq/zimmer/services/platform/boundary"
	"github.com/zimmerhq/zimmer/services/platform/slogx"
)

const (
	adminUser = "tadasant"
	password  = "correct horse battery staple"
	// hostile is markup and script, fed through every field a human or an
	// agent writes.
	hostile = `<script>alert("x")</script><img src=x onerror=alert(1)>`
)

// fakes stand in for the services the console calls; they remember what
// they were asked.
type fakes struct {
	mu         sync.Mutex
	lists      []*lifecyclev1.ListSessionsRequest
	session    *lifecyclev1.Session
	followUps  []*queuev1.FollowUpRequest
	creates    []*lifecyclev1.CreateSessionRequest
	archives   []*lifecyclev1.ArchiveSessionRequest
	enqueued   map[string]bool // idempotency keys seen
	recorded   []*lineagev1.RecordHumanMessageRequest
	recordedMD []metadata.MD
	roster     []string
	transcript []*runnerv1.TranscriptLine
	messages   []*lineagev1.HumanMessage
	// page is what the session page's other parts, the inbox and the
	// alerts read and record (session_test.go).
	page pageFakes
}

type fakeLifecycle struct {
	lifecyclev1.LifecycleServiceClient
	f *fakes
}

// ListCategories answers none: the dashboard's cards then name no
// category and offer no move.
func (l fakeLifecycle) ListCategories(context.Context, *lifecyclev1.ListCategoriesRequest, ...grpc.CallOption) (*lifecyclev1.ListCategoriesResponse, error) {
	return &lifecyclev1.ListCategoriesResponse{}, nil
}

func (l fakeLifecycle) ListSessions(_ context.Context, in *lifecyclev1.ListSessionsRequest, _ ...grpc.CallOption) (*lifecyclev1.ListSessionsResponse, error) {
	l.f.mu.Lock()
	defer l.f.mu.Unlock()
	l.f.lists = append(l.f.lists, in)
	return &lifecyclev1.ListSessionsResponse{Sessions: []*lifecyclev1.Session{l.f.session},
		Pagination: &lifecyclev1.Pagination{TotalCount: 1}}, nil
}

func (l fakeLifecycle) GetSession(_ context.Context, in *lifecyclev1.GetSessionRequest, _ ...grpc.CallOption) (*lifecyclev1.GetSessionResponse, error) {
	l.f.mu.Lock()
	defer l.f.mu.Unlock()
	if in.GetSessionId() != strconv.FormatInt(l.f.session.GetId(), 10) {
		return nil, status.Errorf(codes.NotFound, "session %s not found", in.GetSessionId())
	}
	return &lifecyclev1.GetSessionResponse{Session: proto.CloneOf(l.f.session)}, nil
}

func (l fakeLifecycle) CreateSession(_ context.Context, in *lifecyclev1.CreateSessionRequest, _ ...grpc.CallOption) (*lifecyclev1.CreateSessionResponse, error) {
	l.f.mu.Lock()
	defer l.f.mu.Unlock()
	l.f.creates = append(l.f.creates, in)
	if in.GetGitRoot() == "" {
		return nil, status.Error(codes.InvalidArgument, "git_root: required")
	}
	return &lifecyclev1.CreateSessionResponse{Session: &lifecyclev1.Session{Id: 8, Prompt: in.GetPrompt()}}, nil
}

// ArchiveSession refuses as the archive guard does, unless forced.
func (l fakeLifecycle) ArchiveSession(_ context.Context, in *lifecyclev1.ArchiveSessionRequest, _ ...grpc.CallOption) (*lifecyclev1.ArchiveSessionResponse, error) {
	l.f.mu.Lock()
	defer l.f.mu.Unlock()
	l.f.archives = append(l.f.archives, in)
	if !in.GetForce() {
		return nil, status.Error(codes.FailedPrecondition, "session #7 has 2 queued messages not yet delivered; read them, then archive with force")
	}
	l.f.session.Status = "archived"
	return &lifecyclev1.ArchiveSessionResponse{Session: l.f.session, Message: "Session moved to trash."}, nil
}

type fakeQueue struct {
	queuev1.QueueServiceClient
	f *fakes
}

func (q fakeQueue) FollowUp(_ context.Context, in *queuev1.FollowUpRequest, _ ...grpc.CallOption) (*queuev1.FollowUpResponse, error) {
	q.f.mu.Lock()
	defer q.f.mu.Unlock()
	q.f.followUps = append(q.f.followUps, in)
	return &queuev1.FollowUpResponse{Outcome: queuev1.FollowUpOutcome_FOLLOW_UP_OUTCOME_DELIVERED, Message: "Delivered as the next turn."}, nil
}

func (q fakeQueue) EnqueueMessage(_ context.Context, in *queuev1.EnqueueMessageRequest, _ ...grpc.CallOption) (*queuev1.EnqueueMessageResponse, error) {
	q.f.mu.Lock()
	defer q.f.mu.Unlock()
	if q.f.enqueued == nil {
		q.f.enqueued = map[string]bool{}
	}
	created := !q.f.enqueued[in.GetIdempotencyKey()]
	q.f.enqueued[in.GetIdempotencyKey()] = true
	return &queuev1.EnqueueMessageResponse{Created: created, Message: "Queued."}, nil
}

type fakeRunner struct {
	runnerv1.RunnerServiceClient
	f *fakes
}

func (r fakeRunner) GetTranscript(context.Context, *runnerv1.GetTranscriptRequest, ...grpc.CallOption) (*runnerv1.GetTranscriptResponse, error) {
	return &runnerv1.GetTranscriptResponse{Lines: r.f.transcript}, nil
}

type fakeProvenance struct {
	lineagev1.ProvenanceServiceClient
	f *fakes
}

func (p fakeProvenance) ListUsers(context.Context, *lineagev1.ListUsersRequest, ...grpc.CallOption) (*lineagev1.ListUsersResponse, error) {
	p.f.mu.Lock()
	defer p.f.mu.Unlock()
	var users []*lineagev1.User
	for _, k := range p.f.roster {
		users = append(users, &lineagev1.User{Key: k})
	}
	return &lineagev1.ListUsersResponse{Users: users}, nil
}

func (p fakeProvenance) GetSessionProvenance(context.Context, *lineagev1.GetSessionProvenanceRequest, ...grpc.CallOption) (*lineagev1.GetSessionProvenanceResponse, error) {
	p.f.mu.Lock()
	defer p.f.mu.Unlock()
	return &lineagev1.GetSessionProvenanceResponse{HumanMessages: p.f.messages, HereCount: int32(len(p.f.messages)),
		SessionHierarchy: p.f.page.hierarchy, ElsewhereCountIsFloor: p.f.page.hierarchy.GetTruncated()}, nil
}

func (p fakeProvenance) RecordHumanMessage(ctx context.Context, in *lineagev1.RecordHumanMessageRequest, _ ...grpc.CallOption) (*lineagev1.RecordHumanMessageResponse, error) {
	p.f.mu.Lock()
	defer p.f.mu.Unlock()
	md, _ := metadata.FromOutgoingContext(ctx)
	p.f.recorded, p.f.recordedMD = append(p.f.recorded, in), append(p.f.recordedMD, md)
	for _, k := range p.f.roster {
		if k == adminUser {
			return &lineagev1.RecordHumanMessageResponse{Recorded: true}, nil
		}
	}
	return &lineagev1.RecordHumanMessageResponse{NotRecordedReason: `the admin "tadasant" (ZIMMER_ADMIN_USER) is not in the users roster`}, nil
}

type testBundle struct {
	fakes *fakes
	srv   *httptest.Server
	now   *time.Time
	mu    *sync.Mutex
}

func setup(t *testing.T) testBundle {
	t.Helper()
	return serve(t, newFakes(), lineagefake.NewSignIns().Client())
}

func newFakes() *fakes {
	return &fakes{
		roster: []string{adminUser},
		session: &lifecyclev1.Session{Id: 7, Status: "needs_input", Title: hostile, Prompt: hostile, Notes: hostile,
			AgentRoot: hostile, Genesis: "api", UpdatedAt: timestamppb.Now()},
		transcript: []*runnerv1.TranscriptLine{{Id: 1, Kind: "assistant", Text: hostile}},
		messages:   []*lineagev1.HumanMessage{{Author: adminUser, Provenance: console.ProvenanceFollowUp, Content: hostile, Origin: "here", AuthoredInSessionId: 7}},
		page:       newPageFakes(),
	}
}

// serve is one gateway replica's console over f, keeping its sign-ins in
// signIns.
func serve(t *testing.T, f *fakes, signIns lineagev1.ConsoleSignInServiceClient) testBundle {
	t.Helper()
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	require.NoError(t, err)
	now, mu := time.Now(), &sync.Mutex{}
	h, err := console.New(console.Clients{
		Lifecycle: fakeLifecycle{f: f}, Queue: fakeQueue{f: f}, Runner: fakeRunner{f: f}, Provenance: fakeProvenance{f: f},
		Triggers: fakeTriggers{f: f}, Notifications: fakeNotifications{f: f}, SignIns: signIns,
	}, console.Options{AdminUser: adminUser, PasswordHash: string(hash), Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now }},
		slogx.Discard())
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return testBundle{fakes: f, srv: srv, now: &now, mu: mu}
}

// browser is a client with a cookie jar that does not follow redirects,
// so a test sees each answer.
func (b testBundle) browser(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

type answer struct {
	code   int
	body   string
	header http.Header
}

func do(t *testing.T, c *http.Client, req *http.Request) answer {
	t.Helper()
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return answer{code: resp.StatusCode, body: string(body), header: resp.Header}
}

func (b testBundle) get(t *testing.T, c *http.Client, path string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, b.srv.URL+path, nil)
	require.NoError(t, err)
	return do(t, c, req)
}

func (b testBundle) post(t *testing.T, c *http.Client, path string, form url.Values) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.srv.URL+path, strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return do(t, c, req)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf is the token of the first form on the page at path.
func (b testBundle) csrf(t *testing.T, c *http.Client, path string) string {
	t.Helper()
	a := b.get(t, c, path)
	require.Equal(t, http.StatusOK, a.code, a.body)
	m := csrfField.FindStringSubmatch(a.body)
	require.NotNil(t, m, "no CSRF token on %s: %s", path, a.body)
	return m[1]
}

func (b testBundle) signIn(t *testing.T, c *http.Client, user, pass string) answer {
	t.Helper()
	token := b.csrf(t, c, "/console/login")
	return b.post(t, c, "/console/login", url.Values{"csrf": {token}, "user": {user}, "password": {pass}})
}

func (b testBundle) signedIn(t *testing.T) *http.Client {
	t.Helper()
	c := b.browser(t)
	a := b.signIn(t, c, adminUser, password)
	require.Equal(t, http.StatusSeeOther, a.code, a.body)
	return c
}

func TestSignInOpensTheConsoleAndSignOutEndsIt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.browser(t)

	a := b.get(t, c, "/console/")
	require.Equal(t, http.StatusSeeOther, a.code)
	require.Equal(t, "/console/login", a.header.Get("Location"))

	a = b.signIn(t, c, adminUser, "wrong")
	require.Equal(t, http.StatusUnauthorized, a.code)
	require.Contains(t, a.body, console.WrongCredentials)
	a = b.signIn(t, c, "someone-else", password)
	require.Equal(t, http.StatusUnauthorized, a.code)

	a = b.signIn(t, c, adminUser, password)
	require.Equal(t, http.StatusSeeOther, a.code, a.body)
	require.Equal(t, "/console/", a.header.Get("Location"))
	cookie := findCookie(t, a.header, console.CookieName)
	require.True(t, cookie.HttpOnly)
	require.Equal(t, http.SameSiteLaxMode, cookie.SameSite)
	require.Equal(t, "/console/", cookie.Path)
	require.False(t, cookie.Secure, "plain HTTP on loopback: a Secure cookie would never come back")

	a = b.get(t, c, "/console/")
	require.Equal(t, http.StatusOK, a.code, a.body)
	require.Contains(t, a.body, "Signed in as tadasant")
	require.Equal(t, "no-store", a.header.Get("Cache-Control"))
	require.Contains(t, a.header.Get("Content-Security-Policy"), "script-src 'self'")

	token := csrfField.FindStringSubmatch(a.body)[1]
	a = b.post(t, c, "/console/logout", url.Values{"csrf": {token}})
	require.Equal(t, http.StatusSeeOther, a.code, a.body)
	a = b.get(t, c, "/console/")
	require.Equal(t, http.StatusSeeOther, a.code, "signed out")

	// The cookie of the ended sign-in, replayed, opens nothing.
	replay := b.browser(t)
	req, err := http.NewRequest(http.MethodGet, b.srv.URL+"/console/", nil)
	require.NoError(t, err)
	req.AddCookie(&http.Cookie{Name: console.CookieName, Value: cookie.Value})
	require.Equal(t, http.StatusSeeOther, do(t, replay, req).code)
}

func TestTheCookieIsSecureBehindTLS(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.browser(t)
	token := b.csrf(t, c, "/console/login")
	req, err := http.NewRequest(http.MethodPost, b.srv.URL+"/console/login",
		strings.NewReader(url.Values{"csrf": {token}, "user": {adminUser}, "password": {password}}.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Forwarded-Proto", "https")
	a := do(t, c, req)
	require.Equal(t, http.StatusSeeOther, a.code, a.body)
	require.True(t, findCookie(t, a.header, console.CookieName).Secure)
}

func TestAPIKeysAndSessionCredentialsNeverOpenTheConsole(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, hdr := range [][2]string{
		{"X-API-Key", "grpctest-admin-key-0123"},
		{"Authorization", "Bearer grpctest-admin-key-0123"},
		{"Authorization", "Bearer zsc_0123456789abcdef"},
	} {
		req, err := http.NewRequest(http.MethodGet, b.srv.URL+"/console/", nil)
		require.NoError(t, err)
		req.Header.Set(hdr[0], hdr[1])
		a := do(t, b.browser(t), req)
		require.Equal(t, http.StatusSeeOther, a.code, hdr[0])
		require.Equal(t, "/console/login", a.header.Get("Location"))
	}
}

// Lineage counts the password attempts (LN-12; its tests prove the limit
// and the race): the console asks before checking a password, so a locked
// address is refused even the right one, unchecked, and a right password
// clears the count.
func TestSignInAsksLineageBeforeCheckingThePassword(t *testing.T) {
	t.Parallel()
	signIns := lineagefake.NewSignIns()
	b := serve(t, newFakes(), signIns.Client())
	c := b.browser(t)
	require.Equal(t, http.StatusUnauthorized, b.signIn(t, c, adminUser, "guess").code)
	require.Equal(t, []string{"attempt 127.0.0.1"}, signIns.Attempts(), "a wrong password stays counted")

	signIns.LockOut("127.0.0.1", 90*time.Second)
	a := b.signIn(t, c, adminUser, password)
	require.Equal(t, http.StatusTooManyRequests, a.code, "even the right password waits out the lock")
	require.Equal(t, "91", a.header.Get("Retry-After"))
	require.Contains(t, a.body, "Too many wrong passwords from your address: try again in 1m30s.")
	require.Len(t, signIns.Attempts(), 1, "nothing counted while locked")

	signIns.LockOut("127.0.0.1", 0)
	require.Equal(t, http.StatusSeeOther, b.signIn(t, c, adminUser, password).code)
	require.Equal(t, []string{"attempt 127.0.0.1", "attempt 127.0.0.1", "clear 127.0.0.1"}, signIns.Attempts())
}

func TestMutatingFormsNeedTheirCSRFToken(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.signedIn(t)
	form := url.Values{"prompt": {"do it"}}
	a := b.post(t, c, "/console/sessions/7/follow-up", form)
	require.Equal(t, http.StatusForbidden, a.code, a.body)
	require.Contains(t, a.body, "CSRF")
	form.Set("csrf", "forged")
	require.Equal(t, http.StatusForbidden, b.post(t, c, "/console/sessions/7/follow-up", form).code)
	require.Equal(t, http.StatusForbidden, b.post(t, c, "/console/logout", url.Values{}).code)

	// The right token from another site's page is refused by its Origin.
	form.Set("csrf", b.csrf(t, c, "/console/sessions/7"))
	req, err := http.NewRequest(http.MethodPost, b.srv.URL+"/console/sessions/7/follow-up", strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://evil.example")
	require.Equal(t, http.StatusForbidden, do(t, c, req).code)

	// The sign-in form has its own token.
	a = b.post(t, b.browser(t), "/console/login", url.Values{"user": {adminUser}, "password": {password}})
	require.Equal(t, http.StatusForbidden, a.code)

	require.Equal(t, http.StatusOK, b.get(t, c, "/console/").code, "still signed in")
	b.fakes.mu.Lock()
	defer b.fakes.mu.Unlock()
	require.Empty(t, b.fakes.followUps, "a refused form does nothing")
	require.Empty(t, b.fakes.recorded)
}

func TestDashboardOpensOnNeedsInputAndKeepsFilters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.signedIn(t)
	// The list request, not the per-status counts of the summary.
	lastList := func() *lifecyclev1.ListSessionsRequest {
		b.fakes.mu.Lock()
		defer b.fakes.mu.Unlock()
		for i := len(b.fakes.lists) - 1; i >= 0; i-- {
			if b.fakes.lists[i].GetPerPage() == console.DashboardPageSize {
				return b.fakes.lists[i]
			}
		}
		t.Fatal("no list request")
		return nil
	}

	require.Equal(t, http.StatusOK, b.get(t, c, "/console/").code)
	require.Equal(t, []string{"needs_input"}, lastList().GetStatus())

	a := b.get(t, c, "/console/?filter=1&status=running&status=failed&status=bogus&class=spot&q=fix")
	require.Equal(t, http.StatusOK, a.code, a.body)
	got := lastList()
	require.Equal(t, []string{"running", "failed"}, got.GetStatus())
	require.Equal(t, "spot", got.GetSchedulingClass())
	require.Equal(t, "fix", got.GetQ())

	// Kept in the cookie; the search is not.
	require.Equal(t, http.StatusOK, b.get(t, c, "/console/").code)
	got = lastList()
	require.Equal(t, []string{"running", "failed"}, got.GetStatus())
	require.Equal(t, "spot", got.GetSchedulingClass())
	require.Empty(t, got.GetQ())

	// No status ticked is every status, and stays so.
	require.Equal(t, http.StatusOK, b.get(t, c, "/console/?filter=1").code)
	require.Empty(t, lastList().GetStatus())
	require.Equal(t, http.StatusOK, b.get(t, c, "/console/").code)
	require.Empty(t, lastList().GetStatus(), "everything, not the default again")

	require.Equal(t, http.StatusOK, b.get(t, c, "/console/?reset=1").code)
	require.Equal(t, []string{"needs_input"}, lastList().GetStatus())
	require.Empty(t, lastList().GetSchedulingClass())
}

func TestUserTextIsNeverRenderedUnescaped(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.signedIn(t)
	// The session page carries the hostile text in every part (title,
	// prompt, notes, transcript, human messages, the hierarchy's titles
	// and agent roots, queued messages, the timeline, the clone's note, a
	// trigger's prompt); the inbox and the alerts in theirs.
	for _, path := range []string{"/console/", "/console/sessions/7", "/console/notifications", "/console/alerts"} {
		a := b.get(t, c, path)
		require.Equal(t, http.StatusOK, a.code, a.body)
		require.NotContains(t, a.body, `<script>alert`, path)
		require.NotContains(t, a.body, `<img src=x`, path)
		require.Contains(t, a.body, `&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;`, path)
	}
}

func TestAFollowUpIsDeliveredAndRecordedAsTheHumansMessage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.signedIn(t)
	page := b.get(t, c, "/console/sessions/7")
	require.Equal(t, http.StatusOK, page.code, page.body)
	token := csrfField.FindStringSubmatch(page.body)[1]
	key := regexp.MustCompile(`name="idempotency_key" value="([^"]+)"`).FindStringSubmatch(page.body)[1]

	a := b.post(t, c, "/console/sessions/7/follow-up", url.Values{"csrf": {token}, "idempotency_key": {key}, "prompt": {"please also fix the docs"}})
	require.Equal(t, http.StatusSeeOther, a.code, a.body)
	require.Equal(t, "/console/sessions/7", a.header.Get("Location"))

	b.fakes.mu.Lock()
	require.Len(t, b.fakes.followUps, 1)
	require.Equal(t, "7", b.fakes.followUps[0].GetSessionId())
	require.Equal(t, "please also fix the docs", b.fakes.followUps[0].GetPrompt())
	require.Equal(t, key, b.fakes.followUps[0].GetIdempotencyKey())
	require.Len(t, b.fakes.recorded, 1)
	rec := b.fakes.recorded[0]
	require.Equal(t, "web_ui.follow_up", rec.GetProvenance())
	require.Equal(t, int64(7), rec.GetAuthoredInSessionId())
	require.Equal(t, "please also fix the docs", rec.GetContent())
	require.Equal(t, []string{`{"kind":"web_ui_admin"}`}, b.fakes.recordedMD[0].Get(boundary.MetadataKey))
	b.fakes.mu.Unlock()

	a = b.get(t, c, "/console/sessions/7")
	require.Contains(t, a.body, "Delivered as the next turn.")
	require.NotContains(t, a.body, "not recorded")
}

func TestANewSessionIsCreatedAndItsPromptRecorded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.signedIn(t)
	token := b.csrf(t, c, "/console/sessions/new?parent=7")
	form := url.Values{"csrf": {token}, "prompt": {"fix the flaky test"}, "title": {hostile}, "git_root": {"/repo"},
		"branch": {"main"}, "agent_root": {"zimmer"}, "agent_runtime": {"demo"}, "parent": {"7"}, "scheduling_class": {"spot"}}
	a := b.post(t, c, "/console/sessions", form)
	require.Equal(t, http.StatusSeeOther, a.code, a.body)
	require.Equal(t, "/console/sessions/8", a.header.Get("Location"))

	b.fakes.mu.Lock()
	require.Len(t, b.fakes.creates, 1)
	got := b.fakes.creates[0]
	require.Equal(t, "fix the flaky test", got.GetPrompt())
	require.Equal(t, hostile, got.GetTitle())
	require.Equal(t, int64(7), got.GetParentSessionId())
	require.Equal(t, "spot", got.GetSchedulingClass())
	require.Equal(t, "demo", got.GetAgentRuntime())
	require.Len(t, b.fakes.recorded, 1)
	require.Equal(t, console.ProvenanceNewSession, b.fakes.recorded[0].GetProvenance())
	require.Equal(t, int64(8), b.fakes.recorded[0].GetAuthoredInSessionId())
	require.Equal(t, "fix the flaky test", b.fakes.recorded[0].GetContent())
	b.fakes.mu.Unlock()

	// Refused: the form comes back with lifecycle's reason and what was
	// typed, escaped; nothing is recorded.
	form.Del("git_root")
	a = b.post(t, c, "/console/sessions", form)
	require.Equal(t, http.StatusUnprocessableEntity, a.code, a.body)
	require.Contains(t, a.body, "git_root: required")
	require.Contains(t, a.body, "fix the flaky test</textarea>")
	require.NotContains(t, a.body, "<script>alert")
	form.Set("git_root", "/repo")
	form.Set("parent", "the big one")
	a = b.post(t, c, "/console/sessions", form)
	require.Equal(t, http.StatusUnprocessableEntity, a.code, a.body)
	require.Contains(t, a.body, "is not a session id")
	b.fakes.mu.Lock()
	defer b.fakes.mu.Unlock()
	require.Len(t, b.fakes.recorded, 1)
}

func TestTheArchiveGuardsRefusalAndArchiveAnyway(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.signedIn(t)
	a := b.get(t, c, "/console/sessions/7")
	require.Contains(t, a.body, `action="/console/sessions/7/archive"`, "needs_input may be archived")
	require.NotContains(t, a.body, `action="/console/sessions/7/pause"`, "only a running session is paused")
	require.NotContains(t, a.body, `action="/console/sessions/7/restore"`)
	token := csrfField.FindStringSubmatch(a.body)[1]

	a = b.post(t, c, "/console/sessions/7/archive", url.Values{"csrf": {token}})
	require.Equal(t, http.StatusUnprocessableEntity, a.code, a.body, "grpcerr's status for a refused transition")
	require.Contains(t, a.body, "2 queued messages not yet delivered")
	require.Contains(t, a.body, "Archive anyway")

	a = b.post(t, c, "/console/sessions/7/archive", url.Values{"csrf": {token}, "force": {"1"}})
	require.Equal(t, http.StatusSeeOther, a.code, a.body)
	require.Contains(t, b.get(t, c, "/console/sessions/7").body, "Session moved to trash.")
	b.fakes.mu.Lock()
	defer b.fakes.mu.Unlock()
	require.Len(t, b.fakes.archives, 2)
	require.True(t, b.fakes.archives[1].GetForce())
}

func TestAQueuedMessageIsRecordedWhenTypedAndOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.signedIn(t)
	page := b.get(t, c, "/console/sessions/7").body
	token := csrfField.FindStringSubmatch(page)[1]
	key := regexp.MustCompile(`action="/console/sessions/7/enqueue"[^>]*>\s*<input[^>]*>\s*<input type="hidden" name="idempotency_key" value="([^"]+)"`).FindStringSubmatch(page)
	require.NotNil(t, key, page)
	form := url.Values{"csrf": {token}, "idempotency_key": {key[1]}, "content": {"then add tests"}}
	for range 2 { // a double submit
		a := b.post(t, c, "/console/sessions/7/enqueue", form)
		require.Equal(t, http.StatusSeeOther, a.code, a.body)
	}
	b.fakes.mu.Lock()
	defer b.fakes.mu.Unlock()
	require.Len(t, b.fakes.recorded, 1, "recorded once, when typed")
	require.Equal(t, console.ProvenanceEnqueuedMessage, b.fakes.recorded[0].GetProvenance())
	require.Equal(t, "then add tests", b.fakes.recorded[0].GetContent())
	require.Equal(t, int64(7), b.fakes.recorded[0].GetAuthoredInSessionId())
}

func TestAnAdminOutsideTheRosterIsToldNothingIsRecorded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.fakes.mu.Lock()
	b.fakes.roster = []string{"someone-else"}
	b.fakes.mu.Unlock()
	c := b.signedIn(t)
	a := b.get(t, c, "/console/sessions/7")
	require.Contains(t, a.body, `ZIMMER_ADMIN_USER &#34;tadasant&#34; names nobody in the users roster`)
	token := csrfField.FindStringSubmatch(a.body)[1]
	require.Equal(t, http.StatusSeeOther, b.post(t, c, "/console/sessions/7/follow-up", url.Values{"csrf": {token}, "prompt": {"go"}}).code)
	a = b.get(t, c, "/console/sessions/7")
	require.Contains(t, a.body, "It was not recorded as your human message")
}

func TestWithoutAPasswordTheConsoleIsDisabled(t *testing.T) {
	t.Parallel()
	h, err := console.New(console.Clients{}, console.Options{AdminUser: adminUser}, slogx.Discard())
	require.NoError(t, err)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/console/login", nil))
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	require.Contains(t, rec.Body.String(), console.PasswordHashEnv)

	_, err = console.New(console.Clients{}, console.Options{PasswordHash: "plaintext"}, slogx.Discard())
	require.ErrorContains(t, err, console.PasswordHashEnv)
}

func findCookie(t *testing.T, h http.Header, name string) *http.Cookie {
	t.Helper()
	for _, c := range (&http.Response{Header: h}).Cookies() {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no %s cookie set", name)
	return nil
}
