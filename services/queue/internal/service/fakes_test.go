package service_test

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
	notificationv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/notification/v1"
	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"
	runnerv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/runner/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/effect"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/principal"
	"github.com/zimmerhq/zimmer/services/platform/servicetest"
	"github.com/zimmerhq/zimmer/services/queue/internal/config"
	"github.com/zimmerhq/zimmer/services/queue/internal/service"
)

// The fakes below stand in for the services the queue calls while it
// delivers: lifecycle (sessions, DeliverTurn, the pause), the runner
// (InterruptTurn), lineage (uncle edges) and notification (alerts). Each
// records every call, and all of them write one shared callLog, so a test
// can say in which order the queue called them.

// callLog is the order of the calls the queue made, across every fake.
type callLog struct {
	mu    sync.Mutex
	calls []string
}

func (l *callLog) add(format string, a ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, fmt.Sprintf(format, a...))
}

// with is the calls whose text starts with one of prefixes, in order.
func (l *callLog) with(prefixes ...string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, c := range l.calls {
		for _, p := range prefixes {
			if strings.HasPrefix(c, p) {
				out = append(out, c)
				break
			}
		}
	}
	return out
}

// fakeSession is one session of the fake lifecycle's roster.
type fakeSession struct {
	ID           int64
	Slug         string
	Status       string
	RunningJobID string
	PausedBy     string
	// Reported, when set, is the status the next GetSession answers
	// instead of Status: what the queue read just before the session moved
	// on (it started running meanwhile, say). That read, or a delivery,
	// clears it.
	Reported      string
	DrainAttempts int32
}

// appliedDelivery is a DeliverTurn the fake lifecycle carried out.
type appliedDelivery struct {
	SessionID  int64
	DeliveryID string
	JobID      string
	Prompt     string
	Mode       lifecyclev1.DeliveryMode
}

// lifecycleFake is lifecycle as the queue sees it. DeliverTurn follows
// lifecycle's rules (domain.Deliver): a delivery id it applied before is
// answered already_delivered with its job whatever the session's state;
// archived and failed sessions are CLOSED; IDLE wants a session at rest,
// HANDOVER the running turn from_job_id, AFTER_INTERRUPT a running
// session still running from_job_id (when given), and anything else is
// BUSY. A delivery draws a fresh job id and
// leaves the session running it.
type lifecycleFake struct {
	lifecyclev1.UnimplementedLifecycleServiceServer
	log *callLog

	mu       sync.Mutex
	sessions map[int64]*fakeSession
	calls    []*lifecyclev1.DeliverTurnRequest
	applied  []appliedDelivery
	byID     map[string]appliedDelivery
	pauses   []*lifecyclev1.TransitionSessionRequest
	jobs     int
	// deliverHook, when set, runs on every DeliverTurn before it is
	// decided (after it is recorded); an error is the call's answer.
	deliverHook func(*lifecyclev1.DeliverTurnRequest) error
	// lostAnswers is how many of the next deliveries are applied and then
	// answered Unavailable, as if the answer was lost on the way back.
	lostAnswers int
	// readDelay holds every GetSession answer back, after the status is
	// read: the caller acts on a status that may have changed meanwhile.
	readDelay time.Duration
}

func newLifecycleFake(log *callLog, sessions ...*fakeSession) *lifecycleFake {
	f := &lifecycleFake{log: log, sessions: map[int64]*fakeSession{}, byID: map[string]appliedDelivery{}}
	for _, s := range sessions {
		f.sessions[s.ID] = s
	}
	return f
}

// update changes session id under the fake's lock.
func (f *lifecycleFake) update(id int64, change func(s *fakeSession)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(f.sessions[id])
}

// remove hard-deletes session id: lifecycle no longer knows it.
func (f *lifecycleFake) remove(id int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.sessions, id)
}

// setStatus moves session id to status (and, for running, job).
func (f *lifecycleFake) setStatus(id int64, status string) {
	f.update(id, func(s *fakeSession) { s.Status, s.Reported = status, "" })
}

func (f *lifecycleFake) session(id int64) fakeSession {
	f.mu.Lock()
	defer f.mu.Unlock()
	return *f.sessions[id]
}

// loseAnswers makes the next n deliveries apply and then fail.
func (f *lifecycleFake) loseAnswers(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lostAnswers = n
}

