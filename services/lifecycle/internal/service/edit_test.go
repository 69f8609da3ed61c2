package service_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/events"
)

func ptr[T any](v T) *T { return &v }

func TestUpdateSession(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	ctx := context.Background()
	s := b.create(t, &lifecyclev1.CreateSessionRequest{Prompt: "p", GitRoot: "g", CustomMetadata: mustStruct(t, map[string]any{"keep": 1, "drop": 2})})
	id := fmt.Sprint(s.GetId())
	require.EqualValues(t, 60, s.GetHeartbeatIntervalSeconds())

	md := mustStruct(t, map[string]any{"drop": nil, "new": "x"})
	resp, err := b.client.UpdateSession(ctx, &lifecyclev1.UpdateSessionRequest{
		SessionId: id, Title: ptr("Renamed"), Slug: ptr("renamed"), Goal: ptr("ship"), SchedulingClass: ptr("spot"),
		Precedence: ptr(int32(3)), CustomMetadata: md, HeartbeatEnabled: ptr(true), HeartbeatIntervalSeconds: ptr(int32(300)),
	})
	require.NoError(t, err)
	got := resp.GetSession()
	require.Equal(t, "Renamed", got.GetTitle())
	require.Equal(t, "renamed", got.GetSlug())
	require.Equal(t, "spot", got.GetSchedulingClass())
	require.EqualValues(t, 3, got.GetPrecedence())
	require.Equal(t, map[string]any{"keep": float64(1), "new": "x"}, got.GetCustomMetadata().AsMap(), "merged; null removes")
	require.True(t, got.GetHeartbeatEnabled())
	require.EqualValues(t, 300, got.GetHeartbeatIntervalSeconds())
	require.Equal(t, "waiting", got.GetStatus(), "a patch is not a transition")

	hb, err := b.client.SetSessionHeartbeat(ctx, &lifecyclev1.SetSessionHeartbeatRequest{SessionId: "renamed", Enabled: ptr(false)})
	require.NoError(t, err)
	require.False(t, hb.GetSession().GetHeartbeatEnabled())
	require.EqualValues(t, 300, hb.GetSession().GetHeartbeatIntervalSeconds(), "left-out fields are kept")

	// Bad input: every field named, nothing written.
	_, err = b.client.UpdateSession(ctx, &lifecyclev1.UpdateSessionRequest{SessionId: id, Slug: ptr("123"), SchedulingClass: ptr("urgent"), HeartbeatIntervalSeconds: ptr(int32(10))})
	st := status.Convert(err)
	require.Equal(t, codes.InvalidArgument, st.Code())
	var fields []string
	for _, d := range st.Details() {
		for _, v := range d.(*errdetails.BadRequest).GetFieldViolations() {
			fields = append(fields, v.GetField())
		}
	}
	require.Equal(t, []string{"slug", "scheduling_class", "heartbeat_interval_seconds"}, fields)
	_, err = b.client.UpdateSession(ctx, &lifecyclev1.UpdateSessionRequest{SessionId: id})
	require.Equal(t, codes.InvalidArgument, status.Code(err), "an empty patch says what to send")

	other := b.create(t, &lifecyclev1.CreateSessionRequest{})
	_, err = b.client.UpdateSession(ctx, &lifecyclev1.UpdateSessionRequest{SessionId: fmt.Sprint(other.GetId()), Slug: ptr("renamed")})
	require.Equal(t, codes.AlreadyExists, status.Code(err))

	after, err := b.client.GetSession(ctx, &lifecyclev1.GetSessionRequest{SessionId: id})
	require.NoError(t, err)
	require.Equal(t, hb.GetSession().GetVersion(), after.GetSession().GetVersion(), "refused patches wrote nothing")
}

