package service_test

import (
	"context"
	"fmt"
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
	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"
	runnerv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/runner/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/config"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/service"
	"github.com/zimmerhq/zimmer/services/platform/host"
	"github.com/zimmerhq/zimmer/services/platform/pgtest"
	"github.com/zimmerhq/zimmer/services/platform/servicetest"
	"github.com/zimmerhq/zimmer/services/platform/surface"
)

// guardFake is the queue's archive seal and the runner's InterruptTurn on
// one server, logging every call in the order lifecycle made them.
type guardFake struct {
	queuev1.UnimplementedQueueServiceServer
	runnerv1.UnimplementedRunnerServiceServer

	mu       sync.Mutex
	log      []string                             // "seal 3 force=false", "interrupt 3", "unseal 3"
	attempts map[int64][]string                   // attempt ids sealed and unsealed, per session
	answers  map[int64]*queuev1.SealQueueResponse // per session; none: the queue is empty
	onSeal   func(sessionID int64)                // runs inside SealQueue, before it answers
}

func (f *guardFake) SealQueue(_ context.Context, req *queuev1.SealQueueRequest) (*queuev1.SealQueueResponse, error) {
	f.mu.Lock()
	f.log = append(f.log, fmt.Sprintf("seal %d force=%t", req.GetSessionId(), req.GetForce()))
	f.attempts[req.GetSessionId()] = append(f.attempts[req.GetSessionId()], "seal "+req.GetAttemptId())
	answer, hook := f.answers[req.GetSessionId()], f.onSeal
	f.mu.Unlock()
	if hook != nil {
		hook(req.GetSessionId())
	}
	if answer == nil {
		return &queuev1.SealQueueResponse{}, nil
	}
	if answer.GetRefusal() != "" && req.GetForce() {
		return &queuev1.SealQueueResponse{RetirementClause: answer.GetRetirementClause(), LiveMessages: answer.GetLiveMessages()}, nil
	}
	return answer, nil
}

func (f *guardFake) UnsealQueue(_ context.Context, req *queuev1.UnsealQueueRequest) (*queuev1.UnsealQueueResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = append(f.log, fmt.Sprintf("unseal %d", req.GetSessionId()))
	f.attempts[req.GetSessionId()] = append(f.attempts[req.GetSessionId()], "unseal "+req.GetAttemptId())
	return &queuev1.UnsealQueueResponse{}, nil
}

func (f *guardFake) InterruptTurn(_ context.Context, req *runnerv1.InterruptTurnRequest) (*runnerv1.InterruptTurnResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = append(f.log, fmt.Sprintf("interrupt %d", req.GetSessionId()))
	return &runnerv1.InterruptTurnResponse{Interrupted: true}, nil
}

func (f *guardFake) calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.log...)
}

func (f *guardFake) attemptsOf(id int64) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.attempts[id]...)
}

func (f *guardFake) refuse(id int64, refusal, clause string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answers[id] = &queuev1.SealQueueResponse{Refusal: refusal, RetirementClause: clause, LiveMessages: 1}
}

// setupGuarded runs lifecycle with LIFECYCLE_QUEUE_ADDR and
// LIFECYCLE_RUNNER_ADDR at one guardFake.
func setupGuarded(t *testing.T) (testBundle, *guardFake) {
	t.Helper()
	f := &guardFake{attempts: map[int64][]string{}, answers: map[int64]*queuev1.SealQueueResponse{}}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer()
	queuev1.RegisterQueueServiceServer(srv, f)
	runnerv1.RegisterRunnerServiceServer(srv, f)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return setupWithConfig(t, func(c *config.Config) {
		c.QueueAddr, c.QueueTimeout = lis.Addr().String(), 5*time.Second
		c.RunnerAddr, c.RunnerTimeout = lis.Addr().String(), 5*time.Second
	}), f
}

func setupWithConfig(t *testing.T, edit func(*config.Config)) testBundle {
	t.Helper()
	cfg := config.Config{
		Config: host.Config{
			GRPCAddr: "127.0.0.1:0", DatabaseURL: pgtest.NewDatabase(t, service.MigrationSets...),
			APIKeys: servicetest.OperatorKey, AdminAPIKeys: servicetest.AdminKey, InternalToken: servicetest.InternalToken,
		},
		RelayPollInterval: 50 * time.Millisecond,
	}
	edit(&cfg)
	svc := servicetest.New(t, service.New, cfg)
	servicetest.RunInBackground(t, svc.Run)
	conn := servicetest.DialAdmin(t, svc.Addr())
	return testBundle{
		client: lifecyclev1.NewLifecycleServiceClient(conn), conn: conn, svc: svc,
		operator: lifecyclev1.NewLifecycleServiceClient(servicetest.DialOperator(t, svc.Addr())),
	}
}