func (f *lifecycleFake) setDeliverHook(h func(*lifecyclev1.DeliverTurnRequest) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deliverHook = h
}

// deliverCalls is every DeliverTurn the queue made, refused and failed
// ones included.
func (f *lifecycleFake) deliverCalls() []*lifecyclev1.DeliverTurnRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*lifecyclev1.DeliverTurnRequest(nil), f.calls...)
}

// appliedDeliveries is every delivery that became a turn, in order.
func (f *lifecycleFake) appliedDeliveries() []appliedDelivery {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]appliedDelivery(nil), f.applied...)
}

func (f *lifecycleFake) pauseCalls() []*lifecyclev1.TransitionSessionRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*lifecyclev1.TransitionSessionRequest(nil), f.pauses...)
}

func (f *lifecycleFake) GetSession(_ context.Context, req *lifecyclev1.GetSessionRequest) (*lifecyclev1.GetSessionResponse, error) {
	resp, delay, err := f.getSession(req.GetSessionId())
	time.Sleep(delay)
	return resp, err
}

func (f *lifecycleFake) getSession(ref string) (*lifecyclev1.GetSessionResponse, time.Duration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.sessions {
		if ref == strconv.FormatInt(s.ID, 10) || ref == s.Slug {
			st := s.Status
			if s.Reported != "" {
				// Read once, just before the session moved on: the next
				// read sees where it is.
				st, s.Reported = s.Reported, ""
			}
			read := &lifecyclev1.Session{Id: s.ID, Slug: s.Slug, Status: st, PausedBy: s.PausedBy, RunningJobId: s.RunningJobID}
			return &lifecyclev1.GetSessionResponse{Session: read}, f.readDelay, nil
		}
	}
	return nil, 0, status.Errorf(codes.NotFound, "no session %s", ref)
}

func (f *lifecycleFake) setReadDelay(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.readDelay = d
}

