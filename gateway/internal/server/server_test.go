package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/zimmerhq/zimmer/gateway/internal/auth"
	"github.com/zimmerhq/zimmer/gateway/internal/config"
	"github.com/zimmerhq/zimmer/gateway/internal/grpctest"
	"github.com/zimmerhq/zimmer/gateway/internal/lifecyclefake"
	"github.com/zimmerhq/zimmer/gateway/internal/mcp"
	"github.com/zimmerhq/zimmer/gateway/internal/notificationfake"
	"github.com/zimmerhq/zimmer/gateway/internal/queuefake"
	"github.com/zimmerhq/zimmer/gateway/internal/runnerfake"
	"github.com/zimmerhq/zimmer/gateway/internal/server"
	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/platform/grpcstatus"
	"github.com/zimmerhq/zimmer/services/platform/slogx"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// The gateway's keys: two operator keys and an admin key.
const (
	testKey  = "test-key"
	otherKey = "other-key"
	adminKey = "admin-key"
)

type testBundle struct {
	url           string
	fake          *lifecyclefake.Server
	runner        *runnerfake.Server
	queue         *queuefake.Server
	notifications *notificationfake.Server
}

type setupOpts struct {
	downService    string // a service whose address has nothing listening
	mcpMaxSessions int    // GATEWAY_MCP_MAX_SESSIONS; 0 for the default
	slackSecret    string // SLACK_SIGNING_SECRET; "" leaves /slack/events out
	githubSecret   string // GITHUB_WEBHOOK_SECRET; "" leaves /github/webhook out
}

// setup runs the gateway's real handler against the fake lifecycle service
// (which records calls and answers what a test sets up) and health-only
// servers for the other four, each a real gRPC server on 127.0.0.1
// requiring testKey, as the services' own interceptor does.
func setup(t *testing.T, opts setupOpts) *testBundle {
	t.Helper()
	fake, runner, queue, notifications := lifecyclefake.New(), runnerfake.New(), queuefake.New(), notificationfake.New()
	addr := func(name string, register func(*grpc.Server)) string {
		if name == opts.downService {
			return grpctest.DeadAddr(t)
		}
		return grpctest.Serve(t, register)
	}
	cfg := config.Config{
		HTTPAddr:            "127.0.0.1:0",
		LogLevel:            "info",
		LifecycleAddr:       addr("lifecycle", fake.Register),
		LineageAddr:         addr("lineage", nil),
		QueueAddr:           addr("queue", queue.Register),
		RunnerAddr:          addr("runner", runner.Register),
		NotificationAddr:    addr("notification", notifications.Register),
		APIKeys:             testKey + "," + otherKey,
		AdminAPIKeys:        adminKey,
		InternalToken:       grpctest.InternalToken,
		MCPMaxSessions:      opts.mcpMaxSessions,
		SlackSigningSecret:  opts.slackSecret,
		GitHubWebhookSecret: opts.githubSecret,
	}
	srv, err := server.New(context.Background(), cfg, slogx.Discard())
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return &testBundle{url: ts.URL, fake: fake, runner: runner, queue: queue, notifications: notifications}
}

type response struct {
	status int
	header http.Header
	body   []byte
}

// json decodes the body keeping numbers as json.Number, so a test can tell
// 1 from "1".
func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&m), string(r.body))
	return m
}

// errorText checks the body is the API's error shape, exactly {"error":
// kind, "message": explanation, "messages": [one per problem]} and, for a
// refusal that has one, its "code", and returns the message.
func (r response) errorText(t *testing.T) string {
	t.Helper()
	msg, _, _ := r.problem(t)
	return msg
}

// problem is the error body's message, kind and messages.
func (r response) problem(t *testing.T) (message, kind string, messages []string) {
	t.Helper()
	m := r.json(t)
	if code, ok := m["code"]; ok {
		require.IsType(t, "", code, "a refusal's code is a word: %s", r.body)
		require.NotEmpty(t, code, "a code is left out rather than empty: %s", r.body)
		delete(m, "code")
	}
	require.Len(t, m, 3, "error bodies are exactly {\"error\", \"message\", \"messages\"} (and a refusal's code): %s", r.body)
	kind, ok := m["error"].(string)
	require.True(t, ok && kind != "", "error names the kind: %s", r.body)
	message, ok = m["message"].(string)
	require.True(t, ok, string(r.body))
	list, ok := m["messages"].([]any)
	require.True(t, ok && len(list) > 0, "messages lists at least one problem: %s", r.body)
	for _, e := range list {
		text, ok := e.(string)
		require.True(t, ok, string(r.body))
		messages = append(messages, text)
	}
	return message, kind, messages
}

