package service_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
	"github.com/zimmerhq/zimmer/services/lineage/internal/service"
	"github.com/zimmerhq/zimmer/services/platform/grpcclient"
	"github.com/zimmerhq/zimmer/services/platform/host"
	"github.com/zimmerhq/zimmer/services/platform/servicetest"
)

type provenanceBundle struct {
	lineage    lineageClient
	provenance lineagev1.ProvenanceServiceClient
}

func setupProvenance(t *testing.T, admin string) provenanceBundle {
	t.Helper()
	newFunc := func(ctx context.Context, cfg host.Config, logger *slog.Logger) (*service.Service, error) {
		return service.NewWithAdmin(ctx, cfg, logger, admin)
	}
	svc := servicetest.New(t, newFunc, servicetest.Config(t, service.MigrationSets...))
	servicetest.RunInBackground(t, svc.Run)
	conn, err := grpcclient.Dial(svc.Addr(), "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return provenanceBundle{newLineageClient(conn), lineagev1.NewProvenanceServiceClient(conn)}
}

// tree applies #101 (router) → #102, #103.
func (b provenanceBundle) tree(t *testing.T) {
	t.Helper()
	parent := int64(101)
	for i, s := range []*lifecyclev1.Session{
		{Id: 101, Title: "Router", AgentRoot: "zimmer-router", Genesis: "web_ui", SchedulingClass: "priority"},
		{Id: 102, Title: "Worker", AgentRoot: "zimmer", ParentSessionId: &parent},
		{Id: 103, Title: "Other worker", AgentRoot: "zimmer", ParentSessionId: &parent},
	} {
		_, err := b.lineage.ConsumeSessionEvent(t.Context(), created("5b0e7a4e-0000-4000-8000-00000000010"+string(rune('1'+i)), s))
		require.NoError(t, err)
	}
}

func TestProvenanceThroughGRPC(t *testing.T) {
	t.Parallel()
	b := setupProvenance(t, "")
	ctx := t.Context()
	b.tree(t)

	// The web UI's admin is tadasant by default.
	rec, err := b.provenance.RecordHumanMessage(ctx, &lineagev1.RecordHumanMessageRequest{
		Actor:      &lineagev1.RecordHumanMessageRequest_WebUiAdmin{WebUiAdmin: true},
		Provenance: "web_ui.new_session", AuthoredInSessionId: 101, Content: "Classify sessions.",
		OccurredAt: timestamppb.New(time.Unix(1_700_000_100, 0)),
	})
	require.NoError(t, err)
	require.True(t, rec.GetRecorded())
	require.Equal(t, "tadasant", rec.GetMessage().GetAuthor())

	// A Slack ID on no row records nothing.
	slack := &lineagev1.RecordHumanMessageRequest{
		Actor:      &lineagev1.RecordHumanMessageRequest_SlackUserId{SlackUserId: "U42"},
		Provenance: "slack.dm", AuthoredInSessionId: 102, Content: "Keep it nullable.",
		SlackPermalink: "https://acme.slack.com/archives/D1/p1", OccurredAt: timestamppb.New(time.Unix(1_700_000_200, 0)),
	}
	rec, err = b.provenance.RecordHumanMessage(ctx, slack)
	require.NoError(t, err)
	require.False(t, rec.GetRecorded())
	require.Contains(t, rec.GetNotRecordedReason(), "U42 belongs to nobody")

	// Map it at the roster, then it records, attributed to Julie.
	_, err = b.provenance.UpdateUser(ctx, &lineagev1.UpdateUserRequest{Key: "juliehazz", SlackUserIds: []string{"U42"}, SetSlackUserIds: true, Notes: ptrTo("Owns the UI.")})
	require.NoError(t, err)
	rec, err = b.provenance.RecordHumanMessage(ctx, slack)
	require.NoError(t, err)
	require.True(t, rec.GetRecorded())
	require.Equal(t, "juliehazz", rec.GetMessage().GetAuthor())

	// A Slack ID never belongs to two users.
	_, err = b.provenance.UpdateUser(ctx, &lineagev1.UpdateUserRequest{Key: "tadasant", SlackUserIds: []string{"U42"}, SetSlackUserIds: true})
	require.Equal(t, codes.Aborted, status.Code(err))
	require.Contains(t, status.Convert(err).Message(), `slack user ID U42 already belongs to user "juliehazz"`)
	_, err = b.provenance.CreateUser(ctx, &lineagev1.CreateUserRequest{Key: "tadasant", DisplayName: "Again"})
	require.Equal(t, codes.AlreadyExists, status.Code(err))

	// Provenance must match the actor.
	_, err = b.provenance.RecordHumanMessage(ctx, &lineagev1.RecordHumanMessageRequest{
		Actor:      &lineagev1.RecordHumanMessageRequest_WebUiAdmin{WebUiAdmin: true},
		Provenance: "slack.dm", AuthoredInSessionId: 102, Content: "x",
	})
	require.Equal(t, codes.InvalidArgument, status.Code(err))

	// Here and elsewhere, from each session.
	for _, tt := range []struct {
		session         int64
		here, elsewhere int32
		humanHere       bool
	}{
		{101, 1, 1, true},
		{102, 1, 1, true},
		{103, 0, 2, false},
	} {
		p, err := b.provenance.GetSessionProvenance(ctx, &lineagev1.GetSessionProvenanceRequest{SessionId: tt.session})
		require.NoError(t, err)
		require.Equal(t, tt.here, p.GetHereCount(), "session %d", tt.session)
		require.Equal(t, tt.elsewhere, p.GetElsewhereCount(), "session %d", tt.session)
		require.Equal(t, tt.humanHere, p.GetHumanMessageHere(), "session %d", tt.session)
		require.False(t, p.GetElsewhereCountIsFloor())
		require.Len(t, p.GetSessionHierarchy().GetNodes(), 3)
		require.Equal(t, int64(101), p.GetSessionHierarchy().GetOriginSessionId())
		require.Len(t, p.GetHumanMessages(), 2)
		// Oldest first: the conversation in the order it was said.
		first, last := p.GetHumanMessages()[0], p.GetHumanMessages()[1]
		require.Equal(t, "tadasant", first.GetAuthor(), "oldest first")
		require.Equal(t, "juliehazz", last.GetAuthor())
		require.Equal(t, "Julie", last.GetAuthorDisplayName())
		require.Equal(t, []string{"web_ui", "Web UI", "Router"}, []string{first.GetChannel(), first.GetChannelLabel(), first.GetAuthoredInLabel()})
		require.Equal(t, []string{"slack", "Slack", "Worker"}, []string{last.GetChannel(), last.GetChannelLabel(), last.GetAuthoredInLabel()})
		require.Zero(t, p.GetOlderCount())
		require.Contains(t, p.GetMarkdown(), "### Session Hierarchy")
		require.Contains(t, p.GetMarkdown(), "### Human Messages")
		require.Contains(t, p.GetMarkdown(), "### People")
	}

	blocks, err := b.provenance.GetPromptBlocks(ctx, &lineagev1.GetPromptBlocksRequest{SessionId: 103, ProvenanceViaMcpEnabled: true})
	require.NoError(t, err)
	require.Contains(t, blocks.GetHumanMessages(), "Authored in this session: 0. Elsewhere in the hierarchy: 2.")
	require.Contains(t, blocks.GetHumanMessages(), "get_session_provenance")
	require.NotContains(t, blocks.GetText(), "nullable")
	blocks, err = b.provenance.GetPromptBlocks(ctx, &lineagev1.GetPromptBlocksRequest{SessionId: 103})
	require.NoError(t, err)
	require.Contains(t, blocks.GetHumanMessages(), "  > Keep it nullable.\n")
	require.Contains(t, blocks.GetHumanMessages(), "<people>\n- Notes on juliehazz (Julie):\n  > Owns the UI.\n</people>")

	// A session lineage has not heard of yet is alone, with its records.
	p, err := b.provenance.GetSessionProvenance(ctx, &lineagev1.GetSessionProvenanceRequest{SessionId: 999})
	require.NoError(t, err)
	require.Len(t, p.GetSessionHierarchy().GetNodes(), 1)
	require.Zero(t, p.GetHereCount()+p.GetElsewhereCount())
	blocks, err = b.provenance.GetPromptBlocks(ctx, &lineagev1.GetPromptBlocksRequest{SessionId: 999})
	require.NoError(t, err)
	require.Empty(t, blocks.GetText(), "alone and no records: no block at all")
}

func TestAdminNamingNobodyRecordsNothing(t *testing.T) {
	t.Parallel()
	b := setupProvenance(t, "tadasnat")
	rec, err := b.provenance.RecordHumanMessage(t.Context(), &lineagev1.RecordHumanMessageRequest{
		Actor:      &lineagev1.RecordHumanMessageRequest_WebUiAdmin{WebUiAdmin: true},
		Provenance: "web_ui.follow_up", AuthoredInSessionId: 5, Content: "do it",
	})
	require.NoError(t, err)
	require.False(t, rec.GetRecorded())
	require.Contains(t, rec.GetNotRecordedReason(), `the admin "tadasnat" (ZIMMER_ADMIN_USER) is not in the users roster`)
	p, err := b.provenance.GetSessionProvenance(t.Context(), &lineagev1.GetSessionProvenanceRequest{SessionId: 5})
	require.NoError(t, err)
	require.Empty(t, p.GetHumanMessages())
}

func ptrTo[T any](v T) *T { return &v }