func TestUpdateSessionNotes(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	ctx := context.Background()
	s := b.create(t, &lifecyclev1.CreateSessionRequest{})
	id := fmt.Sprint(s.GetId())
	require.Empty(t, s.GetNotes(), "a new session has no notes")

	resp, err := b.client.UpdateSession(ctx, &lifecyclev1.UpdateSessionRequest{SessionId: id, Notes: ptr("tried X; Y next\n- ask about Z")})
	require.NoError(t, err)
	require.Equal(t, "tried X; Y next\n- ask about Z", resp.GetSession().GetNotes())
	require.Empty(t, resp.GetSession().GetTitle(), "left-out fields are kept")

	// Notes are a column like any other: a transition keeps them.
	_, err = b.fire(t, s.GetId(), "start")
	require.NoError(t, err)
	got, err := b.client.GetSession(ctx, &lifecyclev1.GetSessionRequest{SessionId: id})
	require.NoError(t, err)
	require.Equal(t, "tried X; Y next\n- ask about Z", got.GetSession().GetNotes())

	_, err = b.client.UpdateSession(ctx, &lifecyclev1.UpdateSessionRequest{SessionId: id, Notes: ptr(strings.Repeat("n", 50_001))})
	st := status.Convert(err)
	require.Equal(t, codes.InvalidArgument, st.Code())
	require.Equal(t, "notes: is longer than 50000 characters; keep the notes short and put the detail in the repository", st.Message())

	resp, err = b.client.UpdateSession(ctx, &lifecyclev1.UpdateSessionRequest{SessionId: id, Notes: ptr("")})
	require.NoError(t, err)
	require.Empty(t, resp.GetSession().GetNotes(), `"" clears them`)

	var lines []string
	for _, l := range b.timeline(t, s.GetId()) {
		lines = append(lines, l.GetKind()+": "+l.GetMessage())
	}
	require.Equal(t, byAdmin(
		"note: [Session] updated notes",
		"transition: [State Machine] waiting → running (start)",
		"note: [Session] updated notes",
	), lines)
}

func TestDeleteSession(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	ctx := context.Background()
	parent := b.create(t, &lifecyclev1.CreateSessionRequest{})
	child := b.create(t, &lifecyclev1.CreateSessionRequest{Prompt: "c", GitRoot: "g", ParentSessionId: ptr(parent.GetId())})

	// Hard delete is an admin method: an operator key is refused, naming
	// the scope it lacks, and the session stays.
	_, err := b.operator.DeleteSession(ctx, &lifecyclev1.DeleteSessionRequest{SessionId: fmt.Sprint(parent.GetId())})
	require.Equal(t, codes.PermissionDenied, status.Code(err))
	require.Contains(t, status.Convert(err).Message(), "DeleteSession needs an admin key (ZIMMER_ADMIN_API_KEYS)")
	_, err = b.client.GetSession(ctx, &lifecyclev1.GetSessionRequest{SessionId: fmt.Sprint(parent.GetId())})
	require.NoError(t, err)

	_, err = b.client.DeleteSession(ctx, &lifecyclev1.DeleteSessionRequest{SessionId: fmt.Sprint(parent.GetId())})
	require.NoError(t, err)
	_, err = b.client.GetSession(ctx, &lifecyclev1.GetSessionRequest{SessionId: fmt.Sprint(parent.GetId())})
	require.Equal(t, codes.NotFound, status.Code(err))
	_, err = b.client.DeleteSession(ctx, &lifecyclev1.DeleteSessionRequest{SessionId: fmt.Sprint(parent.GetId())})
	require.Equal(t, codes.NotFound, status.Code(err))

	got, err := b.client.GetSession(ctx, &lifecyclev1.GetSessionRequest{SessionId: fmt.Sprint(child.GetId())})
	require.NoError(t, err)
	require.Nil(t, got.GetSession().ParentSessionId, "children stay, with no recorded parent")

	var topic string
	require.NoError(t, b.svc.Pool.QueryRow(ctx, `SELECT topic FROM outbox_messages ORDER BY id DESC LIMIT 1`).Scan(&topic))
	require.Equal(t, "lifecycle.session_deleted", topic)
}

func TestSettingsAndExperimentalFlags(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	ctx := context.Background()

	st, err := b.client.GetSettings(ctx, &lifecyclev1.GetSettingsRequest{})
	require.NoError(t, err)
	require.True(t, st.GetSettings().GetProvenanceViaMcpEnabled(), "on by default")

	s := b.create(t, &lifecyclev1.CreateSessionRequest{})
	_, err = b.fire(t, s.GetId(), "start")
	require.NoError(t, err)
	_, err = b.fire(t, s.GetId(), "pause")
	require.NoError(t, err)

	up, err := b.client.UpdateSettings(ctx, &lifecyclev1.UpdateSettingsRequest{ProvenanceViaMcpEnabled: ptr(false)})
	require.NoError(t, err)
	require.False(t, up.GetSettings().GetProvenanceViaMcpEnabled())
	_, err = b.fire(t, s.GetId(), "fail") // not start or resume: records nothing
	require.NoError(t, err)
	flags := func() (start, end bool) {
		require.NoError(t, b.svc.Pool.QueryRow(ctx, `
			SELECT start_value::boolean, end_value::boolean FROM session_experimental_flags
			WHERE session_id = $1 AND setting = 'provenance_via_mcp_enabled'`, s.GetId()).Scan(&start, &end))
		return start, end
	}
	start, end := flags()
	require.True(t, start)
	require.True(t, end, "fail does not re-stamp the cohort")

	_, err = b.fire(t, s.GetId(), "resume")
	require.NoError(t, err)
	start, end = flags()
	require.True(t, start, "the first call fixed start-of-life")
	require.False(t, end, "a later resume moves end-of-life")
}