func (b *testBundle) do(t *testing.T, method, path, body string, header ...string) response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, b.url+path, rd)
	require.NoError(t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return response{status: resp.StatusCode, header: resp.Header, body: got}
}

// call is do with the test key.
func (b *testBundle) call(t *testing.T, method, path, body string) response {
	t.Helper()
	return b.do(t, method, path, body, "X-API-Key", testKey)
}

// admin is call with the admin key: the admin methods (transition, hard
// delete) need it.
func (b *testBundle) admin(t *testing.T, method, path, body string) response {
	t.Helper()
	return b.do(t, method, path, body, "X-API-Key", adminKey)
}

func (b *testBundle) create(t *testing.T, body string) map[string]any {
	t.Helper()
	resp := b.call(t, http.MethodPost, "/api/v1/sessions", body)
	require.Equal(t, http.StatusCreated, resp.status, string(resp.body))
	return resp.json(t)["session"].(map[string]any)
}

// invalid is the InvalidArgument lifecycle answers for a request it
// refuses field by field (field, reason, field, reason, ...), built as the
// services build it.
func invalid(fieldReasons ...string) error {
	verr := &validation.Error{}
	for i := 0; i+1 < len(fieldReasons); i += 2 {
		verr.Violations = append(verr.Violations, validation.FieldViolation{Field: fieldReasons[i], Reason: fieldReasons[i+1]})
	}
	return grpcstatus.InvalidArgument(verr)
}

// notFound is lifecycle's answer for a reference it does not know.
func notFound(shown string) error {
	return status.Errorf(codes.NotFound, "session %s not found; check the id or slug (GET /api/v1/sessions lists sessions)", shown)
}

// lastRequest is the request of the fake's last call of method.
func (b *testBundle) lastRequest(t *testing.T, method string) proto.Message {
	t.Helper()
	calls := b.fake.Calls(method)
	require.NotEmpty(t, calls, "no %s call reached lifecycle", method)
	return calls[len(calls)-1].Request
}

func TestAuth(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})

	tests := []struct {
		name       string
		header     []string
		wantStatus int
	}{
		{"no key", nil, http.StatusUnauthorized},
		{"bad key", []string{"X-API-Key", "wrong"}, http.StatusUnauthorized},
		{"bad bearer", []string{"Authorization", "Bearer wrong"}, http.StatusUnauthorized},
		{"basic auth is not a key", []string{"Authorization", "Basic " + testKey}, http.StatusUnauthorized},
		{"X-API-Key", []string{"X-API-Key", testKey}, http.StatusOK},
		{"Bearer", []string{"Authorization", "Bearer " + testKey}, http.StatusOK},
		{"second key", []string{"Authorization", "bearer " + otherKey}, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp := b.do(t, http.MethodGet, "/api/v1/sessions", "", tt.header...)
			require.Equal(t, tt.wantStatus, resp.status, string(resp.body))
			if tt.wantStatus == http.StatusUnauthorized {
				require.Equal(t, auth.Message, resp.errorText(t))
			}
		})
	}

	// An unknown route under /api/v1 still asks for the key first.
	resp := b.do(t, http.MethodGet, "/api/v1/nope", "")
	require.Equal(t, http.StatusUnauthorized, resp.status)
}

