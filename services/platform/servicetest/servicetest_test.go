package servicetest

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/zimmerhq/zimmer/services/platform/grpcserver"
	"github.com/zimmerhq/zimmer/services/platform/inbox"
	"github.com/zimmerhq/zimmer/services/platform/outbox"
	"github.com/zimmerhq/zimmer/services/platform/pgdb"
	"github.com/zimmerhq/zimmer/services/platform/pgtest"
	"github.com/zimmerhq/zimmer/services/platform/slogx"
	"github.com/zimmerhq/zimmer/services/platform/temporalx"
)

func TestTemporalAddressSkipsUnlessRequired(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		env      map[string]string
		wantAddr string
		wantErr  bool
	}{
		{name: "unset skips", env: nil},
		{name: "set", env: map[string]string{"ZIMMER_TEST_TEMPORAL_ADDRESS": "127.0.0.1:7233"}, wantAddr: "127.0.0.1:7233"},
		{name: "unset but required fails", env: map[string]string{"ZIMMER_REQUIRE_TEMPORAL": "1"}, wantErr: true},
		{name: "set and required", env: map[string]string{"ZIMMER_TEST_TEMPORAL_ADDRESS": "h:1", "ZIMMER_REQUIRE_TEMPORAL": "1"}, wantAddr: "h:1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			addr, err := temporalAddress(Getenv(tt.env))
			require.Equal(t, tt.wantErr, err != nil, "error: %v", err)
			require.Equal(t, tt.wantAddr, addr)
		})
	}
}

// A bare platform gRPC server stands in for a service: it has health and
// reflection, and its health service is itself a registered service.
func TestAssertServingThenStopped(t *testing.T) {
	t.Parallel()
	srv := grpcserver.New(slogx.Discard(), grpcserver.Auth{})
	lis, err := grpcserver.Listen("127.0.0.1:0")
	require.NoError(t, err)
	addr := lis.Addr().String()

	stop := RunInBackground(t, func(ctx context.Context) error { return srv.Serve(ctx, lis, Timeout) })
	AssertServing(t, addr, "grpc.health.v1.Health")
	stop()
	AssertStopped(t, addr)
	stop() // idempotent
}

func TestAssertTablesNamesTheMissing(t *testing.T) {
	t.Parallel()
	pool := pgtest.DB(t, inbox.Migrations)
	AssertTables(t, pool, "inbox_events", "inbox_schema_migrations")

	missing, err := missingTables(context.Background(), pool, []string{"inbox_events", "no_such_table", "outbox_messages"})
	require.NoError(t, err)
	require.Equal(t, []string{"no_such_table", "outbox_messages"}, missing)
}

// The platform's own migration sets double as the fixtures.
func TestAssertMigrationsReversible(t *testing.T) {
	t.Parallel()
	for _, set := range []pgdb.MigrationSet{inbox.Migrations, outbox.Migrations} {
		t.Run(set.Name, func(t *testing.T) {
			t.Parallel()
			AssertMigrationsReversible(t, set)
		})
	}
}

func TestAssertStatements(t *testing.T) {
	t.Parallel()
	// Distinct ids per case: the cases run concurrently on one database.
	const insert = `INSERT INTO inbox_events (event_id, topic) VALUES `
	AssertStatements(t, []pgdb.MigrationSet{inbox.Migrations}, []StatementCase{
		{Name: "accepted", SQL: insert + `('6f1c3c0e-6d1b-4b43-9a0e-2f4d0e9f6a11', 't')`},
		{
			Name:     "duplicate rejected",
			Setup:    insert + `('0a4e5b39-5d7e-4a40-8d61-0f6f7f3b2c22', 't')`,
			SQL:      insert + `('0a4e5b39-5d7e-4a40-8d61-0f6f7f3b2c22', 't')`,
			WantCode: pgdb.CodeUniqueViolation,
		},
		{Name: "not a uuid", SQL: `INSERT INTO inbox_events (event_id, topic) VALUES ('x', 't')`, WantCode: "22P02"}, // invalid_text_representation,
	})
}

func TestAssertWorkerAnswers(t *testing.T) {
	t.Parallel()
	addr := TemporalAddress(t)
	c, err := temporalx.Dial(context.Background(), addr, "default", slogx.Discard())
	require.NoError(t, err)
	t.Cleanup(c.Close)
	// A name of its own: no other test's worker polls this queue.
	service := "servicetest-" + uuid.NewString()
	w := temporalx.NewWorker(c, service)
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)

	AssertWorkerAnswers(t, c, service)
}

type fakeService struct {
	cfg    string
	closed *bool
}

func (f *fakeService) Close() { *f.closed = true }

func TestNewClosesTheServiceAtCleanup(t *testing.T) {
	t.Parallel()
	closed := false
	// Registered first, so it runs after New's cleanup.
	t.Cleanup(func() { require.True(t, closed, "the service is closed when the test ends") })

	svc := New(t, func(_ context.Context, cfg string, logger *slog.Logger) (*fakeService, error) {
		require.NotNil(t, logger)
		return &fakeService{cfg: cfg, closed: &closed}, nil
	}, "cfg")
	require.Equal(t, "cfg", svc.cfg, "New passes the configuration through")
	require.False(t, closed)
}

// A test's namespace keeps no schedule firing once the test is over.
func TestTemporalNamespaceDeletesItsSchedulesAtCleanup(t *testing.T) {
	t.Parallel()
	addr := TemporalAddress(t)
	var ns string
	t.Run("a test that leaves a schedule", func(t *testing.T) {
		ns = TemporalNamespace(t, addr)
		c, err := temporalx.Dial(context.Background(), addr, ns, slogx.Discard())
		require.NoError(t, err)
		defer c.Close()
		_, err = c.ScheduleClient().Create(t.Context(), client.ScheduleOptions{
			ID:     "sweep",
			Spec:   client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: time.Minute}}},
			Action: &client.ScheduleWorkflowAction{ID: "sweep-run", Workflow: "zimmer.test.Sweep", TaskQueue: "nobody"},
		})
		require.NoError(t, err)
		// Listed, as a test's long-lived schedules are by its end (the
		// clean-up finds them by listing).
		require.Eventually(t, func() bool {
			it, err := c.ScheduleClient().List(t.Context(), client.ScheduleListOptions{})
			return err == nil && it.HasNext()
		}, Timeout, 50*time.Millisecond)
	})
	c, err := temporalx.Dial(context.Background(), addr, ns, slogx.Discard())
	require.NoError(t, err)
	defer c.Close()
	_, err = c.ScheduleClient().GetHandle(t.Context(), "sweep").Describe(t.Context())
	var notFound *serviceerror.NotFound
	require.ErrorAs(t, err, &notFound, "the schedule outlived its test")
}
