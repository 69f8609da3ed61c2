package service_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/grpcserver"
	"github.com/zimmerhq/zimmer/services/platform/surface"
)

// deepStruct is custom_metadata nesting levels objects: {"n":{"n":…{}}}.
func deepStruct(t *testing.T, levels int) *structpb.Struct {
	t.Helper()
	m := map[string]any{}
	for range levels - 1 {
		m = map[string]any{"n": m}
	}
	return mustStruct(t, m)
}

// wide is n characters that are 4 bytes each in UTF-8.
func wide(n int) string { return strings.Repeat("𝄞", n) }

// largestMetadata is custom_metadata at the byte limit in the shape that
// grows most as protobuf: an array of zeros (2 JSON bytes, 11 protobuf
// bytes each).
func largestMetadata(t *testing.T) *structpb.Struct {
	t.Helper()
	overhead := len(`{"n":[]}`)
	zeros := make([]any, (rules.MaxMetadataBytes-overhead+1)/2)
	for i := range zeros {
		zeros[i] = 0
	}
	return mustStruct(t, map[string]any{"n": zeros})
}

// largestCreate is a valid create at every limit, with md; agent_runtime
// is the longest runtime name, the largest it can validly be.
func largestCreate(slug string, md *structpb.Struct) *lifecyclev1.CreateSessionRequest {
	return &lifecyclev1.CreateSessionRequest{
		Prompt: wide(rules.MaxPromptChars), GitRoot: wide(rules.MaxGitRootChars), Branch: wide(rules.MaxBranchChars),
		Subdirectory: wide(rules.MaxSubdirectoryChars), Title: wide(rules.MaxTitleChars), Slug: slug,
		Goal: wide(rules.MaxGoalChars), AgentRoot: wide(rules.MaxAgentRootChars), AgentRuntime: rules.RuntimeClaudeCode, // only a runtime's name is one (issue 20 item 9)
		CustomMetadata: md,
	}
}

// The largest valid session is created, read back, edited, failed and
// listed through gRPC; a list page carries previews, never whole prompts
// (issue 9, item 2: two such sessions used to make every list answer
// ResourceExhausted, "message larger than max").
func TestLargestValidSessionTravelsThroughGRPC(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	ctx := context.Background()

	// The first session's metadata grows most as protobuf; the second's is
	// one long string, which is cheaper to check and lists the same.
	for slug, md := range map[string]*structpb.Struct{
		"largest-1": largestMetadata(t),
		"largest-2": mustStruct(t, map[string]any{"n": strings.Repeat("m", rules.MaxMetadataBytes-len(`{"n":""}`))}),
	} {
		req := largestCreate(slug, md)
		created, err := b.client.CreateSession(ctx, req)
		require.NoError(t, err)
		id := fmt.Sprint(created.GetSession().GetId())
		notes := wide(rules.MaxNotesChars)
		_, err = b.client.UpdateSession(ctx, &lifecyclev1.UpdateSessionRequest{SessionId: id, Notes: &notes})
		require.NoError(t, err)
		failed, err := b.client.FailSession(ctx, &lifecyclev1.FailSessionRequest{SessionId: id, FailureReason: wide(rules.MaxFailureReasonChars)})
		require.NoError(t, err)
		got, err := b.client.GetSession(ctx, &lifecyclev1.GetSessionRequest{SessionId: slug})
		require.NoError(t, err)
		s := got.GetSession()
		require.Equal(t, req.GetPrompt(), s.GetPrompt(), "read back whole")
		require.Equal(t, notes, s.GetNotes())
		require.True(t, proto.Equal(req.GetCustomMetadata(), s.GetCustomMetadata()))
		require.Less(t, proto.Size(failed), grpcserver.MaxMessageBytes/8, "well within the transport's bound")
	}

	list, err := b.client.ListSessions(ctx, &lifecyclev1.ListSessionsRequest{PerPage: rules.MaxPerPage})
	require.NoError(t, err)
	require.Len(t, list.GetSessions(), 2)
	preview := wide(rules.ListPreviewChars) + rules.PreviewEllipsis
	for _, s := range list.GetSessions() {
		require.Equal(t, preview, s.GetPrompt())
		require.Equal(t, preview, s.GetGoal())
		require.Equal(t, preview, s.GetNotes())
		require.Equal(t, preview, s.GetFailureReason())
		require.Nil(t, s.GetCustomMetadata(), "a list never carries custom_metadata")
		require.Equal(t, wide(rules.MaxTitleChars), s.GetTitle())
	}
	// A full page of the largest sessions stays a few megabytes.
	require.Less(t, proto.Size(list)/2*rules.MaxPerPage, 4<<20)

	// q still searches the whole prompt.
	found, err := b.client.ListSessions(ctx, &lifecyclev1.ListSessionsRequest{Q: "𝄞𝄞𝄞"})
	require.NoError(t, err)
	require.EqualValues(t, 2, found.GetPagination().GetTotalCount())
}

