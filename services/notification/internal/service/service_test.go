package service_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	notificationv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/notification/v1"
	"github.com/zimmerhq/zimmer/services/notification/internal/config"
	"github.com/zimmerhq/zimmer/services/notification/internal/service"
	"github.com/zimmerhq/zimmer/services/notification/internal/sink"
	"github.com/zimmerhq/zimmer/services/platform/grpcclient"
	"github.com/zimmerhq/zimmer/services/platform/servicetest"
)

// testConfig is the service's configuration under test: a fresh database,
// no Temporal, the default dedup window, pages and pushes to the log sink,
// and a lifecycle address nothing answers (the connection is lazy; tests
// that need lifecycle start a fake one).
func testConfig(t *testing.T) config.Config {
	t.Helper()
	return config.Config{
		Config:             servicetest.Config(t, service.MigrationSets...),
		Sinks:              sink.Config{PushRoute: []string{"log"}, AlertRoute: []string{"log"}, Timeout: 10 * time.Second},
		LifecycleAddr:      "127.0.0.1:9",
		QueueAddr:          "127.0.0.1:9",
		LineageAddr:        "127.0.0.1:9",
		ConsoleURL:         "http://127.0.0.1:8080/console/",
		NeedsInputDebounce: time.Minute,
	}
}

// The component test: the real service on a fresh database, without
// Temporal, served on a free port and stopped by cancelling its context.
func TestServiceServesUntilCancelled(t *testing.T) {
	t.Parallel()
	svc := servicetest.New(t, service.New, testConfig(t))
	servicetest.AssertServesUntilCancelled(t, svc.Host, "zimmer.notification.v1.NotificationService", "notifications", "alerts")
}

func TestServiceWorkerPollsItsTaskQueue(t *testing.T) {
	t.Parallel()
	temporalAddr := servicetest.TemporalAddress(t)
	cfg := testConfig(t)
	cfg.TemporalAddress = temporalAddr
	cfg.TemporalNamespace = servicetest.TemporalNamespace(t, temporalAddr)
	svc := newTemporalService(t, cfg)
	servicetest.AssertWorkerPolls(t, svc.Host, "notification")

	// The re-drive runs every minute on the service's task queue.
	desc, err := svc.Temporal.ScheduleClient().GetHandle(t.Context(), "notification-redrive").Describe(t.Context())
	require.NoError(t, err)
	require.Equal(t, time.Minute, desc.Schedule.Spec.Intervals[0].Every)
	action, ok := desc.Schedule.Action.(*client.ScheduleWorkflowAction)
	require.True(t, ok)
	require.Equal(t, "zimmer-notification", action.TaskQueue)
}

// newTemporalService builds the service on cfg, which names a Temporal
// server, and deletes its re-drive schedule when the test ends, so the
// shared dev server does not run it for ever.
func newTemporalService(t *testing.T, cfg config.Config) *service.Service {
	t.Helper()
	svc := servicetest.New(t, service.New, cfg)
	worker := cfg.WorkerName
	if worker == "" {
		worker = service.Name
	}
	t.Cleanup(func() {
		_ = svc.Temporal.ScheduleClient().GetHandle(context.Background(), service.RedriveScheduleID(worker)).Delete(context.Background())
	})
	return svc
}

// logBuffer is an io.Writer the service logs to while the test reads it.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// lines returns the log lines written so far.
func (b *logBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var lines []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b.buf.Bytes()))
	for sc.Scan() {
		var line map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line))
		lines = append(lines, line)
	}
	return lines
}

// pages returns the paging log lines (alert=true) written so far.
func (b *logBuffer) pages(t *testing.T) []map[string]any {
	t.Helper()
	var pages []map[string]any
	for _, line := range b.lines(t) {
		if line["alert"] == true {
			pages = append(pages, line)
		}
	}
	return pages
}

