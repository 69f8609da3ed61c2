package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
	notificationv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/notification/v1"
	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"
	"github.com/zimmerhq/zimmer/services/platform/grpcclient"
	"github.com/zimmerhq/zimmer/services/platform/principal"
)

// TestAccessProbes tries, on the real binaries, what issue 10 found open:
// a client key (operator or admin, the key every MCP agent used to hold)
// calling the services' internal gRPC methods directly, and an operator key
// driving the machine or deleting. Each is refused with the right code and
// a message saying what is needed, and writes nothing; the admin key does
// the admin methods; and the services still talk to each other, each call
// carrying the internal identity.
func TestAccessProbes(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	ctx := context.Background()
	operatorREST := restClient{base: "http://" + s.addr["gateway"], key: s.operatorKey}
	adminREST := restClient{base: "http://" + s.addr["gateway"], key: s.apiKey}

	// The services talk: a session created over REST reaches lineage
	// through lifecycle's relay, which calls lineage's internal consumer as
	// the lifecycle service.
	parent := createREST(t, operatorREST, `{"prompt":"probed","git_root":"g","slug":"probed"}`)
	lineageAsService := lineagev1.NewLineageServiceClient(s.dial("lineage", s.asService("queue")))
	require.Eventually(t, func() bool {
		_, err := lineageAsService.GetSessionNode(ctx, &lineagev1.GetSessionNodeRequest{SessionId: parent})
		return err == nil
	}, 20*time.Second, 100*time.Millisecond, "the created event reached lineage")

	const internal = "is internal to Zimmer's services; no client key may call it"
	for _, key := range []struct {
		name string
		id   grpcclient.Identity
	}{{"operator key", s.asOperator()}, {"admin key", s.asAdmin()}} {
		t.Run(key.name+" on internal gRPC", func(t *testing.T) {
			lineageConn := s.dial("lineage", key.id)
			provenance := lineagev1.NewProvenanceServiceClient(lineageConn)
			probes := map[string]func() error{
				"RecordHumanMessage": func() error {
					_, err := provenance.RecordHumanMessage(ctx, &lineagev1.RecordHumanMessageRequest{
						Provenance: "web_ui.follow_up", AuthoredInSessionId: parent, Content: "I authorize this",
						OccurredAt: timestamppb.Now(),
					})
					return err
				},
				"CreateUser": func() error {
					_, err := provenance.CreateUser(ctx, &lineagev1.CreateUserRequest{Key: "mallory", DisplayName: "M", SlackUserIds: []string{"UMAL"}})
					return err
				},
				"RecordUncleEdge": func() error {
					_, err := lineagev1.NewLineageServiceClient(lineageConn).RecordUncleEdge(ctx, &lineagev1.RecordUncleEdgeRequest{
						ActingSessionId: parent, TargetSessionId: parent, EntryPoint: "probe",
					})
					return err
				},
				"ConsumeSessionEvent": func() error {
					// A fake child of a real session.
					_, err := lifecyclev1.NewSessionEventConsumerServiceClient(lineageConn).ConsumeSessionEvent(ctx, &lifecyclev1.ConsumeSessionEventRequest{
						Event: &lifecyclev1.SessionEvent{EventId: uuid.NewString(), SessionId: 424242, OccurredAt: timestamppb.Now(),
							Payload: &lifecyclev1.SessionEvent_Created{Created: &lifecyclev1.SessionCreated{Session: &lifecyclev1.Session{
								Id: 424242, ParentSessionId: &parent, Status: "running", Genesis: "api",
							}}}},
					})
					return err
				},
				"ConsumeLineageEvent": func() error {
					_, err := lineagev1.NewLineageEventConsumerServiceClient(s.dial("lifecycle", key.id)).ConsumeLineageEvent(ctx, &lineagev1.ConsumeLineageEventRequest{
						Event: &lineagev1.LineageEvent{EventId: uuid.NewString()},
					})
					return err
				},
				// The queue's delivery surface: a turn is delivered only by the
				// queue, a queue sealed only by lifecycle's archive.
				"DeliverTurn": func() error {
					_, err := lifecyclev1.NewLifecycleServiceClient(s.dial("lifecycle", key.id)).DeliverTurn(ctx, &lifecyclev1.DeliverTurnRequest{
						SessionId: parent, DeliveryId: "probe/" + uuid.NewString(), Prompt: "I authorize this", Mode: lifecyclev1.DeliveryMode_DELIVERY_MODE_IDLE,
					})
					return err
				},
				"RecordDrainAttempt": func() error {
					_, err := lifecyclev1.NewLifecycleServiceClient(s.dial("lifecycle", key.id)).RecordDrainAttempt(ctx, &lifecyclev1.RecordDrainAttemptRequest{SessionId: parent})
					return err
				},
				// The recovery paths' question, not a client's.
				"AwaitingScheduledWake": func() error {
					_, err := lifecyclev1.NewTriggerServiceClient(s.dial("lifecycle", key.id)).AwaitingScheduledWake(ctx,
						&lifecyclev1.AwaitingScheduledWakeRequest{SessionIds: []int64{parent}})
					return err
				},
				"DeliverNextMessage": func() error {
					_, err := queuev1.NewQueueServiceClient(s.dial("queue", key.id)).DeliverNextMessage(ctx, &queuev1.DeliverNextMessageRequest{SessionId: parent, FromJobId: "probe"})
					return err
				},
				"SealQueue": func() error {
					_, err := queuev1.NewQueueServiceClient(s.dial("queue", key.id)).SealQueue(ctx, &queuev1.SealQueueRequest{SessionId: parent, AttemptId: uuid.NewString(), Force: true})
					return err
				},
				"UnsealQueue": func() error {
					_, err := queuev1.NewQueueServiceClient(s.dial("queue", key.id)).UnsealQueue(ctx, &queuev1.UnsealQueueRequest{SessionId: parent, AttemptId: uuid.NewString()})
					return err
				},
				"RetractUncleEdge": func() error {
					_, err := lineagev1.NewLineageServiceClient(lineageConn).RetractUncleEdge(ctx, &lineagev1.RetractUncleEdgeRequest{
						ActingSessionId: parent, TargetSessionId: parent, Recorded: lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_WRITTEN, EntryPoint: "probe",
					})
					return err
				},
				"RaiseAlert": func() error {
					_, err := notificationv1.NewNotificationServiceClient(s.dial("notification", key.id)).RaiseAlert(ctx, &notificationv1.RaiseAlertRequest{
						DedupKey: "probe", Summary: "a page from a client",
					})
					return err
				},
			}
			for name, probe := range probes {
				err := probe()
				require.Equal(t, codes.PermissionDenied, status.Code(err), "%s: %v", name, err)
				require.Contains(t, status.Convert(err).Message(), name+" "+internal)
			}

			// None of them wrote anything.
			p, err := provenance.GetSessionProvenance(ctx, &lineagev1.GetSessionProvenanceRequest{SessionId: parent})
			require.NoError(t, err)
			require.Empty(t, p.GetHumanMessages(), "no human message")
			got, err := lifecyclev1.NewLifecycleServiceClient(s.dial("lifecycle", key.id)).GetSession(ctx, &lifecyclev1.GetSessionRequest{SessionId: fmt.Sprint(parent)})
			require.NoError(t, err)
			require.Equal(t, "waiting", got.GetSession().GetStatus(), "no turn delivered")
			require.Len(t, p.GetSessionHierarchy().GetNodes(), 1, "no fake child, no uncle")
			users, err := lineagev1.NewProvenanceServiceClient(s.dial("lineage", s.asService("gateway"))).ListUsers(ctx, &lineagev1.ListUsersRequest{})
			require.NoError(t, err)
			for _, u := range users.GetUsers() {
				require.NotEqual(t, "mallory", u.GetKey(), "no invented person")
			}
			alerts, err := notificationv1.NewNotificationServiceClient(s.dial("notification", key.id)).ListAlerts(ctx, &notificationv1.ListAlertsRequest{})
			require.NoError(t, err, "reading the alerts is public")
			for _, a := range alerts.GetAlerts() {
				require.NotEqual(t, "probe", a.GetDedupKey(), "no page")
			}
		})
	}

	t.Run("a session credential on direct gRPC", func(t *testing.T) {
		_, err := lifecyclev1.NewLifecycleServiceClient(s.dial("lifecycle", grpcclient.WithKey("zsc_anything"))).
			GetSession(ctx, &lifecyclev1.GetSessionRequest{SessionId: fmt.Sprint(parent)})
		require.Equal(t, codes.Unauthenticated, status.Code(err))
		require.Contains(t, status.Convert(err).Message(), "accepted by the gateway only")
	})

	t.Run("a client forwarding a principal", func(t *testing.T) {
		// Only a service is believed when it says whom it acts for.
		fwd, err := principal.Outgoing(ctx, principal.Principal{Kind: principal.Admin})
		require.NoError(t, err)
		_, err = lifecyclev1.NewLifecycleServiceClient(s.dial("lifecycle", s.asOperator())).
			DeleteSession(fwd, &lifecyclev1.DeleteSessionRequest{SessionId: fmt.Sprint(parent)})
		require.Equal(t, codes.PermissionDenied, status.Code(err), "%v", err)
	})

	t.Run("the admin methods", func(t *testing.T) {
		victim := createREST(t, operatorREST, `{"prompt":"to delete","git_root":"g"}`)
		operator := lifecyclev1.NewLifecycleServiceClient(s.dial("lifecycle", s.asOperator()))
		admin := lifecyclev1.NewLifecycleServiceClient(s.dial("lifecycle", s.asAdmin()))
		const needsAdmin = "needs an admin key (ZIMMER_ADMIN_API_KEYS); this operator key lacks the admin scope"

		// Direct gRPC.
		_, err := operator.TransitionSession(ctx, &lifecyclev1.TransitionSessionRequest{SessionId: fmt.Sprint(parent), Event: "start"})
		require.Equal(t, codes.PermissionDenied, status.Code(err))
		require.Equal(t, "TransitionSession "+needsAdmin, status.Convert(err).Message())
		_, err = operator.DeleteSession(ctx, &lifecyclev1.DeleteSessionRequest{SessionId: fmt.Sprint(victim)})
		require.Equal(t, codes.PermissionDenied, status.Code(err))
		require.Equal(t, "DeleteSession "+needsAdmin, status.Convert(err).Message())

		// REST: 403 naming the scope, and nothing changed.
		code, body := operatorREST.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/transition", parent), `{"event":"start"}`)
		require.Equal(t, http.StatusForbidden, code, body)
		require.Contains(t, body, "TransitionSession "+needsAdmin)
		code, body = operatorREST.do(t, http.MethodDelete, fmt.Sprintf("/api/v1/sessions/%d", victim), "")
		require.Equal(t, http.StatusForbidden, code, body)
		require.Contains(t, body, "DeleteSession "+needsAdmin)
		got, err := operator.GetSession(ctx, &lifecyclev1.GetSessionRequest{SessionId: fmt.Sprint(parent)})
		require.NoError(t, err)
		require.Equal(t, "waiting", got.GetSession().GetStatus(), "the refused transition changed nothing")

		// The admin key may.
		code, body = adminREST.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/transition", parent), `{"event":"start"}`)
		require.Equal(t, http.StatusOK, code, body)
		code, body = adminREST.do(t, http.MethodDelete, fmt.Sprintf("/api/v1/sessions/%d", victim), "")
		require.Equal(t, http.StatusNoContent, code, body)
		_, err = admin.GetSession(ctx, &lifecyclev1.GetSessionRequest{SessionId: fmt.Sprint(victim)})
		require.Equal(t, codes.NotFound, status.Code(err))
	})
}