const (
	guardText = "Cannot archive session %d: 1 queued message has not been delivered. Archiving discards it.\n\n" +
		"  1. What do you mean I pulled yellow onion?\n\nDo not archive. … re-call with \"force\": true."
	retirementClause = ` — 1 queued message was never delivered and is now marked undelivered: "What do you mean I pulled yellow onion?"`
)

// byOperator is a line as a call with the tests' operator key writes it.
func byOperator(line string) string {
	return line + " (by operator key …" + servicetest.OperatorKey[len(servicetest.OperatorKey)-4:] + ")"
}

// archiveLine is the session's last archive line.
func (b testBundle) archiveLine(t *testing.T, id int64) string {
	t.Helper()
	var line string
	for _, l := range b.timeline(t, id) {
		if strings.Contains(l.GetMessage(), "Session moved to trash") {
			line = l.GetMessage()
		}
	}
	return line
}

// retirements are the payloads of the session's retire_enqueued_messages
// effects, each checked to be alerting.
func (b testBundle) retirements(t *testing.T, id int64) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, e := range b.events(t, id) {
		if e.GetName() == "retire_enqueued_messages" {
			require.True(t, e.GetAlerting())
			out = append(out, e.GetPayload().AsMap())
		}
	}
	return out
}

// TestArchiveGuardRefusesInTheQueuesWordsBeforeHaltingAnything: over a
// queued message the archive is refused with exactly the queue's text,
// sealed first and refused before the running turn is touched; with force
// it goes through — sealed, then halted, then committed — the retirement
// named after the archive line's own words and marked forced.
func TestArchiveGuardRefusesInTheQueuesWordsBeforeHaltingAnything(t *testing.T) {
	t.Parallel()
	b, queue := setupGuarded(t)
	ctx := surface.Outgoing(t.Context(), surface.MCP)
	id := b.running(t)
	text := fmt.Sprintf(guardText, id)
	queue.refuse(id, text, retirementClause)
	acting := int64(5225)
	lines := len(b.timeline(t, id))

	_, err := b.operator.ArchiveSession(ctx, &lifecyclev1.ArchiveSessionRequest{SessionId: fmt.Sprint(id), ActingSessionId: &acting})
	require.Equal(t, codes.FailedPrecondition, status.Code(err))
	require.Equal(t, text, status.Convert(err).Message(), "the queue's words, exactly")
	require.Equal(t, []string{fmt.Sprintf("seal %d force=false", id)}, queue.calls(),
		"refused before the turn is interrupted; the queue unsealed itself")
	require.Equal(t, "running", b.get(t, id).GetStatus())
	require.Len(t, b.timeline(t, id), lines, "a guard's refusal writes nothing")

	resp, err := b.operator.ArchiveSession(ctx, &lifecyclev1.ArchiveSessionRequest{SessionId: fmt.Sprint(id), ActingSessionId: &acting, Force: true})
	require.NoError(t, err)
	require.Equal(t, "archived", resp.GetSession().GetStatus())
	require.Equal(t, []string{
		fmt.Sprintf("seal %d force=false", id),
		fmt.Sprintf("seal %d force=true", id), fmt.Sprintf("interrupt %d", id),
	}, queue.calls(), "sealed, then halted; a committed archive keeps its seal")
	require.Equal(t, byOperator("[State Machine] Session moved to trash by session #5225 via the MCP API"+retirementClause), b.archiveLine(t, id),
		"the spec's words first, then the queue's")
	retired := b.retirements(t, id)
	require.Len(t, retired, 1)
	require.Equal(t, true, retired[0]["forced"])
	require.Equal(t, resp.GetSession().GetArchivedAt().AsTime().Format(time.RFC3339), retired[0]["archived_at"])
	attempts := queue.attemptsOf(id)
	require.Equal(t, strings.TrimPrefix(attempts[len(attempts)-1], "seal "), retired[0]["attempt_id"],
		"the retirement names the attempt whose seal it may lift when its unarchive came first")

	// The restore reopens the queue.
	_, err = b.operator.UnarchiveSession(ctx, &lifecyclev1.UnarchiveSessionRequest{SessionId: fmt.Sprint(id)})
	require.NoError(t, err)
	var reopened int
	for _, e := range b.events(t, id) {
		if e.GetName() == "reopen_enqueued_messages" {
			require.True(t, e.GetAlerting())
			require.NotEmpty(t, e.GetPayload().AsMap()["unarchived_at"])
			reopened++
		}
	}
	require.Equal(t, 1, reopened)
}

