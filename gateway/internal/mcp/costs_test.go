package mcp_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/zimmerhq/zimmer/gateway/internal/auth"
	"github.com/zimmerhq/zimmer/gateway/internal/grpctest"
	"github.com/zimmerhq/zimmer/gateway/internal/lifecyclefake"
	"github.com/zimmerhq/zimmer/gateway/internal/mcp"
	"github.com/zimmerhq/zimmer/gateway/internal/runnerfake"
	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	runnerv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/runner/v1"
	"github.com/zimmerhq/zimmer/services/platform/grpcclient"
	"github.com/zimmerhq/zimmer/services/platform/principal"
)

// costBundle serves the MCP handler for requests authenticated as p, its
// calls forwarding p (as the gateway's connections do) to fake lifecycle
// and runner services.
func costBundle(t *testing.T, p principal.Principal) (*testBundle, *runnerfake.Server) {
	t.Helper()
	fake, runner := lifecyclefake.New(), runnerfake.New()
	dial := func(addr string) *grpc.ClientConn {
		conn, err := grpcclient.Dial(addr, grpcclient.AsService("gateway", grpctest.InternalToken), grpc.WithChainUnaryInterceptor(auth.ForwardPrincipal))
		require.NoError(t, err)
		t.Cleanup(func() { _ = conn.Close() })
		return conn
	}
	conn := dial(grpctest.Serve(t, fake.Register))
	rconn := dial(grpctest.Serve(t, runner.Register))
	logs := &syncBuffer{}
	h := mcp.NewHandler(lifecyclev1.NewLifecycleServiceClient(conn), slog.New(slog.NewJSONHandler(logs, nil)),
		mcp.Options{Version: "test", Runner: runnerv1.NewRunnerServiceClient(rconn)})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(principal.NewContext(r.Context(), p)))
	}))
	t.Cleanup(ts.Close)
	return &testBundle{url: ts.URL, fake: fake, logs: logs}, runner
}

// Each response a session credential receives is reported to the runner
// by its tool and size, as the gateway itself (no client principal), with
// get_session_provenance's named so the runner keeps it apart; an
// operator's calls are nobody's context and are not counted.
func TestSessionsMCPResponsesAreCounted(t *testing.T) {
	t.Parallel()
	b, runner := costBundle(t, credential(7, principal.ScopeSelf))
	c := b.connect(t, "/")
	res := call(t, c, "get_session", map[string]any{"session_id": "7"})
	res2 := call(t, c, "get_session_provenance", map[string]any{"session_id": "7"})
	require.Eventually(t, func() bool { return len(runner.Calls("RecordMcpResponse")) == 2 }, 10*time.Second, 10*time.Millisecond)
	byTool := map[string]*runnerv1.RecordMcpResponseRequest{}
	for _, call := range runner.Calls("RecordMcpResponse") {
		req := call.Request.(*runnerv1.RecordMcpResponseRequest)
		byTool[req.GetTool()] = req
		require.Equal(t, principal.Principal{Kind: principal.Service, Service: "gateway"}, call.Principal, "the gateway reports as itself, never as the credential")
		require.Equal(t, int64(7), req.GetSessionId())
		require.NotEmpty(t, req.GetCallId())
	}
	require.Greater(t, byTool["get_session"].GetBytes(), int64(len(textOf(res))), "the response's JSON, text and structure, in bytes")
	require.Greater(t, byTool["get_session_provenance"].GetBytes(), int64(len(textOf(res2))))

	op, runner := costBundle(t, principal.Principal{Kind: principal.Operator})
	call(t, op.connect(t, "/"), "get_session", map[string]any{"session_id": "7"})
	time.Sleep(200 * time.Millisecond)
	require.Empty(t, runner.Calls("RecordMcpResponse"), "an operator's call is in no session's context")
}

func TestGetCostsAsksTheRunner(t *testing.T) {
	t.Parallel()
	b, runner := costBundle(t, principal.Principal{Kind: principal.Operator})
	runner.Answer("GetCosts", &runnerv1.GetCostsResponse{From: "2026-11-03", To: "2026-12-02",
		Total:  &runnerv1.CostLine{Bytes: 300, InputTokens: 1000, CostUsd: 0.0125},
		ByKind: []*runnerv1.CostLine{{Kind: "session_hierarchy", Bytes: 300}}}, nil)
	res := call(t, b.connect(t, "/"), "get_costs", map[string]any{"from": "2026-11-03", "session_id": "7"})
	require.False(t, res.IsError, textOf(res))
	require.Contains(t, textOf(res), "## Costs")
	require.Contains(t, textOf(res), "- session_hierarchy: 300 bytes")
	calls := runner.Calls("GetCosts")
	require.Len(t, calls, 1)
	req := calls[0].Request.(*runnerv1.GetCostsRequest)
	require.Equal(t, "2026-11-03", req.GetFrom())
	require.Equal(t, "7", req.GetSessionId())
}

// A runner that does not answer is asked again with the same call id, so
// the runner (which keys entries by it) counts the response once; the
// agent's answer never waits for it.
func TestAnUnansweredCostReportIsSentAgainUnderItsCallID(t *testing.T) {
	t.Parallel()
	b, runner := costBundle(t, credential(7, principal.ScopeSelf))
	var mu sync.Mutex
	failures := 1
	runner.Handle("RecordMcpResponse", func(proto.Message) (proto.Message, error) {
		mu.Lock()
		defer mu.Unlock()
		if failures > 0 {
			failures--
			return nil, status.Error(codes.Unavailable, "runner restarting")
		}
		return &runnerv1.RecordMcpResponseResponse{}, nil
	})
	res := call(t, b.connect(t, "/"), "get_session", map[string]any{"session_id": "7"})
	require.NotNil(t, res)
	require.Eventually(t, func() bool { return len(runner.Calls("RecordMcpResponse")) == 2 }, 10*time.Second, 20*time.Millisecond)
	calls := runner.Calls("RecordMcpResponse")
	first, again := calls[0].Request.(*runnerv1.RecordMcpResponseRequest), calls[1].Request.(*runnerv1.RecordMcpResponseRequest)
	require.True(t, proto.Equal(first, again), "the same report, call id and all: %v %v", first, again)
}