func TestAlertsOverGRPC(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	logs := &logBuffer{}
	svc, err := service.New(context.Background(), cfg, slog.New(slog.NewJSONHandler(logs, nil)))
	require.NoError(t, err)
	t.Cleanup(svc.Close)
	servicetest.RunInBackground(t, svc.Run)
	// RaiseAlert is internal: the services (lifecycle's relays) raise
	// alerts, calling as themselves.
	client := notificationv1.NewNotificationServiceClient(servicetest.DialAsService(t, svc.Addr(), "lifecycle"))
	ctx, cancel := context.WithTimeout(context.Background(), servicetest.Timeout)
	defer cancel()

	details, err := structpb.NewStruct(map[string]any{"error": "connection refused", "session_id": 42})
	require.NoError(t, err)
	first, err := client.RaiseAlert(ctx, &notificationv1.RaiseAlertRequest{
		DedupKey: "cleanup_running_job", Summary: "cleanup_running_job failed", Details: details,
	})
	require.NoError(t, err)
	require.True(t, first.GetPaged())
	a := first.GetAlert()
	require.Positive(t, a.GetId())
	require.Equal(t, "cleanup_running_job", a.GetDedupKey())
	require.Equal(t, "cleanup_running_job failed", a.GetSummary())
	require.Equal(t, details.AsMap(), a.GetDetails().AsMap())
	require.EqualValues(t, 1, a.GetOccurrences())
	require.Equal(t, a.GetFirstSeenAt().AsTime().Add(15*time.Minute), a.GetDedupUntil().AsTime(), "the default window")

	repeat, err := client.RaiseAlert(ctx, &notificationv1.RaiseAlertRequest{DedupKey: "cleanup_running_job", Summary: "again"})
	require.NoError(t, err)
	require.False(t, repeat.GetPaged())
	require.Equal(t, a.GetId(), repeat.GetAlert().GetId())
	require.EqualValues(t, 2, repeat.GetAlert().GetOccurrences())

	other, err := client.RaiseAlert(ctx, &notificationv1.RaiseAlertRequest{DedupKey: "set_archived_at", Summary: "archive failed"})
	require.NoError(t, err)
	require.True(t, other.GetPaged())

	pages := logs.pages(t)
	require.Len(t, pages, 2, "one page per opened alert, none for the repeat")
	require.Equal(t, "ERROR", pages[0]["level"])
	require.Equal(t, "cleanup_running_job", pages[0]["dedup_key"])
	require.Equal(t, "cleanup_running_job failed", pages[0]["summary"])
	require.Equal(t, "set_archived_at", pages[1]["dedup_key"])

	list, err := client.ListAlerts(ctx, &notificationv1.ListAlertsRequest{})
	require.NoError(t, err)
	var keys []string
	for _, a := range list.GetAlerts() {
		keys = append(keys, a.GetDedupKey())
	}
	require.Equal(t, []string{"set_archived_at", "cleanup_running_job"}, keys, "newest first")
	require.EqualValues(t, 2, list.GetAlerts()[1].GetOccurrences())

	_, err = client.RaiseAlert(ctx, &notificationv1.RaiseAlertRequest{})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	var fields []string
	for _, d := range status.Convert(err).Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				fields = append(fields, v.GetField())
			}
		}
	}
	require.Equal(t, []string{"dedup_key", "summary"}, fields)

	_, err = client.ListAlerts(ctx, &notificationv1.ListAlertsRequest{PageSize: -1})
	require.Equal(t, codes.InvalidArgument, status.Code(err))

	_, err = notificationv1.NewNotificationServiceClient(servicetest.Dial(t, svc.Addr(), grpcclient.Anonymous())).ListAlerts(ctx, &notificationv1.ListAlertsRequest{})
	require.Equal(t, codes.Unauthenticated, status.Code(err), "alerts need credentials like every call")

	// An operator key reads the alerts but may not raise one (a page).
	operator := notificationv1.NewNotificationServiceClient(servicetest.DialOperator(t, svc.Addr()))
	_, err = operator.ListAlerts(ctx, &notificationv1.ListAlertsRequest{})
	require.NoError(t, err)
	_, err = operator.RaiseAlert(ctx, &notificationv1.RaiseAlertRequest{DedupKey: "fake", Summary: "a page"})
	require.Equal(t, codes.PermissionDenied, status.Code(err))
	require.Contains(t, status.Convert(err).Message(), "RaiseAlert is internal to Zimmer's services; no client key may call it")
}

// A page reaches the alert route's webhook, signed, through the page
// workflow on the real Temporal dev server; a repeat inside the dedup
// window pages no one.
func TestAlertPagesTheWebhookOnceThroughTemporal(t *testing.T) {
	t.Parallel()
	secret := []byte("page-secret")
	type delivery struct {
		header http.Header
		body   []byte
	}
	deliveries := make(chan delivery, 10)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		deliveries <- delivery{header: r.Header.Clone(), body: body}
	}))
	t.Cleanup(receiver.Close)

	cfg := testConfig(t)
	cfg.TemporalAddress = servicetest.TemporalAddress(t)
	cfg.WorkerName = ownWorker()
	cfg.Sinks.AlertRoute = []string{"webhook"}
	cfg.Sinks.WebhookURL = receiver.URL
	cfg.Sinks.WebhookSecret = string(secret)
	svc := newTemporalService(t, cfg)
	servicetest.RunInBackground(t, svc.Run)
	client := notificationv1.NewNotificationServiceClient(servicetest.DialAsService(t, svc.Addr(), "lifecycle"))
	ctx, cancel := context.WithTimeout(context.Background(), servicetest.Timeout)
	defer cancel()

	key := fmt.Sprintf("page-once-%d", time.Now().UnixNano())
	first, err := client.RaiseAlert(ctx, &notificationv1.RaiseAlertRequest{DedupKey: key, Summary: "relay is stuck"})
	require.NoError(t, err)
	require.True(t, first.GetPaged())
	repeat, err := client.RaiseAlert(ctx, &notificationv1.RaiseAlertRequest{DedupKey: key, Summary: "relay is stuck"})
	require.NoError(t, err)
	require.False(t, repeat.GetPaged())

	var got delivery
	select {
	case got = <-deliveries:
	case <-ctx.Done():
		t.Fatal("the webhook never received the page")
	}
	require.NoError(t, sink.VerifyWebhook(secret, got.header, got.body, time.Now(), time.Minute))
	var payload sink.WebhookPayload
	require.NoError(t, json.Unmarshal(got.body, &payload))
	id := first.GetAlert().GetId()
	require.Equal(t, sink.KindAlert, payload.Kind)
	require.Equal(t, "relay is stuck", payload.Title)
	require.Equal(t, fmt.Sprintf("alert/%d", id), payload.DedupKey)

	// The page workflow, named after the alert, finished: nothing more is
	// coming, and the repeat started none.
	require.NoError(t, svc.Temporal.GetWorkflow(ctx, fmt.Sprintf("alert/%d", id), "").Get(ctx, nil))
	require.Empty(t, deliveries, "the repeat inside the window paged no one")
}