func (f *lifecycleFake) DeliverTurn(_ context.Context, req *lifecyclev1.DeliverTurnRequest) (*lifecyclev1.DeliverTurnResponse, error) {
	f.log.add("lifecycle.DeliverTurn %s %s", req.GetMode(), req.GetDeliveryId())
	f.mu.Lock()
	f.calls = append(f.calls, proto.Clone(req).(*lifecyclev1.DeliverTurnRequest))
	hook := f.deliverHook
	f.mu.Unlock()
	if hook != nil {
		if err := hook(req); err != nil {
			return nil, err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.sessions[req.GetSessionId()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "no session %d", req.GetSessionId())
	}
	if d, ok := f.byID[req.GetDeliveryId()]; ok {
		return &lifecyclev1.DeliverTurnResponse{JobId: d.JobID, AlreadyDelivered: true}, nil
	}
	refuse := func(r lifecyclev1.DeliveryRefusal, why string) (*lifecyclev1.DeliverTurnResponse, error) {
		return &lifecyclev1.DeliverTurnResponse{Refusal: r, Message: fmt.Sprintf("session %d %s", s.ID, why)}, nil
	}
	switch s.Status {
	case rules.StatusArchived:
		return refuse(lifecyclev1.DeliveryRefusal_DELIVERY_REFUSAL_CLOSED, "is archived")
	case rules.StatusFailed:
		return refuse(lifecyclev1.DeliveryRefusal_DELIVERY_REFUSAL_CLOSED, "failed: restart it")
	}
	switch req.GetMode() {
	case lifecyclev1.DeliveryMode_DELIVERY_MODE_IDLE:
		if s.Status != rules.StatusWaiting && s.Status != rules.StatusNeedsInput {
			return refuse(lifecyclev1.DeliveryRefusal_DELIVERY_REFUSAL_BUSY, "is "+s.Status)
		}
	case lifecyclev1.DeliveryMode_DELIVERY_MODE_HANDOVER:
		if s.Status != rules.StatusRunning || s.RunningJobID != req.GetFromJobId() {
			return refuse(lifecyclev1.DeliveryRefusal_DELIVERY_REFUSAL_BUSY, fmt.Sprintf("is %s turn %q, not %q", s.Status, s.RunningJobID, req.GetFromJobId()))
		}
	case lifecyclev1.DeliveryMode_DELIVERY_MODE_AFTER_INTERRUPT:
		if s.Status != rules.StatusRunning {
			return refuse(lifecyclev1.DeliveryRefusal_DELIVERY_REFUSAL_BUSY, "is "+s.Status+", not running")
		}
		if req.GetFromJobId() != "" && s.RunningJobID != req.GetFromJobId() {
			return refuse(lifecyclev1.DeliveryRefusal_DELIVERY_REFUSAL_BUSY, fmt.Sprintf("is running turn %q, not the interrupted %q", s.RunningJobID, req.GetFromJobId()))
		}
	default:
		return nil, status.Errorf(codes.InvalidArgument, "mode %s", req.GetMode())
	}
	f.jobs++
	d := appliedDelivery{SessionID: s.ID, DeliveryID: req.GetDeliveryId(), JobID: fmt.Sprintf("delivery/%d", f.jobs),
		Prompt: req.GetPrompt(), Mode: req.GetMode()}
	s.Status, s.Reported, s.RunningJobID, s.PausedBy, s.DrainAttempts = rules.StatusRunning, "", d.JobID, "", 0
	f.byID[d.DeliveryID] = d
	f.applied = append(f.applied, d)
	if f.lostAnswers > 0 {
		f.lostAnswers--
		return nil, status.Error(codes.Unavailable, "the connection dropped before the answer")
	}
	return &lifecyclev1.DeliverTurnResponse{JobId: d.JobID}, nil
}

// TransitionSession carries out the one transition the queue makes: the
// pause after an interrupted turn whose delivery failed.
func (f *lifecycleFake) TransitionSession(_ context.Context, req *lifecyclev1.TransitionSessionRequest) (*lifecyclev1.TransitionSessionResponse, error) {
	f.log.add("lifecycle.TransitionSession %s %s by %s", req.GetSessionId(), req.GetEvent(), req.GetPausedBy())
	f.mu.Lock()
	defer f.mu.Unlock()
	if req.GetEvent() != rules.EventPause {
		return nil, status.Errorf(codes.Unimplemented, "the fake lifecycle only pauses, not %q", req.GetEvent())
	}
	f.pauses = append(f.pauses, proto.Clone(req).(*lifecyclev1.TransitionSessionRequest))
	id, _ := strconv.ParseInt(req.GetSessionId(), 10, 64)
	s, ok := f.sessions[id]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "no session %s", req.GetSessionId())
	}
	if s.Status != rules.StatusRunning {
		return nil, status.Errorf(codes.FailedPrecondition, "session %d is %s, not running", id, s.Status)
	}
	s.Status, s.RunningJobID, s.PausedBy = rules.StatusNeedsInput, "", req.GetPausedBy()
	return &lifecyclev1.TransitionSessionResponse{Session: &lifecyclev1.Session{Id: id, Status: s.Status, PausedBy: s.PausedBy}}, nil
}

func (f *lifecycleFake) RecordDrainAttempt(_ context.Context, req *lifecyclev1.RecordDrainAttemptRequest) (*lifecyclev1.RecordDrainAttemptResponse, error) {
	f.log.add("lifecycle.RecordDrainAttempt %d", req.GetSessionId())
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.sessions[req.GetSessionId()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "no session %d", req.GetSessionId())
	}
	switch s.Status {
	case rules.StatusWaiting, rules.StatusNeedsInput:
		s.DrainAttempts++
		return &lifecyclev1.RecordDrainAttemptResponse{Attempts: s.DrainAttempts}, nil
	case rules.StatusArchived, rules.StatusFailed:
		return &lifecyclev1.RecordDrainAttemptResponse{Refusal: lifecyclev1.DeliveryRefusal_DELIVERY_REFUSAL_CLOSED, Message: "closed"}, nil
	}
	return &lifecyclev1.RecordDrainAttemptResponse{Refusal: lifecyclev1.DeliveryRefusal_DELIVERY_REFUSAL_BUSY, Message: "running"}, nil
}

// runnerFake halts turns: InterruptTurn answers interrupted when the
// lifecycle fake has the session running the turn it names (any turn, when
// it names none), after delay (the termination ladder takes a while).
type runnerFake struct {
	runnerv1.UnimplementedRunnerServiceServer
	log       *callLog
	lifecycle *lifecycleFake

	mu    sync.Mutex
	delay time.Duration
	// fail, when set, is every InterruptTurn's answer (nothing is halted).
	fail  error
	calls []*runnerv1.InterruptTurnRequest
}