// A request beyond gRPC's default 4 MiB reaches the service, which refuses
// it naming the field, rather than the transport answering with its own
// text ("message larger than max"), which reached REST callers as a 429.
func TestOversizedRequestIsRefusedByTheService(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	_, err := b.client.CreateSession(context.Background(), &lifecyclev1.CreateSessionRequest{GitRoot: "g", Prompt: strings.Repeat("p", 6<<20)})
	st := status.Convert(err)
	require.Equal(t, codes.InvalidArgument, st.Code(), st.Message())
	require.Contains(t, st.Message(), "prompt: is longer than 500000 characters")
}

// Nothing is written for a refused create or patch, and the session a
// refused patch aimed at reads as before (items 1 and 3).
func TestBadEditsWriteNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	ctx := context.Background()
	s := b.create(t, &lifecyclev1.CreateSessionRequest{Slug: "kept", CustomMetadata: mustStruct(t, map[string]any{"a": 1})})
	id := fmt.Sprint(s.GetId())

	nul, bad := "x\x00", "\xff"
	for name, req := range map[string]*lifecyclev1.UpdateSessionRequest{
		"deep metadata":      {CustomMetadata: deepStruct(t, 3333)},
		"NUL in notes":       {Notes: &nul},
		"NUL in a value":     {CustomMetadata: mustStruct(t, map[string]any{"b": []any{"ok", nul}})},
		"NUL in the title":   {Title: &nul},
		"NUL in a slug":      {Slug: &nul},
		"merged too large":   {CustomMetadata: mustStruct(t, map[string]any{"b": strings.Repeat("a", rules.MaxMetadataBytes-10)})},
		"a class that isn't": {SchedulingClass: &nul},
	} {
		req.SessionId = id
		_, err := b.client.UpdateSession(ctx, req)
		st := status.Convert(err)
		require.Equal(t, codes.InvalidArgument, st.Code(), "%s: %v", name, err)
	}
	// invalid UTF-8 cannot even be sent through protobuf; the domain refuses
	// it for callers that could (see the domain's tests).
	_, err := b.client.UpdateSession(ctx, &lifecyclev1.UpdateSessionRequest{SessionId: id, Title: &bad})
	require.Error(t, err)

	got, err := b.client.GetSession(ctx, &lifecyclev1.GetSessionRequest{SessionId: "kept"})
	require.NoError(t, err)
	require.EqualValues(t, 1, got.GetSession().GetVersion(), "no refused edit was written")
	require.Len(t, b.timeline(t, s.GetId()), 0)

	for _, ref := range []string{"a\x00", "kept\x00"} {
		_, err := b.client.GetSession(ctx, &lifecyclev1.GetSessionRequest{SessionId: ref})
		require.Equal(t, codes.InvalidArgument, status.Code(err), "%q", ref)
	}
	_, err = b.client.ListSessions(ctx, &lifecyclev1.ListSessionsRequest{Q: nul})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	_, err = b.client.TransitionSession(ctx, &lifecyclev1.TransitionSessionRequest{SessionId: id, Event: "fail", FailureReason: nul})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	_, err = b.client.FailSession(ctx, &lifecyclev1.FailSessionRequest{SessionId: id, FailureReason: wide(rules.MaxFailureReasonChars + 1)})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
}