// TestAnArchiveThatDoesNotCommitUnseals: the seal is lifted, with the
// attempt that made it, when the archive fails to commit and when the
// machine refuses it (someone archived the session meanwhile).
func TestAnArchiveThatDoesNotCommitUnseals(t *testing.T) {
	t.Parallel()
	b, queue := setupGuarded(t)
	ctx := t.Context()

	failing := b.create(t, &lifecyclev1.CreateSessionRequest{}).GetId()
	_, err := b.svc.Pool.Exec(ctx, fmt.Sprintf(`
		CREATE FUNCTION refuse_archive() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'disk full'; END $$;
		CREATE TRIGGER refuse_archive BEFORE UPDATE ON sessions FOR EACH ROW
			WHEN (NEW.status = 3 AND NEW.id = %d) EXECUTE FUNCTION refuse_archive();`, failing))
	require.NoError(t, err)
	_, err = b.operator.ArchiveSession(ctx, &lifecyclev1.ArchiveSessionRequest{SessionId: fmt.Sprint(failing)})
	require.Equal(t, codes.Internal, status.Code(err), "%v", err)
	require.Equal(t, "waiting", b.get(t, failing).GetStatus())
	attempts := queue.attemptsOf(failing)
	require.Len(t, attempts, 2)
	sealed, unsealed := strings.TrimPrefix(attempts[0], "seal "), strings.TrimPrefix(attempts[1], "unseal ")
	require.Regexp(t, `^[0-9a-f-]{36}$`, sealed)
	require.Equal(t, sealed, unsealed, "the attempt that sealed unseals")

	// The machine refuses: the session was archived (a system archive)
	// between the seal and the commit.
	raced := b.create(t, &lifecyclev1.CreateSessionRequest{}).GetId()
	var systemArchive error
	queue.mu.Lock()
	queue.onSeal = func(id int64) {
		if id == raced {
			_, systemArchive = b.client.TransitionSession(ctx, &lifecyclev1.TransitionSessionRequest{SessionId: fmt.Sprint(id), Event: "archive"})
		}
	}
	queue.mu.Unlock()
	_, err = b.operator.ArchiveSession(ctx, &lifecyclev1.ArchiveSessionRequest{SessionId: fmt.Sprint(raced)})
	require.NoError(t, systemArchive)
	require.Equal(t, codes.FailedPrecondition, status.Code(err))
	require.Contains(t, status.Convert(err).Message(), "it is archived")
	require.Equal(t, []string{"seal", "unseal"}, verbs(queue.attemptsOf(raced)))

	// An archived session is refused by the machine without a seal.
	_, err = b.operator.ArchiveSession(ctx, &lifecyclev1.ArchiveSessionRequest{SessionId: fmt.Sprint(raced)})
	require.Equal(t, codes.FailedPrecondition, status.Code(err))
	require.Equal(t, []string{"seal", "unseal"}, verbs(queue.attemptsOf(raced)), "no seal of an archived session's queue")
}

func verbs(attempts []string) []string {
	out := make([]string, len(attempts))
	for i, a := range attempts {
		out[i], _, _ = strings.Cut(a, " ")
	}
	return out
}