func (f *runnerFake) failWith(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = err
}

func (f *runnerFake) setDelay(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.delay = d
}

func (f *runnerFake) interrupts() []*runnerv1.InterruptTurnRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*runnerv1.InterruptTurnRequest(nil), f.calls...)
}

func (f *runnerFake) InterruptTurn(_ context.Context, req *runnerv1.InterruptTurnRequest) (*runnerv1.InterruptTurnResponse, error) {
	f.log.add("runner.InterruptTurn %d", req.GetSessionId())
	f.mu.Lock()
	f.calls = append(f.calls, proto.Clone(req).(*runnerv1.InterruptTurnRequest))
	delay, fail := f.delay, f.fail
	f.mu.Unlock()
	time.Sleep(delay)
	if fail != nil {
		return nil, fail
	}
	s := f.lifecycle.session(req.GetSessionId())
	if s.Status != rules.StatusRunning || req.GetTurnId() != "" && req.GetTurnId() != s.RunningJobID {
		return &runnerv1.InterruptTurnResponse{}, nil
	}
	return &runnerv1.InterruptTurnResponse{Interrupted: true, TurnId: s.RunningJobID}, nil
}

// lineageFake records uncle edges with the outcome it is set to answer.
type lineageFake struct {
	lineagev1.UnimplementedLineageServiceServer
	log *callLog

	mu          sync.Mutex
	outcome     lineagev1.UncleEdgeOutcome
	records     []*lineagev1.RecordUncleEdgeRequest
	retractions []*lineagev1.RetractUncleEdgeRequest
	// refusal, when set, is every RecordUncleEdge's answer.
	refusal error
}

func (f *lineageFake) refuseWith(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refusal = err
}

func (f *lineageFake) answer(o lineagev1.UncleEdgeOutcome) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.outcome = o
}

func (f *lineageFake) recorded() []*lineagev1.RecordUncleEdgeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*lineagev1.RecordUncleEdgeRequest(nil), f.records...)
}

func (f *lineageFake) retracted() []*lineagev1.RetractUncleEdgeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*lineagev1.RetractUncleEdgeRequest(nil), f.retractions...)
}

func (f *lineageFake) RecordUncleEdge(_ context.Context, req *lineagev1.RecordUncleEdgeRequest) (*lineagev1.RecordUncleEdgeResponse, error) {
	f.log.add("lineage.RecordUncleEdge %d→%d", req.GetActingSessionId(), req.GetTargetSessionId())
	f.mu.Lock()
	defer f.mu.Unlock()
	f.records = append(f.records, proto.Clone(req).(*lineagev1.RecordUncleEdgeRequest))
	if f.refusal != nil {
		return nil, f.refusal
	}
	return &lineagev1.RecordUncleEdgeResponse{Outcome: f.outcome,
		Message: fmt.Sprintf("lineage answers %s for %d → %d", f.outcome, req.GetActingSessionId(), req.GetTargetSessionId())}, nil
}

func (f *lineageFake) RetractUncleEdge(_ context.Context, req *lineagev1.RetractUncleEdgeRequest) (*lineagev1.RetractUncleEdgeResponse, error) {
	f.log.add("lineage.RetractUncleEdge %d→%d", req.GetActingSessionId(), req.GetTargetSessionId())
	f.mu.Lock()
	defer f.mu.Unlock()
	f.retractions = append(f.retractions, proto.Clone(req).(*lineagev1.RetractUncleEdgeRequest))
	return &lineagev1.RetractUncleEdgeResponse{Retracted: true}, nil
}

// notificationFake records the alerts raised.
type notificationFake struct {
	notificationv1.UnimplementedNotificationServiceServer
	log *callLog

	mu     sync.Mutex
	alerts []*notificationv1.RaiseAlertRequest
}

func (f *notificationFake) raised() []*notificationv1.RaiseAlertRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*notificationv1.RaiseAlertRequest(nil), f.alerts...)
}