func TestCreateSession(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	metadata, err := structpb.NewStruct(map[string]any{"ticket": "Z-1", "n": 2})
	require.NoError(t, err)
	b.fake.Answer("CreateSession", &lifecyclev1.CreateSessionResponse{Session: &lifecyclev1.Session{
		Id: 1, Status: "waiting", Title: "Flaky", Slug: "flaky", Prompt: "fix the flaky test", GitRoot: "/src/zimmer",
		Genesis: "api", SchedulingClass: "priority", Precedence: 3, CustomMetadata: metadata,
		CreatedAt: timestamppb.New(lifecyclefake.Now), UpdatedAt: timestamppb.New(lifecyclefake.Now),
	}}, nil)

	resp := b.call(t, http.MethodPost, "/api/v1/sessions", `{
		"prompt": "fix the flaky test", "git_root": "/src/zimmer", "title": "Flaky",
		"slug": "flaky", "precedence": 3, "custom_metadata": {"ticket": "Z-1", "n": 2}
	}`)
	require.Equal(t, http.StatusCreated, resp.status, string(resp.body))
	require.Equal(t, "application/json; charset=utf-8", resp.header.Get("Content-Type"))
	require.True(t, proto.Equal(&lifecyclev1.CreateSessionRequest{
		Prompt: "fix the flaky test", GitRoot: "/src/zimmer", Title: "Flaky", Slug: "flaky", Precedence: 3, CustomMetadata: metadata,
	}, b.lastRequest(t, "CreateSession")), "the body reaches lifecycle as sent")
	body := resp.json(t)
	require.Len(t, body, 1)
	s := body["session"].(map[string]any)

	require.Equal(t, json.Number("1"), s["id"], "ids are JSON numbers")
	require.Equal(t, "waiting", s["status"])
	require.Equal(t, "/src/zimmer", s["git_root"], "snake_case keys")
	require.Equal(t, "api", s["genesis"])
	require.Equal(t, "priority", s["scheduling_class"])
	require.Equal(t, json.Number("3"), s["precedence"])
	require.Equal(t, map[string]any{"ticket": "Z-1", "n": json.Number("2")}, s["custom_metadata"])
	require.Equal(t, "2026-01-02T03:04:05Z", s["created_at"])
	// Unpopulated fields are there too, an unset optional id as null.
	require.Contains(t, s, "branch")
	require.Equal(t, "", s["branch"])
	require.Contains(t, s, "parent_session_id")
	require.Nil(t, s["parent_session_id"])
	for k := range s {
		require.Equal(t, strings.ToLower(k), k, "no camelCase keys: %s", k)
	}

	// A child: parent_session_id accepted and answered as a number.
	b.fake.Answer("CreateSession", &lifecyclev1.CreateSessionResponse{Session: &lifecyclev1.Session{
		Id: 2, Status: "waiting", Prompt: "p", GitRoot: "/g", ParentSessionId: proto.Int64(1),
	}}, nil)
	child := b.create(t, `{"prompt": "p", "git_root": "/g", "parent_session_id": 1}`)
	require.Equal(t, int64(1), b.lastRequest(t, "CreateSession").(*lifecyclev1.CreateSessionRequest).GetParentSessionId())
	require.Equal(t, json.Number("2"), child["id"])
	require.Equal(t, json.Number("1"), child["parent_session_id"])
}

func TestGetSession(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	b.fake.Answer("GetSession", &lifecyclev1.GetSessionResponse{Session: &lifecyclev1.Session{Id: 1, Slug: "by-slug"}}, nil)

	for _, ref := range []string{"1", "by-slug"} {
		resp := b.call(t, http.MethodGet, "/api/v1/sessions/"+ref, "")
		require.Equal(t, http.StatusOK, resp.status, string(resp.body))
		require.Equal(t, ref, b.lastRequest(t, "GetSession").(*lifecyclev1.GetSessionRequest).GetSessionId())
		s := resp.json(t)["session"].(map[string]any)
		require.Equal(t, json.Number("1"), s["id"])
		require.Equal(t, "by-slug", s["slug"])
	}
}

