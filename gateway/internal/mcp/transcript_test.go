package mcp_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/zimmerhq/zimmer/gateway/internal/grpctest"
	"github.com/zimmerhq/zimmer/gateway/internal/lifecyclefake"
	"github.com/zimmerhq/zimmer/gateway/internal/mcp"
	"github.com/zimmerhq/zimmer/gateway/internal/runnerfake"
	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	runnerv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/runner/v1"
	"github.com/zimmerhq/zimmer/services/platform/slogx"
)

func setupWithRunner(t *testing.T) (*testBundle, *runnerfake.Server) {
	t.Helper()
	fake, runner := lifecyclefake.New(), runnerfake.New()
	conn := grpctest.DialAsService(t, grpctest.Serve(t, func(g *grpc.Server) { fake.Register(g); runner.Register(g) }))
	h := mcp.NewHandler(lifecyclev1.NewLifecycleServiceClient(conn), slogx.Discard(), mcp.Options{
		Version: "test", Runner: runnerv1.NewRunnerServiceClient(conn),
	})
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return &testBundle{url: ts.URL, fake: fake, logs: &syncBuffer{}}, runner
}

func TestGetSessionIncludesTheLastTurnsTranscript(t *testing.T) {
	t.Parallel()
	b, runner := setupWithRunner(t)
	c := b.connect(t, "/")
	b.fake.Answer("GetSession", &lifecyclev1.GetSessionResponse{Session: &lifecyclev1.Session{Id: 7, Slug: "worker"}}, nil)

	res := call(t, c, mcp.ToolGetSession, map[string]any{"session_id": "worker"})
	require.False(t, res.IsError, textOf(res))
	require.NotContains(t, textOf(res), "Transcript", "only when asked")
	require.Empty(t, runner.Calls())

	long := strings.Repeat("é", mcp.TranscriptLineChars+5)
	runner.SetTranscript(&runnerv1.GetTranscriptResponse{
		Turns: []*runnerv1.TranscriptTurn{
			{TurnId: "turn-2", SessionId: 7, StartedAt: timestamppb.New(runnerfake.Now), StoredLines: 250},
			{TurnId: "turn-1", SessionId: 7, StartedAt: timestamppb.New(runnerfake.Now), EndedAt: timestamppb.New(runnerfake.Now), Outcome: "exited 0"},
		},
		Lines: []*runnerv1.TranscriptLine{
			{TurnId: "turn-2", Kind: "assistant", Text: "first\nsecond"},
			{TurnId: "turn-2", Kind: "tool", Text: long, IsError: true},
			{TurnId: "turn-1", Kind: "result", Text: "an older turn"},
		},
	})
	res = call(t, c, mcp.ToolGetSession, map[string]any{"session_id": "worker", "include_transcript": true})
	require.False(t, res.IsError, textOf(res))
	text := textOf(res)
	require.Contains(t, text, "### Last Turn's Transcript\n\nTurn `turn-2` started 2026-01-02T03:04:05Z and is still running. "+
		"Showing its first 2 of 250 lines; all of them: GET /api/v1/sessions/7/transcript?turn=turn-2.\n\n"+
		"- [assistant] first\n  second\n"+
		"- [tool (error)] "+strings.Repeat("é", mcp.TranscriptLineChars)+"…\n")
	require.NotContains(t, text, "an older turn", "the last turn only")
	req := runner.Calls("GetTranscript")[0].Request.(*runnerv1.GetTranscriptRequest)
	require.True(t, proto.Equal(&runnerv1.GetTranscriptRequest{SessionId: "7", PageSize: mcp.TranscriptLines}, req), "by the resolved id: %v", req)

	runner.SetTranscript(&runnerv1.GetTranscriptResponse{})
	res = call(t, c, mcp.ToolGetSession, map[string]any{"session_id": "7", "include_transcript": true})
	require.Contains(t, textOf(res), "### Last Turn's Transcript\n\nNo turn has run yet.\n")

	runner.FailWith(status.Error(codes.Unavailable, "connection refused"))
	res = call(t, c, mcp.ToolGetSession, map[string]any{"session_id": "7", "include_transcript": true})
	require.False(t, res.IsError, "the session itself is known")
	require.Contains(t, textOf(res), "### Last Turn's Transcript\n\nUnavailable: ")
	require.NotContains(t, textOf(res), "connection refused")
}