// TestBulkArchiveReportsEachRefusalAndForceCoversTheBatch: a refusal of
// one session is its entry in errors, in the queue's words, and the batch
// goes on; force applies to every session of the batch.
func TestBulkArchiveReportsEachRefusalAndForceCoversTheBatch(t *testing.T) {
	t.Parallel()
	b, queue := setupGuarded(t)
	ctx := t.Context()
	empty, queued, other := b.create(t, &lifecyclev1.CreateSessionRequest{}).GetId(), b.needsInput(t), b.create(t, &lifecyclev1.CreateSessionRequest{}).GetId()
	text := fmt.Sprintf(guardText, queued)
	queue.refuse(queued, text, retirementClause)

	resp, err := b.operator.BulkArchiveSessions(ctx, &lifecyclev1.BulkArchiveSessionsRequest{SessionIds: []string{fmt.Sprint(empty), fmt.Sprint(queued), fmt.Sprint(other)}})
	require.NoError(t, err)
	require.EqualValues(t, 2, resp.GetArchivedCount())
	require.Len(t, resp.GetErrors(), 1)
	require.Equal(t, fmt.Sprint(queued), resp.GetErrors()[0].GetSessionId())
	// Issue 23 rule 17: the bulk refusal says force is the whole batch's.
	require.Equal(t, text+domain.BulkForceNote, resp.GetErrors()[0].GetError())
	require.Contains(t, resp.GetErrors()[0].GetError(), `"force": true applies to every session in the batch`)
	require.Equal(t, "needs_input", b.get(t, queued).GetStatus())
	require.Equal(t, byOperator("[State Machine] Session moved to trash by an unrecorded caller (bulk)"), b.archiveLine(t, empty))

	again := b.create(t, &lifecyclev1.CreateSessionRequest{}).GetId()
	resp, err = b.operator.BulkArchiveSessions(ctx, &lifecyclev1.BulkArchiveSessionsRequest{SessionIds: []string{fmt.Sprint(queued), fmt.Sprint(again)}, Force: true})
	require.NoError(t, err)
	require.EqualValues(t, 2, resp.GetArchivedCount())
	require.Empty(t, resp.GetErrors())
	require.Equal(t, byOperator("[State Machine] Session moved to trash by an unrecorded caller (bulk)"+retirementClause), b.archiveLine(t, queued))
	require.Contains(t, queue.calls(), fmt.Sprintf("seal %d force=true", queued))
	require.Contains(t, queue.calls(), fmt.Sprintf("seal %d force=true", again))
}

// TestTheSystemArchiveDoesNotAskTheQueue: the raw archive event
// (TransitionSession: sweeps, harvests, operators) is never refused by the
// guard and never forces — its retirement pages.
func TestTheSystemArchiveDoesNotAskTheQueue(t *testing.T) {
	t.Parallel()
	b, queue := setupGuarded(t)
	id := b.needsInput(t)
	queue.refuse(id, fmt.Sprintf(guardText, id), retirementClause)

	got, err := b.fire(t, id, "archive")
	require.NoError(t, err)
	require.Equal(t, "archived", got.GetStatus())
	require.Empty(t, queue.calls(), "no seal, no refusal")
	require.Equal(t, []map[string]any{{"forced": false, "archived_at": got.GetArchivedAt().AsTime().Format(time.RFC3339), "attempt_id": ""}}, b.retirements(t, id),
		"a system archive sealed nothing, so its retirement names no attempt")
	require.NotContains(t, b.archiveLine(t, id), "queued message", "only the queue's clause names messages")
}

// TestAnArchiveIsRefusedWhenTheQueueDoesNotAnswer: the guard cannot be
// skipped; the caller retries (Unavailable) and nothing is archived.
func TestAnArchiveIsRefusedWhenTheQueueDoesNotAnswer(t *testing.T) {
	t.Parallel()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	down := lis.Addr().String()
	require.NoError(t, lis.Close()) // nothing listens there
	b := setupWithConfig(t, func(c *config.Config) { c.QueueAddr, c.QueueTimeout = down, 2*time.Second })
	id := b.create(t, &lifecyclev1.CreateSessionRequest{}).GetId()

	_, err = b.operator.ArchiveSession(t.Context(), &lifecyclev1.ArchiveSessionRequest{SessionId: fmt.Sprint(id), Force: true})
	require.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
	require.Contains(t, status.Convert(err).Message(), "retry")
	require.Equal(t, "waiting", b.get(t, id).GetStatus())
	resp, err := b.operator.BulkArchiveSessions(t.Context(), &lifecyclev1.BulkArchiveSessionsRequest{SessionIds: []string{fmt.Sprint(id)}})
	require.NoError(t, err)
	require.Len(t, resp.GetErrors(), 1)
	require.Contains(t, resp.GetErrors()[0].GetError(), "retry")

	got, err := b.fire(t, id, "archive")
	require.NoError(t, err, "the system archive needs no queue")
	require.Equal(t, "archived", got.GetStatus())
}