func TestListSessions(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	// What lifecycle answers: of four sessions, #4 (waiting) and #1
	// (running) match, newest first; page 2 of one per page is #1; nothing
	// is archived.
	b.fake.Handle("ListSessions", func(m proto.Message) (proto.Message, error) {
		req := m.(*lifecyclev1.ListSessionsRequest)
		switch {
		case len(req.GetStatus()) == 1 && req.GetStatus()[0] == "archived":
			return &lifecyclev1.ListSessionsResponse{Pagination: &lifecyclev1.Pagination{Page: 1, PerPage: 25}}, nil
		case req.GetPage() == 2:
			return &lifecyclev1.ListSessionsResponse{
				Sessions:   []*lifecyclev1.Session{{Id: 1, Status: "running"}},
				Pagination: &lifecyclev1.Pagination{Page: 2, PerPage: 1, TotalCount: 2, TotalPages: 2},
			}, nil
		}
		return &lifecyclev1.ListSessionsResponse{
			Sessions:   []*lifecyclev1.Session{{Id: 4, Status: "waiting"}, {Id: 1, Status: "running"}},
			Pagination: &lifecyclev1.Pagination{Page: 1, PerPage: 10, TotalCount: 2, TotalPages: 1},
		}, nil
	})

	resp := b.call(t, http.MethodGet, "/api/v1/sessions?status=waiting&status=running&page=1&per_page=10&q=flaky", "")
	require.Equal(t, http.StatusOK, resp.status, string(resp.body))

	req := b.lastRequest(t, "ListSessions").(*lifecyclev1.ListSessionsRequest)
	require.Equal(t, []string{"waiting", "running"}, req.GetStatus(), "repeated status reaches the service")
	require.Equal(t, int32(1), req.GetPage())
	require.Equal(t, int32(10), req.GetPerPage())
	require.Equal(t, "flaky", req.GetQ())

	body := resp.json(t)
	sessions := body["sessions"].([]any)
	require.Len(t, sessions, 2)
	require.Equal(t, json.Number("4"), sessions[0].(map[string]any)["id"])
	require.Equal(t, json.Number("1"), sessions[1].(map[string]any)["id"])
	require.Equal(t, map[string]any{
		"page": json.Number("1"), "per_page": json.Number("10"),
		"total_count": json.Number("2"), "total_pages": json.Number("1"),
	}, body["pagination"])

	// Page 2 of 1-per-page.
	resp = b.call(t, http.MethodGet, "/api/v1/sessions?status=waiting&status=running&page=2&per_page=1", "")
	require.Equal(t, http.StatusOK, resp.status, string(resp.body))
	sessions = resp.json(t)["sessions"].([]any)
	require.Len(t, sessions, 1)
	require.Equal(t, json.Number("1"), sessions[0].(map[string]any)["id"])

	// An empty list is [] with the pagination, not an absent key.
	resp = b.call(t, http.MethodGet, "/api/v1/sessions?status=archived", "")
	require.Equal(t, http.StatusOK, resp.status)
	require.Equal(t, []any{}, resp.json(t)["sessions"])
}

func TestErrors(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name       string
		fail       error // what lifecycle answers, if the call reaches it
		method     string
		path       string
		body       string
		wantStatus int
		wantError  string // the whole message, or its start when wantPrefix
		wantPrefix bool
	}{
		{
			name: "not found", method: http.MethodGet, path: "/api/v1/sessions/999", fail: notFound("#999"),
			wantStatus: http.StatusNotFound,
			wantError:  "session #999 not found; check the id or slug (GET /api/v1/sessions lists sessions)",
		},
		{
			name: "malformed JSON", method: http.MethodPost, path: "/api/v1/sessions", body: `{"prompt": "p",`,
			wantStatus: http.StatusBadRequest, wantError: "malformed JSON body: ", wantPrefix: true,
		},
		{
			name: "unknown field", method: http.MethodPost, path: "/api/v1/sessions", body: `{"prompt": "p", "promt": "x"}`,
			wantStatus: http.StatusUnprocessableEntity, wantError: "promt: is not a field of this request; ", wantPrefix: true,
		},
		{
			name: "wrong type", method: http.MethodPost, path: "/api/v1/sessions", body: `{"prompt": 5}`,
			wantStatus: http.StatusUnprocessableEntity, wantError: "prompt: takes a string, got 5; send e.g. {", wantPrefix: true,
		},
		{
			name: "not an object", method: http.MethodPost, path: "/api/v1/sessions", body: `["prompt"]`,
			wantStatus: http.StatusBadRequest, wantError: "malformed JSON body: ", wantPrefix: true,
		},
		{
			name: "missing prompt (the service's validation)", method: http.MethodPost, path: "/api/v1/sessions",
			body: `{"git_root": "/g"}`, fail: invalid("prompt", "is required: say what the agent should do"),
			wantStatus: http.StatusUnprocessableEntity, wantError: "prompt: is required: say what the agent should do",
		},
		{
			name: "empty body (the service's validation)", method: http.MethodPost, path: "/api/v1/sessions",
			fail: invalid("prompt", "is required: say what the agent should do",
				"git_root", "is required: the repository the session's clone is made from"),
			wantStatus: http.StatusUnprocessableEntity,
			wantError:  "prompt: is required: say what the agent should do; git_root: is required: the repository the session's clone is made from",
		},
		{
			name: "failed precondition", method: http.MethodGet, path: "/api/v1/sessions/1",
			fail:       status.Error(codes.FailedPrecondition, "session #1 is archived; unarchive it first"),
			wantStatus: http.StatusUnprocessableEntity, wantError: "session #1 is archived; unarchive it first",
		},
		{
			name: "already exists", method: http.MethodGet, path: "/api/v1/sessions/1",
			fail:       status.Error(codes.AlreadyExists, "slug taken"),
			wantStatus: http.StatusConflict, wantError: "slug taken",
		},
		{
			name: "internal errors are not shown", method: http.MethodGet, path: "/api/v1/sessions",
			fail:       status.Error(codes.Internal, "pq: password authentication failed"),
			wantStatus: http.StatusInternalServerError, wantError: "internal error",
		},
		{
			name: "bad query parameter", method: http.MethodGet, path: "/api/v1/sessions?page=two",
			wantStatus: http.StatusBadRequest, wantError: `parsing field "page": `, wantPrefix: true,
		},
		{
			name: "unknown route", method: http.MethodGet, path: "/api/v1/nope",
			wantStatus: http.StatusNotFound, wantError: "no route GET /api/v1/nope; see /openapi.json",
		},
		{
			name: "unknown route outside the API", method: http.MethodGet, path: "/nope",
			wantStatus: http.StatusNotFound, wantError: "no route GET /nope; see /openapi.json",
		},
		{
			name: "method not allowed", method: http.MethodDelete, path: "/api/v1/sessions",
			wantStatus: http.StatusMethodNotAllowed, wantError: "method DELETE not allowed on /api/v1/sessions; see /openapi.json",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, setupOpts{})
			b.fake.FailWith(tt.fail)
			resp := b.call(t, tt.method, tt.path, tt.body)
			require.Equal(t, tt.wantStatus, resp.status, string(resp.body))
			msg := resp.errorText(t)
			if tt.wantPrefix {
				require.True(t, strings.HasPrefix(msg, tt.wantError), msg)
			} else {
				require.Equal(t, tt.wantError, msg)
			}
		})
	}
}

