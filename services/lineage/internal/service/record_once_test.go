package service_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
)

// TestARetriedRecordIsRecordedOnce is the invariant "no forged, no
// duplicated human message" at lineage's gRPC surface: a boundary records,
// crashes before noting it done (its answer lost), and records again under
// the same key — after the roster changed, and racing itself — and one
// message exists, which every retry is answered with. The same key saying
// something else is refused ALREADY_EXISTS and records nothing.
func TestARetriedRecordIsRecordedOnce(t *testing.T) {
	t.Parallel()
	b := setupProvenance(t, "")
	ctx := t.Context()
	b.tree(t)
	_, err := b.provenance.UpdateUser(ctx, &lineagev1.UpdateUserRequest{Key: "juliehazz", SlackUserIds: []string{"U42"}, SetSlackUserIds: true})
	require.NoError(t, err)
	said42 := said(t, ctx, slackU42)
	msg := &lineagev1.RecordHumanMessageRequest{
		Provenance: "slack.channel_message", AuthoredInSessionId: 102, Content: "Ship it on Friday.",
		SlackPermalink: "https://acme.slack.com/archives/C1/p1700000100000200", OccurredAt: timestamppb.New(time.Unix(1_700_000_100, 200_000)),
		IdempotencyKey: "slack/Ev0FIRST01",
	}

	// The first call records; its answer is lost with the boundary.
	first, err := b.provenance.RecordHumanMessage(said42, msg)
	require.NoError(t, err)
	require.True(t, first.GetRecorded())
	require.False(t, first.GetAlreadyRecorded())

	// The retry, and a flurry of them at once: the first record, each time.
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			again, err := b.provenance.RecordHumanMessage(said42, msg)
			if assert.NoError(t, err) {
				assert.True(t, again.GetAlreadyRecorded())
				assert.True(t, proto.Equal(first.GetMessage(), again.GetMessage()), "%v != %v", first.GetMessage(), again.GetMessage())
			}
		})
	}
	wg.Wait()

	// The roster changed before the retry: still the first record, still
	// Julie's, because that is who said it.
	_, err = b.provenance.UpdateUser(ctx, &lineagev1.UpdateUserRequest{Key: "juliehazz", SetSlackUserIds: true})
	require.NoError(t, err)
	again, err := b.provenance.RecordHumanMessage(said42, msg)
	require.NoError(t, err)
	require.True(t, again.GetRecorded())
	require.True(t, again.GetAlreadyRecorded())
	require.Equal(t, "juliehazz", again.GetMessage().GetAuthor())

	// The key naming something else: refused, saying what to do.
	for name, other := range map[string]func(*lineagev1.RecordHumanMessageRequest){
		"other words":   func(r *lineagev1.RecordHumanMessageRequest) { r.Content = "Ship it today." },
		"other session": func(r *lineagev1.RecordHumanMessageRequest) { r.AuthoredInSessionId = 103 },
		"other channel": func(r *lineagev1.RecordHumanMessageRequest) { r.Provenance = "slack.dm" },
	} {
		forged := proto.CloneOf(msg)
		other(forged)
		_, err := b.provenance.RecordHumanMessage(said42, forged)
		require.Equal(t, codes.AlreadyExists, status.Code(err), "%s: %v", name, err)
		require.Contains(t, status.Convert(err).Message(),
			`idempotency_key "slack/Ev0FIRST01" already recorded human message`, name)
		require.Contains(t, status.Convert(err).Message(), "a new message needs a new key", name)
	}

	// One message in the record.
	p, err := b.provenance.GetSessionProvenance(ctx, &lineagev1.GetSessionProvenanceRequest{SessionId: 102})
	require.NoError(t, err)
	require.Len(t, p.GetHumanMessages(), 1)
	require.Equal(t, int32(1), p.GetHereCount()+p.GetElsewhereCount())
	require.Equal(t, first.GetMessage().GetId(), p.GetHumanMessages()[0].GetId())

	// A key is a name, not free text.
	_, err = b.provenance.RecordHumanMessage(said(t, ctx, webUIAdmin), &lineagev1.RecordHumanMessageRequest{
		Provenance: "web_ui.follow_up", AuthoredInSessionId: 102, Content: "x", IdempotencyKey: "web ui/1"})
	require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
	require.Contains(t, status.Convert(err).Message(), "idempotency_key: no spaces or control characters")
}
