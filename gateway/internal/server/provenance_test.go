package server_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/zimmerhq/zimmer/gateway/internal/config"
	"github.com/zimmerhq/zimmer/gateway/internal/grpctest"
	"github.com/zimmerhq/zimmer/gateway/internal/lifecyclefake"
	"github.com/zimmerhq/zimmer/gateway/internal/lineagefake"
	"github.com/zimmerhq/zimmer/gateway/internal/notificationfake"
	"github.com/zimmerhq/zimmer/gateway/internal/queuefake"
	"github.com/zimmerhq/zimmer/gateway/internal/rest"
	"github.com/zimmerhq/zimmer/gateway/internal/runnerfake"
	"github.com/zimmerhq/zimmer/gateway/internal/server"
	"github.com/zimmerhq/zimmer/gateway/internal/supervisor"
	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
	"github.com/zimmerhq/zimmer/services/platform/slogx"
)

const (
	supervisorUser = "operator"
	supervisorPass = "correct horse battery staple"
)

type provenanceBundle struct {
	*testBundle
	lineage *lineagefake.Server
}

type provenanceOpts struct {
	lineageDown  bool
	noSupervisor bool
}

// setupProvenance is setup with the fake lineage ProvenanceService and the
// supervisor credentials.
func setupProvenance(t *testing.T, opts provenanceOpts) *provenanceBundle {
	t.Helper()
	fake, lineage, runner, queue, notifications := lifecyclefake.New(), lineagefake.New(), runnerfake.New(), queuefake.New(), notificationfake.New()
	lineageAddr := grpctest.Serve(t, lineage.Register)
	if opts.lineageDown {
		lineageAddr = grpctest.DeadAddr(t)
	}
	cfg := config.Config{
		HTTPAddr:         "127.0.0.1:0",
		LogLevel:         "info",
		LifecycleAddr:    grpctest.Serve(t, fake.Register),
		LineageAddr:      lineageAddr,
		QueueAddr:        grpctest.Serve(t, queue.Register),
		RunnerAddr:       grpctest.Serve(t, runner.Register),
		NotificationAddr: grpctest.Serve(t, notifications.Register),
		APIKeys:          testKey + "," + otherKey,
		AdminAPIKeys:     adminKey,
		InternalToken:    grpctest.InternalToken,
		// The console on, so that the walks meet its forms as they are.
		ConsolePasswordHash: consolePasswordHash(t),
		AdminUser:           "tadasant",
	}
	if !opts.noSupervisor {
		cfg.SupervisorUser, cfg.SupervisorPassword = supervisorUser, supervisorPass
	}
	srv, err := server.New(context.Background(), cfg, slogx.Discard())
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return &provenanceBundle{testBundle: &testBundle{url: ts.URL, fake: fake, runner: runner, queue: queue, notifications: notifications}, lineage: lineage}
}