// A body that is not JSON is 400 Malformed JSON; JSON that is not the
// route's body (an unknown field, a value of the wrong type, a time that
// is no RFC 3339 time, a boolean written as a string) is 422 naming each
// field and what it takes. Both show an example of that route's body,
// never another route's (issue 20 item 13: every route answered 400 with
// the session-create example). Every boolean is refused the same way in
// its string forms; every JSON answer says its charset.
func TestMalformedBodySaysWhatToSend(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	before := len(b.fake.Calls()) + len(b.queue.Calls())

	for _, tc := range []struct {
		path, body string
		status     int
		kind       string
		messages   []string
		example    string
	}{
		{"/api/v1/sessions/7/follow_up", `{"prompt": "p",`, http.StatusBadRequest, "Malformed JSON", nil,
			`{"prompt": "...", "goal": "...", "force_immediate": true, "acting_session_id": 1, "idempotency_key": "..."}`},
		{"/api/v1/sessions/7/follow_up", `["prompt"]`, http.StatusBadRequest, "Malformed JSON", nil, `"force_immediate": true`},
		{"/api/v1/sessions", `{"prompt": "p", "promt": "x"}`, http.StatusUnprocessableEntity, "Validation failed",
			[]string{`promt: is not a field of this request; its fields are prompt, git_root, branch, subdirectory, title, slug, goal, ` +
				`agent_root, agent_runtime, parent_session_id, scheduling_class, precedence, custom_metadata, mcp_tool_groups, push_notifications`},
			`"git_root": "..."`},
		{"/api/v1/sessions/7/follow_up", `{"prompt": "p", "force_immediate": "true"}`, http.StatusUnprocessableEntity, "Validation failed",
			[]string{`force_immediate: takes true or false (a JSON boolean, unquoted), got "true"`}, `"force_immediate": true`},
		{"/api/v1/sessions/bulk_archive", `{"session_ids": [1], "force": "0"}`, http.StatusUnprocessableEntity, "Validation failed",
			[]string{`force: takes true or false (a JSON boolean, unquoted), got "0"`}, `{"session_ids": [12, "release-router"], "force": true, "acting_session_id": 1}`},
		{"/api/v1/sessions/7/follow_up", `{"promt": "p", "force_immediate": 1}`, http.StatusUnprocessableEntity, "Validation failed",
			[]string{`force_immediate: takes true or false (a JSON boolean, unquoted), got 1`, `promt: is not a field of this request; ` +
				`its fields are prompt, goal, force_immediate, acting_session_id, idempotency_key`}, `"force_immediate": true`},
	} {
		resp := b.call(t, http.MethodPost, tc.path, tc.body)
		require.Equal(t, tc.status, resp.status, "%s %s: %s", tc.path, tc.body, resp.body)
		require.Equal(t, "application/json; charset=utf-8", resp.header.Get("Content-Type"))
		msg, kind, messages := resp.problem(t)
		require.Equal(t, tc.kind, kind, tc.body)
		if tc.messages != nil {
			require.Equal(t, tc.messages, messages, tc.body)
		}
		require.Contains(t, msg, tc.example, "%s: the route's own example", tc.body)
		if !strings.HasSuffix(tc.path, "/sessions") {
			require.NotContains(t, msg, "git_root", "%s: not the session-create example", tc.path)
		}
	}
	require.Equal(t, before, len(b.fake.Calls())+len(b.queue.Calls()), "no refused body reached a service")

	resp := b.call(t, http.MethodGet, "/api/v1/sessions/7/enqueued_messages", "")
	require.Equal(t, http.StatusOK, resp.status, string(resp.body))
	require.Equal(t, "application/json; charset=utf-8", resp.header.Get("Content-Type"), "a success too")
}