func (f *notificationFake) RaiseAlert(_ context.Context, req *notificationv1.RaiseAlertRequest) (*notificationv1.RaiseAlertResponse, error) {
	f.log.add("notification.RaiseAlert %s", req.GetDedupKey())
	f.mu.Lock()
	defer f.mu.Unlock()
	f.alerts = append(f.alerts, proto.Clone(req).(*notificationv1.RaiseAlertRequest))
	return &notificationv1.RaiseAlertResponse{Paged: true}, nil
}

// serveFake serves one fake on a loopback port until the test ends.
func serveFake(t *testing.T, register func(*grpc.Server)) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	g := grpc.NewServer()
	register(g)
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)
	return lis.Addr().String()
}

// harness is the real queue service, on a fresh database and without
// Temporal (no drain: its own tests cover it), wired to the fakes.
type harness struct {
	log          *callLog
	lifecycle    *lifecycleFake
	runner       *runnerFake
	lineage      *lineageFake
	notification *notificationFake
	svc          *service.Service
	addr         string
	// queue is the public API as an operator; internal is the queue as the
	// services that call its internal methods see it (the runner's
	// hand-over, lifecycle's archive guard).
	queue    queuev1.QueueServiceClient
	internal queuev1.QueueServiceClient
	consumer lifecyclev1.SessionEventConsumerServiceClient
}

func startHarness(t *testing.T, sessions ...*fakeSession) *harness {
	t.Helper()
	return startHarnessWith(t, nil, sessions...)
}

// startHarnessWith is startHarness with the configuration adjusted by
// configure first (e.g. a Temporal namespace of the test's own, for the
// drain).
func startHarnessWith(t *testing.T, configure func(*config.Config), sessions ...*fakeSession) *harness {
	t.Helper()
	h := &harness{log: &callLog{}}
	h.lifecycle = newLifecycleFake(h.log, sessions...)
	h.runner = &runnerFake{log: h.log, lifecycle: h.lifecycle}
	h.lineage = &lineageFake{log: h.log, outcome: lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_WRITTEN}
	h.notification = &notificationFake{log: h.log}
	cfg := config.Config{
		Config:        servicetest.Config(t, service.MigrationSets...),
		LifecycleAddr: serveFake(t, func(g *grpc.Server) { lifecyclev1.RegisterLifecycleServiceServer(g, h.lifecycle) }),
		RunnerAddr:    serveFake(t, func(g *grpc.Server) { runnerv1.RegisterRunnerServiceServer(g, h.runner) }),
		LineageAddr:   serveFake(t, func(g *grpc.Server) { lineagev1.RegisterLineageServiceServer(g, h.lineage) }),
		NotificationAddr: serveFake(t, func(g *grpc.Server) {
			notificationv1.RegisterNotificationServiceServer(g, h.notification)
		}),
	}
	if configure != nil {
		configure(&cfg)
	}
	h.svc = servicetest.New(t, service.New, cfg)
	servicetest.RunInBackground(t, h.svc.Run)
	h.addr = h.svc.Addr()
	h.queue = queuev1.NewQueueServiceClient(servicetest.DialOperator(t, h.addr))
	h.internal = queuev1.NewQueueServiceClient(servicetest.DialAsService(t, h.addr, "lifecycle"))
	h.consumer = lifecyclev1.NewSessionEventConsumerServiceClient(servicetest.DialAsService(t, h.addr, "lifecycle"))
	return h
}

// asSession is a context and client for a call through the gateway with
// session id's credential (self scope).
func (h *harness) asSession(t *testing.T, id int64) (context.Context, queuev1.QueueServiceClient) {
	t.Helper()
	ctx, err := principal.Outgoing(t.Context(), principal.Principal{Kind: principal.Session, SessionID: id, Scopes: []string{principal.ScopeSelf}})
	require.NoError(t, err)
	return ctx, queuev1.NewQueueServiceClient(servicetest.DialAsService(t, h.addr, "gateway"))
}

func (h *harness) enqueue(t *testing.T, session int64, content string) *queuev1.EnqueuedMessage {
	t.Helper()
	resp, err := h.queue.EnqueueMessage(t.Context(), &queuev1.EnqueueMessageRequest{SessionId: strconv.FormatInt(session, 10), Content: content})
	require.NoError(t, err)
	return resp.GetEnqueuedMessage()
}