func basic(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

func (b *provenanceBundle) supervise(t *testing.T, method, path, body string) response {
	t.Helper()
	return b.do(t, method, path, body, "Authorization", basic(supervisorUser, supervisorPass))
}

func TestSessionDetailComposesProvenance(t *testing.T) {
	t.Parallel()
	b := setupProvenance(t, provenanceOpts{})
	// What lifecycle knows: the router (#1, slug the-router) and the worker
	// it spawned (#2).
	routerID, workerID := int64(1), int64(2)
	b.fake.Handle("GetSession", func(m proto.Message) (proto.Message, error) {
		switch ref := m.(*lifecyclev1.GetSessionRequest).GetSessionId(); ref {
		case "1", "the-router":
			return &lifecyclev1.GetSessionResponse{Session: &lifecyclev1.Session{
				Id: routerID, Slug: "the-router", Title: "Router", Prompt: "route", GitRoot: "/r", Status: "waiting",
			}}, nil
		case "2":
			return &lifecyclev1.GetSessionResponse{Session: &lifecyclev1.Session{
				Id: workerID, Prompt: "work", GitRoot: "/r", ParentSessionId: &routerID, Status: "waiting",
			}}, nil
		default:
			return nil, notFound("#" + ref)
		}
	})

	b.lineage.SetProvenance(routerID, &lineagev1.GetSessionProvenanceResponse{
		SessionHierarchy: &lineagev1.SessionHierarchy{
			OriginSessionId: routerID, RootSessionIds: []int64{routerID},
			Nodes: []*lineagev1.HierarchyNode{
				{Id: routerID, Title: "Router", AgentRoot: "zimmer-router", Status: "waiting", Current: true, Genesis: "api", SchedulingClass: "priority"},
				{Id: workerID, Depth: 1, ParentSessionId: &routerID, UncleSessionIds: []int64{}, Status: "waiting"},
			},
		},
		HumanMessages: []*lineagev1.HumanMessage{
			{Id: 2, Origin: "elsewhere", Author: "juliehazz", AuthorDisplayName: "Julie", Provenance: "slack.dm", AuthoredInSessionId: workerID,
				Channel: "slack", ChannelLabel: "Slack", AuthoredInLabel: "Session #2",
				Content: "<b>keep</b> it", SlackPermalink: "https://x/p", OccurredAt: timestamppb.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))},
			{Id: 1, Origin: "here", Author: "gone", Provenance: "web_ui.new_session", AuthoredInSessionId: routerID,
				Content: "route it", OccurredAt: timestamppb.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))},
		},
	})

	for _, ref := range []string{"1", "the-router"} {
		resp := b.call(t, http.MethodGet, "/api/v1/sessions/"+ref, "")
		require.Equal(t, http.StatusOK, resp.status, string(resp.body))
		require.Empty(t, resp.header.Get(rest.DegradedHeader))
		got := resp.json(t)
		require.Len(t, got, 5, "session, status_summary, enqueued_messages, session_hierarchy and human_messages, side by side")
		require.Contains(t, got, "status_summary", "beside session, as the original answers it")
		require.Nil(t, got["status_summary"], "null until a status-summary fork of the session ended")
		require.Equal(t, []any{}, got["enqueued_messages"], "nothing queued: [], not null")
		session := got["session"].(map[string]any)
		require.Equal(t, json.Number("1"), session["id"], "ids are numbers")
		require.NotContains(t, session, "session_hierarchy", "never inside session")

		h := got["session_hierarchy"].(map[string]any)
		require.Equal(t, json.Number("1"), h["origin_session_id"])
		require.Equal(t, false, h["truncated"])
		nodes := h["nodes"].([]any)
		require.Len(t, nodes, 2)
		n1 := nodes[1].(map[string]any)
		for _, k := range []string{"id", "title", "agent_root", "status", "depth", "parent_session_id", "uncle_session_ids", "current", "genesis", "scheduling_class"} {
			require.Contains(t, n1, k)
		}
		require.Nil(t, nodes[0].(map[string]any)["parent_session_id"], "a root has a null parent")

		msgs := got["human_messages"].([]any)
		require.Len(t, msgs, 2)
		m0 := msgs[0].(map[string]any)
		require.Equal(t, "elsewhere", m0["origin"])
		require.Equal(t, "juliehazz", m0["author"])
		require.Equal(t, "Julie", m0["author_display_name"])
		require.Equal(t, "slack.dm", m0["entry_point"])
		require.Equal(t, json.Number("2"), m0["authored_in_session_id"])
		require.Equal(t, "slack", m0["channel"])
		require.Equal(t, "Slack", m0["channel_label"])
		require.Equal(t, map[string]any{"id": json.Number("2"), "label": "Session #2"}, m0["authored_in"], "where it was said, named as the hierarchy names it")
		require.Equal(t, "<b>keep</b> it", m0["content"])
		require.Equal(t, "2026-01-02T03:04:05Z", m0["occurred_at"])
		require.Contains(t, string(resp.body), `"<b>keep</b> it"`, "no HTML escaping, as protojson")
		require.Nil(t, msgs[1].(map[string]any)["author_display_name"], "a key that no longer resolves names nobody")
	}

	// A session with no record: [] (known empty), not null.
	got := b.call(t, http.MethodGet, "/api/v1/sessions/2", "").json(t)
	require.Equal(t, []any{}, got["human_messages"])

	// Errors keep the API's format, and the other routes still reach
	// grpc-gateway.
	resp := b.call(t, http.MethodGet, "/api/v1/sessions/9999", "")
	require.Equal(t, http.StatusNotFound, resp.status)
	require.NotEmpty(t, resp.errorText(t))
	require.Equal(t, http.StatusOK, b.call(t, http.MethodGet, "/api/v1/sessions", "").status)
	require.Equal(t, http.StatusUnauthorized, b.do(t, http.MethodGet, "/api/v1/sessions/1", "").status, "the key is still required")
	require.Empty(t, b.lineage.Calls("RecordHumanMessage"))
}

// Lineage down does not fail the detail: 200, both lineage keys null
// (unknown, not empty) and a header saying so.
func TestSessionDetailWithLineageDown(t *testing.T) {
	t.Parallel()
	b := setupProvenance(t, provenanceOpts{lineageDown: true})
	s := b.create(t, `{"prompt": "p", "git_root": "/r"}`)
	resp := b.call(t, http.MethodGet, "/api/v1/sessions/"+s["id"].(json.Number).String(), "")
	require.Equal(t, http.StatusOK, resp.status, string(resp.body))
	require.Contains(t, resp.header.Get(rest.DegradedHeader), "lineage")
	got := resp.json(t)
	require.Contains(t, got, "session_hierarchy")
	require.Nil(t, got["session_hierarchy"])
	require.Contains(t, got, "human_messages")
	require.Nil(t, got["human_messages"])
	require.NotNil(t, got["session"])
}