func TestServiceUnavailable(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{downService: "lifecycle"})

	resp := b.call(t, http.MethodGet, "/api/v1/sessions/1", "")
	require.Equal(t, http.StatusServiceUnavailable, resp.status, string(resp.body))
	require.Equal(t, "the lifecycle service is unavailable; retry shortly", resp.errorText(t))
}

func TestHealthz(t *testing.T) {
	t.Parallel()

	t.Run("all serving", func(t *testing.T) {
		t.Parallel()
		b := setup(t, setupOpts{})
		for _, path := range []string{"/healthz", "/readyz"} {
			resp := b.do(t, http.MethodGet, path, "") // no key needed
			require.Equal(t, http.StatusOK, resp.status, string(resp.body))
			require.JSONEq(t, `{"status":"ok","services":{
			"lifecycle":"SERVING","lineage":"SERVING","queue":"SERVING","runner":"SERVING","notification":"SERVING"}}`,
				string(resp.body))
		}
	})
	t.Run("one down", func(t *testing.T) {
		t.Parallel()
		b := setup(t, setupOpts{downService: "queue"})
		for _, path := range []string{"/healthz", "/readyz"} {
			resp := b.do(t, http.MethodGet, path, "")
			require.Equal(t, http.StatusServiceUnavailable, resp.status, string(resp.body))
			require.JSONEq(t, `{"status":"unavailable","services":{
			"lifecycle":"SERVING","lineage":"SERVING","queue":"UNREACHABLE","runner":"SERVING","notification":"SERVING"}}`,
				string(resp.body))
		}
	})
}

func TestOpenAPI(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})

	resp := b.do(t, http.MethodGet, "/openapi.json", "") // no key needed
	require.Equal(t, http.StatusOK, resp.status)
	require.Equal(t, "application/json; charset=utf-8", resp.header.Get("Content-Type"))
	var doc struct {
		Swagger     string                    `json:"swagger"`
		Paths       map[string]any            `json:"paths"`
		Definitions map[string]map[string]any `json:"definitions"`
	}
	require.NoError(t, json.Unmarshal(resp.body, &doc))
	require.Equal(t, "2.0", doc.Swagger)
	require.Contains(t, doc.Paths, "/api/v1/sessions")
	require.Contains(t, doc.Paths, "/api/v1/sessions/{session_id}")
	// The document says what the gateway sends: ids are integers.
	id := doc.Definitions["v1Session"]["properties"].(map[string]any)["id"]
	require.Equal(t, map[string]any{"type": "integer", "format": "int64"}, id)
}

func TestMCPRequiresKey(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})

	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	for _, path := range []string{"/mcp", "/mcp?tool_groups=sessions"} {
		resp := b.do(t, http.MethodPost, path, init)
		require.Equal(t, http.StatusUnauthorized, resp.status, string(resp.body))
		require.Equal(t, auth.Message, resp.errorText(t))
	}

	_, err := mcpClient(t, b.url+"/mcp", "wrong")
	require.Error(t, err)
}