// A child without a scheduling class takes its parent's, like its genesis
// (item 12).
func TestSchedulingClassComesDownTheSpawnEdge(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	parent := b.create(t, &lifecyclev1.CreateSessionRequest{SchedulingClass: rules.SchedulingSpot})
	pid := parent.GetId()
	child := b.create(t, &lifecyclev1.CreateSessionRequest{ParentSessionId: &pid})
	require.Equal(t, rules.SchedulingSpot, child.GetSchedulingClass())
	chosen := b.create(t, &lifecyclev1.CreateSessionRequest{ParentSessionId: &pid, SchedulingClass: rules.SchedulingPriority})
	require.Equal(t, rules.SchedulingPriority, chosen.GetSchedulingClass())
	orphan := b.create(t, &lifecyclev1.CreateSessionRequest{})
	require.Equal(t, rules.SchedulingPriority, orphan.GetSchedulingClass())
}

// A session can be created without a prompt, to clone and wait for its
// first message (item 9).
func TestPromptIsOptional(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	resp, err := b.client.CreateSession(context.Background(), &lifecyclev1.CreateSessionRequest{GitRoot: "git@example.com:a/b.git"})
	require.NoError(t, err)
	require.Equal(t, "waiting", resp.GetSession().GetStatus())
	require.Empty(t, resp.GetSession().GetPrompt())
}

// The restore lands in needs_input from every state (item 13), and a bulk
// archive says it was one (item 14).
func TestRestoreAndBulkArchiveLines(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	ctx := context.Background()
	for _, from := range []string{"waiting", "running", "needs_input", "failed"} {
		s := b.create(t, &lifecyclev1.CreateSessionRequest{})
		id := fmt.Sprint(s.GetId())
		switch from {
		case "running":
			_, err := b.fire(t, s.GetId(), "start")
			require.NoError(t, err)
		case "needs_input":
			_, err := b.fire(t, s.GetId(), "start")
			require.NoError(t, err)
			_, err = b.fire(t, s.GetId(), "pause")
			require.NoError(t, err)
		case "failed":
			_, err := b.fire(t, s.GetId(), "fail")
			require.NoError(t, err)
		}
		_, err := b.client.ArchiveSession(ctx, &lifecyclev1.ArchiveSessionRequest{SessionId: id, Force: true})
		require.NoError(t, err)
		un, err := b.client.UnarchiveSession(ctx, &lifecyclev1.UnarchiveSessionRequest{SessionId: id})
		require.NoError(t, err)
		require.Equal(t, "needs_input", un.GetSession().GetStatus(), "restored from %s", from)
		require.Contains(t, un.GetMessage(), "archived → needs_input")
	}

	acting := int64(5225)
	for _, tt := range []struct {
		surface string
		acting  *int64
		line    string
	}{
		{surface.MCP, &acting, "by session #5225 via the MCP API (bulk)"},
		{surface.MCP, nil, "by an undeclared MCP API caller (bulk)"},
		{surface.REST, nil, "by a caller of the REST API (bulk)"},
	} {
		s := b.create(t, &lifecyclev1.CreateSessionRequest{})
		resp, err := b.client.BulkArchiveSessions(surface.Outgoing(ctx, tt.surface), &lifecyclev1.BulkArchiveSessionsRequest{
			SessionIds: []string{fmt.Sprint(s.GetId())}, ActingSessionId: tt.acting, Force: true,
		})
		require.NoError(t, err)
		require.EqualValues(t, 1, resp.GetArchivedCount())
		lines := b.timeline(t, s.GetId())
		require.Equal(t, byAdmin("[State Machine] Session moved to trash "+tt.line), []string{lines[len(lines)-1].GetMessage()})
	}

	s := b.create(t, &lifecyclev1.CreateSessionRequest{})
	_, err := b.client.ArchiveSession(surface.Outgoing(ctx, surface.MCPSelf), &lifecyclev1.ArchiveSessionRequest{SessionId: fmt.Sprint(s.GetId())})
	require.NoError(t, err)
	lines := b.timeline(t, s.GetId())
	require.Equal(t, byAdmin("[State Machine] Session moved to trash by an undeclared caller via the self-session MCP server"), []string{lines[len(lines)-1].GetMessage()})
}
