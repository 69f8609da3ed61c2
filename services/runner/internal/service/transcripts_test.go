package service_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	runnerv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/runner/v1"
	"github.com/zimmerhq/zimmer/services/platform/principal"
	"github.com/zimmerhq/zimmer/services/platform/servicetest"
	"github.com/zimmerhq/zimmer/services/runner/internal/agent"
	"github.com/zimmerhq/zimmer/services/runner/internal/service"
)

func requireCode(t *testing.T, err error, code codes.Code, msgPart string) {
	t.Helper()
	st, ok := status.FromError(err)
	require.True(t, ok, "not a status: %v", err)
	require.Equal(t, code, st.Code(), st.Message())
	require.Contains(t, st.Message(), msgPart)
}

// The transcript methods on the real service: what a turn appends through
// the service's Recorder is paged newest turn first and followed live, and
// a session credential reads only what its scopes allow.
func TestTranscriptMethods(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc := servicetest.New(t, service.New, servicetest.Config(t, service.MigrationSets...))
	stop := servicetest.RunInBackground(t, svc.Run)
	defer stop()
	operator := runnerv1.NewRunnerServiceClient(servicetest.DialOperator(t, svc.Addr()))
	gateway := runnerv1.NewRunnerServiceClient(servicetest.DialAsService(t, svc.Addr(), "gateway"))

	for _, l := range []struct{ turn, text string }{{"t1", "a"}, {"t1", "b"}, {"t2", "c"}} {
		require.NoError(t, svc.Transcripts.Append(ctx, 7, l.turn, agent.Event{Kind: agent.KindAssistant, Text: l.text, Raw: l.text}))
	}

	resp, err := operator.GetTranscript(ctx, &runnerv1.GetTranscriptRequest{SessionId: "7", PageSize: 2})
	require.NoError(t, err)
	require.Equal(t, []string{"c", "a"}, lineTexts(resp.GetLines()))
	require.Equal(t, []string{"t2", "t1"}, []string{resp.GetTurns()[0].GetTurnId(), resp.GetTurns()[1].GetTurnId()})
	require.Nil(t, resp.GetTurns()[0].GetEndedAt(), "a running turn has no end")
	require.NotEmpty(t, resp.GetNextPageToken())
	resp, err = operator.GetTranscript(ctx, &runnerv1.GetTranscriptRequest{SessionId: "7", PageSize: 2, PageToken: resp.GetNextPageToken()})
	require.NoError(t, err)
	require.Equal(t, []string{"b"}, lineTexts(resp.GetLines()))
	require.Empty(t, resp.GetNextPageToken())
	resp, err = operator.GetTranscript(ctx, &runnerv1.GetTranscriptRequest{SessionId: "7", Turn: "t1"})
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, lineTexts(resp.GetLines()))

	_, err = operator.GetTranscript(ctx, &runnerv1.GetTranscriptRequest{SessionId: "my-slug"})
	requireCode(t, err, codes.InvalidArgument, "session_id: must be a session's numeric id")
	_, err = operator.GetTranscript(ctx, &runnerv1.GetTranscriptRequest{SessionId: "7", PageSize: 5000, PageToken: "nope!"})
	requireCode(t, err, codes.InvalidArgument, "page_size")
	requireCode(t, err, codes.InvalidArgument, "page_token")
	_, err = operator.GetTranscript(ctx, &runnerv1.GetTranscriptRequest{SessionId: "7", Follow: true})
	requireCode(t, err, codes.InvalidArgument, "FollowTranscript")

	// Session credentials, as the gateway forwards them.
	as := func(session int64, scopes ...string) context.Context {
		c, err := principal.Outgoing(ctx, principal.Principal{Kind: principal.Session, SessionID: session, Scopes: scopes})
		require.NoError(t, err)
		return c
	}
	_, err = gateway.GetTranscript(as(7, principal.ScopeSelf), &runnerv1.GetTranscriptRequest{SessionId: "7"})
	require.NoError(t, err, "its own")
	_, err = gateway.GetTranscript(as(8, principal.ScopeSelf, principal.ScopeSessionsRead), &runnerv1.GetTranscriptRequest{SessionId: "7"})
	require.NoError(t, err, "any, with sessions.read")
	_, err = gateway.GetTranscript(as(8, principal.ScopeSelf), &runnerv1.GetTranscriptRequest{SessionId: "7"})
	requireCode(t, err, codes.PermissionDenied, "session #8's credential may read only its own session's transcript")
	follow, err := gateway.FollowTranscript(as(8, principal.ScopeSelf), &runnerv1.FollowTranscriptRequest{SessionId: "7"})
	require.NoError(t, err)
	_, err = follow.Recv()
	requireCode(t, err, codes.PermissionDenied, "session #8's credential")

	// Following: the newest turn from its start, then each new line.
	followCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	follow, err = operator.FollowTranscript(followCtx, &runnerv1.FollowTranscriptRequest{SessionId: "7"})
	require.NoError(t, err)
	firstResp, err := follow.Recv()
	require.NoError(t, err)
	first := firstResp.GetLine()
	require.Equal(t, "c", first.GetText())
	require.NoError(t, svc.Transcripts.Append(ctx, 7, "t2", agent.Event{Kind: agent.KindResult, Text: "done"}))
	nextResp, err := follow.Recv()
	require.NoError(t, err)
	next := nextResp.GetLine()
	require.Equal(t, "done", next.GetText())
	require.EqualValues(t, 2, next.GetSeq())
	require.Greater(t, next.GetId(), first.GetId())
	cancel()
	_, err = follow.Recv()
	requireCode(t, err, codes.Canceled, "")
}

// A follow ends, cleanly, when the runner stops: it does not hold the
// graceful stop for the whole shutdown grace.
func TestTranscriptFollowEndsWhenTheRunnerStops(t *testing.T) {
	t.Parallel()
	svc := servicetest.New(t, service.New, servicetest.Config(t, service.MigrationSets...))
	stop := servicetest.RunInBackground(t, svc.Run)
	operator := runnerv1.NewRunnerServiceClient(servicetest.DialOperator(t, svc.Addr()))
	follow, err := operator.FollowTranscript(t.Context(), &runnerv1.FollowTranscriptRequest{SessionId: "7"})
	require.NoError(t, err)
	require.NoError(t, svc.Transcripts.Append(context.Background(), 7, "t", agent.Event{Text: "running"}))
	_, err = follow.Recv()
	require.NoError(t, err)

	start := time.Now()
	stop()
	_, err = follow.Recv()
	require.ErrorIs(t, err, io.EOF, "the stream ends, it does not fail")
	require.Less(t, time.Since(start), 4*time.Second, "well within the 5 s shutdown grace")
}

func lineTexts(lines []*runnerv1.TranscriptLine) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l.GetText()
	}
	return out
}