// Behind a reverse proxy the Host header is not localhost; with keys
// required, mcp-go's DNS-rebinding guard is off and the request goes
// through.
func TestMCPAcceptsProxiedHost(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})

	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, b.url+"/mcp", strings.NewReader(init))
	require.NoError(t, err)
	req.Host = "zimmer.example.com"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("X-API-Key", testKey)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.Contains(t, string(body), `"serverInfo":{"name":"zimmer"`)
}

func TestMCPThroughGateway(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})

	c, err := mcpClient(t, b.url+"/mcp?tool_groups=sessions", testKey)
	require.NoError(t, err)
	tools, err := c.ListTools(t.Context(), mcpgo.ListToolsRequest{})
	require.NoError(t, err)
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	require.Subset(t, names, []string{"start_session", "get_session", "action_session"})

	res, err := c.CallTool(t.Context(), callRequest("start_session", map[string]any{"prompt": "p", "git_root": "/g"}))
	require.NoError(t, err)
	require.False(t, res.IsError, textOf(res))
	require.Contains(t, textOf(res), "## "+mcp.OutcomeSessionStarted+"\n\n- **id:** 1\n- **title:** (untitled)\n")

	// The REST API sees the session MCP created.
	resp := b.call(t, http.MethodGet, "/api/v1/sessions/1", "")
	require.Equal(t, http.StatusOK, resp.status)

	// MCP's JSON answers say their charset, as REST's do.
	resp = b.do(t, http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26",`+
		`"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, "X-API-Key", testKey, "Accept", "application/json, text/event-stream")
	require.Equal(t, http.StatusOK, resp.status, string(resp.body))
	require.Equal(t, "application/json; charset=utf-8", resp.header.Get("Content-Type"))
}

func mcpClient(t *testing.T, url, key string) (*client.Client, error) {
	t.Helper()
	c, err := client.NewStreamableHttpClient(url, transport.WithHTTPHeaders(map[string]string{"X-API-Key": key}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Start(t.Context()); err != nil {
		return nil, err
	}
	req := mcpgo.InitializeRequest{}
	req.Params.ClientInfo = mcpgo.Implementation{Name: "gateway-test", Version: "1"}
	if _, err := c.Initialize(t.Context(), req); err != nil {
		return nil, err
	}
	return c, nil
}

func callRequest(name string, args map[string]any) mcpgo.CallToolRequest {
	var req mcpgo.CallToolRequest
	req.Params.Name = name
	req.Params.Arguments = args
	return req
}

func textOf(res *mcpgo.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := mcpgo.AsTextContent(c); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// The gateway's MCP sessions are bounded as configured: opening one past
// GATEWAY_MCP_MAX_SESSIONS closes the idlest, whose client is told to
// initialize again.
func TestMCPSessionCapFromConfig(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{mcpMaxSessions: 1})

	initialize := func() string {
		init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
		resp := b.do(t, http.MethodPost, "/mcp", init, "X-API-Key", testKey, "Accept", "application/json, text/event-stream")
		require.Equal(t, http.StatusOK, resp.status, string(resp.body))
		return resp.header.Get("Mcp-Session-Id")
	}
	list := func(session string) response {
		return b.do(t, http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, "X-API-Key", testKey,
			"Accept", "application/json, text/event-stream", "Mcp-Session-Id", session, "Mcp-Protocol-Version", "2025-06-18")
	}
	first := initialize()
	require.Equal(t, http.StatusOK, list(first).status)
	second := initialize()
	resp := list(first)
	require.Equal(t, http.StatusNotFound, resp.status, string(resp.body))
	require.Contains(t, string(resp.body), "send initialize again")
	require.Equal(t, http.StatusOK, list(second).status)
}

// Text that is not UTF-8 in a JSON body is refused naming the field, not
// as a value of the wrong type.
func TestBodyTextThatIsNotUTF8NamesTheField(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	resp := b.call(t, http.MethodPost, "/api/v1/sessions/7/follow_up", "{\"prompt\": \"a\xffb\"}")
	require.Equal(t, http.StatusUnprocessableEntity, resp.status, string(resp.body))
	_, _, messages := resp.problem(t)
	require.Equal(t, []string{"prompt: is not valid UTF-8 text; send the text encoded as UTF-8"}, messages)
}
