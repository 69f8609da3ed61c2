package service_test

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	runnerv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/runner/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/config"
)

// searchFake is the runner's SearchTranscripts: the sessions whose
// "transcript" (set per session) holds the query, newest session first.
type searchFake struct {
	runnerv1.UnimplementedRunnerServiceServer

	mu      sync.Mutex
	lines   map[int64]string
	limits  []int32
	failing bool
}

func (f *searchFake) SearchTranscripts(_ context.Context, req *runnerv1.SearchTranscriptsRequest) (*runnerv1.SearchTranscriptsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.limits = append(f.limits, req.GetLimit())
	if f.failing {
		return nil, status.Error(codes.Unavailable, "runner restarting")
	}
	resp := &runnerv1.SearchTranscriptsResponse{}
	for id, text := range f.lines {
		if strings.Contains(strings.ToLower(text), strings.ToLower(req.GetQuery())) {
			resp.SessionIds = append(resp.SessionIds, id)
		}
	}
	return resp, nil
}

// TestListSessionsByTranscriptAgentRootAndGenesis: the Advanced filters
// through ListSessions — the transcript words narrow to the sessions the
// runner's index names, with the other filters (status, agent root,
// genesis) still applied; words the search cannot use are refused with
// InvalidArgument, and a runner that does not answer is Unavailable, never
// an empty list.
func TestListSessionsByTranscriptAgentRootAndGenesis(t *testing.T) {
	t.Parallel()
	runner := &searchFake{lines: map[int64]string{}}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer()
	runnerv1.RegisterRunnerServiceServer(srv, runner)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	b := setupWithConfig(t, func(c *config.Config) { c.RunnerAddr, c.RunnerTimeout = lis.Addr().String(), 5*time.Second })
	ctx := t.Context()

	a := b.create(t, &lifecyclev1.CreateSessionRequest{Prompt: "a", GitRoot: "/tmp/r", AgentRoot: "alpha"})
	c := b.create(t, &lifecyclev1.CreateSessionRequest{Prompt: "c", GitRoot: "/tmp/r", AgentRoot: "beta"})
	child := b.create(t, &lifecyclev1.CreateSessionRequest{Prompt: "child", GitRoot: "/tmp/r", AgentRoot: "alpha", ParentSessionId: &a.Id})
	b.create(t, &lifecyclev1.CreateSessionRequest{Prompt: "quiet", GitRoot: "/tmp/r", AgentRoot: "alpha"})
	runner.mu.Lock()
	runner.lines[a.GetId()] = "open ENOENT: no such file"
	runner.lines[c.GetId()] = "ENOENT again"
	runner.lines[child.GetId()] = "enoent in the child"
	runner.mu.Unlock()

	list := func(req *lifecyclev1.ListSessionsRequest) []int64 {
		t.Helper()
		resp, err := b.client.ListSessions(ctx, req)
		require.NoError(t, err)
		var ids []int64
		for _, s := range resp.GetSessions() {
			ids = append(ids, s.GetId())
		}
		require.EqualValues(t, len(ids), resp.GetPagination().GetTotalCount())
		return ids
	}
	require.ElementsMatch(t, []int64{a.GetId(), c.GetId(), child.GetId()}, list(&lifecyclev1.ListSessionsRequest{Transcript: "ENOENT"}))
	require.ElementsMatch(t, []int64{a.GetId(), child.GetId()}, list(&lifecyclev1.ListSessionsRequest{Transcript: "enoent", AgentRoot: "alpha"}))
	require.Equal(t, []int64{child.GetId()}, list(&lifecyclev1.ListSessionsRequest{Transcript: "enoent", Genesis: a.GetGenesis(), AgentRoot: "alpha", Q: "child"}),
		"genesis: the child inherits its parent's")
	require.Empty(t, list(&lifecyclev1.ListSessionsRequest{Transcript: "nowhere"}), "no match lists nothing, not everything")
	require.Empty(t, list(&lifecyclev1.ListSessionsRequest{Transcript: "enoent", Status: []string{"archived"}}), "the status filter still narrows")
	runner.mu.Lock()
	require.Equal(t, int32(1000), runner.limits[0], "the search is bounded")
	runner.mu.Unlock()

	for _, words := range []string{"!!! ...", strings.Repeat("w", 201)} {
		_, err = b.client.ListSessions(ctx, &lifecyclev1.ListSessionsRequest{Transcript: words})
		require.Equal(t, codes.InvalidArgument, status.Code(err), words)
		require.Contains(t, status.Convert(err).Message(), "transcript")
	}

	runner.mu.Lock()
	runner.failing = true
	runner.mu.Unlock()
	_, err = b.client.ListSessions(ctx, &lifecyclev1.ListSessionsRequest{Transcript: "enoent"})
	require.Equal(t, codes.Unavailable, status.Code(err))
	require.Contains(t, status.Convert(err).Message(), "retry")
}

// Without a runner the transcript filter is refused saying why; the other
// filters work as before.
func TestListSessionsByTranscriptWithoutARunnerIsRefused(t *testing.T) {
	t.Parallel()
	b := setupWithConfig(t, func(*config.Config) {})
	_, err := b.client.ListSessions(t.Context(), &lifecyclev1.ListSessionsRequest{Transcript: "enoent"})
	require.Equal(t, codes.FailedPrecondition, status.Code(err))
	require.Contains(t, status.Convert(err).Message(), "LIFECYCLE_RUNNER_ADDR")
}