func TestSupervisorAuth(t *testing.T) {
	t.Parallel()
	b := setupProvenance(t, provenanceOpts{})

	for _, tt := range []struct {
		name   string
		header []string
	}{
		{"nothing", nil},
		{"fleet key", []string{"X-API-Key", testKey}},
		{"fleet key as bearer", []string{"Authorization", "Bearer " + testKey}},
		{"wrong password", []string{"Authorization", basic(supervisorUser, "nope")}},
		{"wrong user", []string{"Authorization", basic("admin", supervisorPass)}},
		{"fleet key as Basic password", []string{"Authorization", basic(supervisorUser, testKey)}},
	} {
		resp := b.do(t, http.MethodGet, "/supervisor/users", "", tt.header...)
		require.Equal(t, http.StatusUnauthorized, resp.status, tt.name)
		require.Equal(t, `Basic realm="zimmer-supervisor", charset="UTF-8"`, resp.header.Get("WWW-Authenticate"), tt.name)
		require.Equal(t, supervisor.UnauthorizedMessage, resp.errorText(t), tt.name)
	}

	// Basic credentials do not open the fleet API or MCP.
	require.Equal(t, http.StatusUnauthorized, b.do(t, http.MethodGet, "/api/v1/sessions", "", "Authorization", basic(supervisorUser, supervisorPass)).status)
	require.Equal(t, http.StatusUnauthorized, b.do(t, http.MethodPost, "/mcp", "{}", "Authorization", basic(supervisorUser, supervisorPass)).status)

	resp := b.supervise(t, http.MethodGet, "/supervisor/users", "")
	require.Equal(t, http.StatusOK, resp.status, string(resp.body))
	require.Contains(t, string(resp.body), `"key":"tadasant"`)
}

func TestSupervisorDisabled(t *testing.T) {
	t.Parallel()
	b := setupProvenance(t, provenanceOpts{noSupervisor: true})
	for _, header := range [][]string{nil, {"Authorization", basic("", "")}, {"X-API-Key", testKey}} {
		resp := b.do(t, http.MethodGet, "/supervisor/users", "", header...)
		require.Equal(t, http.StatusServiceUnavailable, resp.status)
		require.Equal(t, supervisor.DisabledMessage, resp.errorText(t))
	}
}

func TestSupervisorUsers(t *testing.T) {
	t.Parallel()
	b := setupProvenance(t, provenanceOpts{})

	b.lineage.Answer("CreateUser", &lineagev1.CreateUserResponse{User: &lineagev1.User{Key: "sam", DisplayName: "Sam", SlackUserIds: []string{"U1"}}}, nil)
	resp := b.supervise(t, http.MethodPost, "/supervisor/users", `{"key": "sam", "display_name": "Sam", "slack_user_ids": ["U1"]}`)
	require.Equal(t, http.StatusCreated, resp.status, string(resp.body))
	require.Equal(t, "sam", resp.json(t)["user"].(map[string]any)["key"])

	b.lineage.Answer("UpdateUser", &lineagev1.UpdateUserResponse{User: &lineagev1.User{
		Key: "juliehazz", DisplayName: "Julie", Notes: "Owns the UI.", Email: "julie@example.com",
	}}, nil)
	resp = b.supervise(t, http.MethodPatch, "/supervisor/users/juliehazz", `{"notes": "Owns the UI.", "email": "julie@example.com"}`)
	require.Equal(t, http.StatusOK, resp.status, string(resp.body))
	user := resp.json(t)["user"].(map[string]any)
	require.Equal(t, "Owns the UI.", user["notes"])
	require.Equal(t, "julie@example.com", user["email"])

	b.lineage.Answer("UpdateUser", nil, status.Error(codes.Aborted, `slack user ID U1 already belongs to user "sam"; remove it there first`))
	resp = b.supervise(t, http.MethodPatch, "/supervisor/users/juliehazz", `{"slack_user_ids": ["U1"]}`)
	require.Equal(t, http.StatusConflict, resp.status)
	require.Contains(t, resp.errorText(t), `slack user ID U1 already belongs to user "sam"`)

	resp = b.supervise(t, http.MethodPatch, "/supervisor/users/juliehazz", `{"key": "julie"}`)
	require.Equal(t, http.StatusUnprocessableEntity, resp.status)
	require.Contains(t, resp.errorText(t), "key is immutable")

	resp = b.supervise(t, http.MethodPost, "/supervisor/users", `{"key": "x", "display_name": "X", "role": "admin"}`)
	require.Equal(t, http.StatusBadRequest, resp.status)
	require.Contains(t, resp.errorText(t), "unknown field")

	for _, tt := range []struct{ method, path string }{
		{http.MethodDelete, "/supervisor/users/sam"},
		{http.MethodPut, "/supervisor/users/sam"},
		{http.MethodPost, "/supervisor/human_messages"},
		{http.MethodGet, "/supervisor/human_messages"},
	} {
		resp = b.supervise(t, tt.method, tt.path, `{}`)
		require.Contains(t, []int{http.StatusNotFound, http.StatusMethodNotAllowed}, resp.status, "%s %s", tt.method, tt.path)
	}
	require.Empty(t, b.lineage.Calls("RecordHumanMessage"))
	require.Len(t, b.lineage.Calls("CreateUser"), 1)
	require.True(t, strings.HasPrefix(supervisor.Routes[0], "GET /supervisor/"))
}