func mustStruct(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	require.NoError(t, err)
	return s
}

// TestPushNotificationsOptIn: the needs-input push opt-in is off unless a
// creation says otherwise (issue 23 rule 8, as in the original), an
// operator's patch flips it (one timeline line), and the effects a pause
// emits carry it in their session snapshot, which is all the notification
// service reads.
func TestPushNotificationsOptIn(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	ctx := context.Background()

	require.False(t, b.create(t, &lifecyclev1.CreateSessionRequest{}).GetPushNotifications(), "absent means false")
	pushed := b.create(t, &lifecyclev1.CreateSessionRequest{PushNotifications: ptr(true)})
	require.True(t, pushed.GetPushNotifications())
	require.True(t, b.get(t, pushed.GetId()).GetPushNotifications(), "stored, not only answered")
	muted := b.create(t, &lifecyclev1.CreateSessionRequest{PushNotifications: ptr(false)})
	require.False(t, muted.GetPushNotifications())
	require.False(t, b.get(t, muted.GetId()).GetPushNotifications(), "stored, not only answered")
	list, err := b.client.ListSessions(ctx, &lifecyclev1.ListSessionsRequest{})
	require.NoError(t, err)
	for _, s := range list.GetSessions() {
		require.Equal(t, s.GetId() == pushed.GetId(), s.GetPushNotifications(), "a list's summary carries it: session %d", s.GetId())
	}

	// The muted session's pause: its push effect says push_notifications false.
	for _, ev := range []string{"start", "pause"} {
		_, err := b.fire(t, muted.GetId(), ev)
		require.NoError(t, err)
	}
	require.Equal(t, []bool{false}, b.pushSnapshots(t, muted.GetId()))

	id := fmt.Sprint(muted.GetId())
	resp, err := b.client.UpdateSession(ctx, &lifecyclev1.UpdateSessionRequest{SessionId: id, PushNotifications: ptr(true)})
	require.NoError(t, err)
	require.True(t, resp.GetSession().GetPushNotifications())
	_, err = b.client.UpdateSession(ctx, &lifecyclev1.UpdateSessionRequest{SessionId: id, Title: ptr("kept")})
	require.NoError(t, err)
	require.True(t, b.get(t, muted.GetId()).GetPushNotifications(), "a patch without it keeps it")
	for _, ev := range []string{"resume", "pause"} {
		_, err := b.fire(t, muted.GetId(), ev)
		require.NoError(t, err)
	}
	require.Equal(t, []bool{false, true}, b.pushSnapshots(t, muted.GetId()), "the next pause's effect carries the edit")

	var notes []string
	for _, l := range b.timeline(t, muted.GetId()) {
		if l.GetKind() == "note" {
			notes = append(notes, l.GetMessage())
		}
	}
	require.Equal(t, byAdmin("[Session] updated push_notifications", "[Session] updated title"), notes)
}

// pushSnapshots are the push_notifications values of the needs-input push
// effects lifecycle addressed to notification for session id, oldest first.
func (b testBundle) pushSnapshots(t *testing.T, id int64) []bool {
	t.Helper()
	rows, err := b.svc.Pool.Query(context.Background(), `SELECT payload FROM outbox_messages
		WHERE subscriber = 'notification' AND topic = $1 AND aggregate_key = $2 ORDER BY id`,
		events.TopicEffectPrefix+"enqueue_debounced_needs_input_push_notification", fmt.Sprint(id))
	require.NoError(t, err)
	defer rows.Close()
	var out []bool
	for rows.Next() {
		var payload []byte
		require.NoError(t, rows.Scan(&payload))
		evt, err := events.Decode(payload)
		require.NoError(t, err)
		out = append(out, evt.GetEffect().GetSession().GetPushNotifications())
	}
	require.NoError(t, rows.Err())
	return out
}