// messages is the session's queue by message id.
func (h *harness) messages(t *testing.T, session int64) map[int64]*queuev1.EnqueuedMessage {
	t.Helper()
	out := map[int64]*queuev1.EnqueuedMessage{}
	for _, m := range h.list(t, session) {
		out[m.GetId()] = m
	}
	return out
}

func (h *harness) list(t *testing.T, session int64) []*queuev1.EnqueuedMessage {
	t.Helper()
	resp, err := h.queue.ListEnqueuedMessages(t.Context(), &queuev1.ListEnqueuedMessagesRequest{SessionId: strconv.FormatInt(session, 10)})
	require.NoError(t, err)
	return resp.GetEnqueuedMessages()
}

// byStatus counts the session's messages by status.
func (h *harness) byStatus(t *testing.T, session int64) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, m := range h.list(t, session) {
		out[m.GetStatus()]++
	}
	return out
}

// effect hands the queue's consumer one of lifecycle's effects.
func (h *harness) effect(t *testing.T, session int64, e *lifecyclev1.SessionEffect) error {
	t.Helper()
	e.Alerting = true
	_, err := h.consumer.ConsumeSessionEvent(t.Context(), &lifecyclev1.ConsumeSessionEventRequest{Event: &lifecyclev1.SessionEvent{
		EventId: fmt.Sprintf("%s/%d/%d", effect.Name(e), session, time.Now().UnixNano()), SessionId: session,
		Payload: &lifecyclev1.SessionEvent_Effect{Effect: e},
	}})
	return err
}

// The effects lifecycle addresses to the queue, as its events carry them.
func retireEffect(forced bool, at *timestamppb.Timestamp) *lifecyclev1.SessionEffect {
	return &lifecyclev1.SessionEffect{Kind: &lifecyclev1.SessionEffect_RetireMessages{
		RetireMessages: &lifecyclev1.RetireMessagesEffect{Forced: forced, ArchivedAt: at}}}
}

func reopenEffect(at *timestamppb.Timestamp) *lifecyclev1.SessionEffect {
	return &lifecyclev1.SessionEffect{Kind: &lifecyclev1.SessionEffect_ReopenMessages{
		ReopenMessages: &lifecyclev1.ReopenMessagesEffect{UnarchivedAt: at}}}
}

func drainEffect(statusAfter string) *lifecyclev1.SessionEffect {
	return &lifecyclev1.SessionEffect{Kind: &lifecyclev1.SessionEffect_Drain{
		Drain: &lifecyclev1.DrainEffect{StatusAfter: statusAfter}}}
}

// notificationsEffect is another owner's.
func notificationsEffect() *lifecyclev1.SessionEffect {
	return &lifecyclev1.SessionEffect{Kind: &lifecyclev1.SessionEffect_DismissNotifications{
		DismissNotifications: &lifecyclev1.DismissNotificationsEffect{}}}
}

// retire is the archive's effect, after lifecycle committed it at at.
func (h *harness) retire(t *testing.T, session int64, forced bool, at time.Time) {
	t.Helper()
	require.NoError(t, h.effect(t, session, retireEffect(forced, timestamppb.New(at))))
}

// reopen is the unarchive's effect.
func (h *harness) reopen(t *testing.T, session int64, at time.Time) {
	t.Helper()
	require.NoError(t, h.effect(t, session, reopenEffect(timestamppb.New(at))))
}

// archive is lifecycle's guarded archive, as it drives the queue: seal
// (refused over a non-empty queue without force), the archive committed
// in the roster, then the retirement effect.
func (h *harness) archive(t *testing.T, session int64, force bool) *queuev1.SealQueueResponse {
	t.Helper()
	seal, err := h.internal.SealQueue(t.Context(), &queuev1.SealQueueRequest{SessionId: session, AttemptId: fmt.Sprintf("archive/%d/%d", session, time.Now().UnixNano()), Force: force})
	require.NoError(t, err)
	if seal.GetRefusal() != "" {
		return seal
	}
	h.lifecycle.setStatus(session, rules.StatusArchived)
	h.retire(t, session, force, time.Now())
	return seal
}

func requireCode(t *testing.T, want codes.Code, err error) {
	t.Helper()
	require.Equal(t, want, status.Code(err), "%v", err)
}
