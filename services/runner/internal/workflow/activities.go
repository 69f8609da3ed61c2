package workflow

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	oteltrace "go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/tracing"
	"github.com/zimmerhq/zimmer/services/runner/internal/agent"
	"github.com/zimmerhq/zimmer/services/runner/internal/domain"
	"github.com/zimmerhq/zimmer/services/runner/internal/process"
	"github.com/zimmerhq/zimmer/services/runner/internal/workspace"
)

// Lifecycle is what the turn needs of the lifecycle service, called as the
// runner service.
type Lifecycle interface {
	// Transition fires one event under req.IdempotencyKey: a retry of a
	// call that had applied is answered as already applied (success); a
	// refusal is a *RefusedError.
	Transition(ctx context.Context, req TransitionRequest) error
	// MintCredential issues a session credential for one turn's agent.
	MintCredential(ctx context.Context, req CredentialRequest) (id, token string, err error)
	// RevokeCredential revokes it when the turn ends.
	RevokeCredential(ctx context.Context, sessionID int64, id string) error
	// RevokeTurnCredentials revokes every credential minted for one turn
	// of the session; revoking none is success.
	RevokeTurnCredentials(ctx context.Context, sessionID int64, turnID string) error
	// SweepNodeCredentials revokes the turn credentials node's earlier
	// incarnations minted (all but incarnation's), and says how many.
	SweepNodeCredentials(ctx context.Context, node, incarnation string) (int, error)
	// SessionState reads what the workflow decides on: the session's
	// status and markers, whether it is asleep on a wake still ahead (only
	// asked of a waiting session), and its spec.
	SessionState(ctx context.Context, sessionID int64) (SessionState, error)
	// AbandonRecovery gives up recovering the session automatically.
	AbandonRecovery(ctx context.Context, sessionID int64, reason string) error
	// Note writes one line on the session's timeline (a warning when
	// warning); a noteID seen before writes nothing again.
	Note(ctx context.Context, sessionID int64, noteID, message string, warning bool) error
	// AcquireSlot asks a turn slot for the session's turn; a
	// *RefusedError when the session can no longer run.
	AcquireSlot(ctx context.Context, req SlotRequest) (SlotAnswer, error)
	// ReleaseSlot gives the session's slot back, and answers the sessions
	// whose waiting turns the freed slot went to.
	ReleaseSlot(ctx context.Context, req SlotRequest) ([]int64, error)
}

// PullRequestRecorder tracks a pull request a session's agent opened on the
// session (lifecycle's RecordPullRequest).
type PullRequestRecorder interface {
	RecordPullRequest(ctx context.Context, sessionID int64, turnID, url string) error
}

// RefusedError is lifecycle refusing a transition for the session's state.
// Status is set only when the refusal names it without the message
// (domain.StatusGone: lifecycle knows no such session).
type RefusedError struct {
	Event, Status, Message string
}

func (e *RefusedError) Error() string {
	if e.Status != "" {
		return fmt.Sprintf("lifecycle refused %s with the session %s: %s", e.Event, e.Status, e.Message)
	}
	return fmt.Sprintf("lifecycle refused %s: %s", e.Event, e.Message)
}

// Preparer makes a session's clone (workspace.Preparer).
type Preparer interface {
	Prepare(ctx context.Context, spec workspace.Spec) (workspace.Workspace, error)
	// TakeOver moves the session's workspace from a node declared dead to
	// this one, to be cloned anew here.
	TakeOver(ctx context.Context, sessionID int64, from string) error
	// AwaitRestore waits while an unarchive's restore gives the session's
	// clone back, and answers once it is ready.
	AwaitRestore(ctx context.Context, sessionID int64, poll time.Duration) error
}

// TranscriptSink keeps turns' output (the transcript package's Sink): every
// stdout line parsed by the runtime, every stderr line as KindText with Type
// "stderr", in the order read, from one goroutine. It may be slow (the
// process package buffers behind it); its error is logged, never fatal to
// the turn.
type TranscriptSink interface {
	Append(ctx context.Context, sessionID int64, turnID string, e agent.Event) error
}

// TurnEnder is implemented by a TranscriptSink that records how each turn
// ended ("exit status 0", "killed by SIGKILL, not sent by Zimmer").
type TurnEnder interface {
	EndTurn(ctx context.Context, sessionID int64, turnID, outcome string) error
}

// NoTranscript discards transcripts.
type NoTranscript struct{}

// Append implements TranscriptSink.
func (NoTranscript) Append(context.Context, int64, string, agent.Event) error { return nil }

// Queue is what a turn's clean exit needs of the queue service, called as
// the runner service.
type Queue interface {
	// DeliverNextMessage hands the session's next queued message over as
	// the turn that follows fromJobID, the turn that just exited 0. It is
	// idempotent per fromJobID: asked again, the queue answers what it
	// handed over before. A *DrainRefusedError is an answer retrying
	// cannot change; any other error is worth retrying.
	DeliverNextMessage(ctx context.Context, sessionID int64, fromJobID string) (HandOver, error)
}

// DrainRefusedError is the queue answering a drain with an error retrying
// cannot change (a misconfigured caller, an unknown session).
type DrainRefusedError struct {
	Message string
}

func (e *DrainRefusedError) Error() string { return "the queue refused the drain: " + e.Message }

// NoQueue is the queue of a runner configured without one
// (RUNNER_QUEUE_ADDR=none): it never hands a turn over.
type NoQueue struct{}

// DeliverNextMessage implements Queue.
func (NoQueue) DeliverNextMessage(context.Context, int64, string) (HandOver, error) {
	return HandOver{}, nil
}

// Signaler sends a signal to a workflow (client.Client's SignalWorkflow).
type Signaler interface {
	SignalWorkflow(ctx context.Context, workflowID, runID, signalName string, arg any) error
}

// Activities are the runner's turn activities. Transition, SessionState and
// the drain run on any node (the drain as a local activity of the session's
// workflow); PrepareWorkspace, RunTurn and StopTurn on the node holding the
// clone.
type Activities struct {
	Lifecycle Lifecycle
	Preparer  Preparer
	Runtimes  *agent.Registry
	// StateDir holds each session's runner-owned files (prompt, MCP
	// configuration) in <StateDir>/<id>, outside every clone.
	StateDir string
	// MCPURL is the gateway's /mcp endpoint the agents call.
	MCPURL      string
	Signaler    Signaler
	Transcripts TranscriptSink
	// Queue hands a turn's successor over at its clean exit; nil is
	// NoQueue.
	Queue Queue
	// Prompts are where a turn's prompt is gathered from (composePrompt);
	// nil sends the turn's text alone.
	Prompts PromptSources
	// PullRequests records the pull requests a turn's tools opened; nil
	// records none.
	PullRequests PullRequestRecorder
	// Costs records what each turn's prompt injected and what its runtime
	// reported (docs/costs.md); nil records none.
	Costs CostRecorder
	// Process tunes the agent processes (the termination ladder's graces).
	Process process.Options
	// HeartbeatInterval is how often RunTurn heartbeats while nothing
	// changes (default DefaultTurnHeartbeat); what a lost turn's recovery
	// needs is heartbeated at once, whatever this is.
	HeartbeatInterval time.Duration
	Logger            *slog.Logger
	// Pool is the login pools' shared state; nil runs every turn under the
	// ambient login (a test rig). Refills starts an account's refill.
	Pool    AccountPool
	Refills RefillStarter
	// Node and Incarnation name this runner on the turn credentials it
	// mints: the node (RUNNER_NODE), and this process of its runner, whose
	// successor revokes them at its start (SweepNodeCredentials).
	Node, Incarnation string

	// mu guards running and stopped: a turn's process starts, and StopTurn
	// finds or forbids it, under it, so a StopTurn that found nothing
	// proves no process of that turn will ever run on this node.
	mu sync.Mutex
	// running maps a running turn's id to its process.
	running map[string]runningTurn
	// followers maps a running turn's id to what follows its output: the
	// elicitation its agent waits on, where an answer goes.
	followers map[string]*lineFollower
	// stopped are the turns StopTurn ended or forbade, with when: a RunTurn
	// that was lost on its way to starting its process (its heartbeat timed
	// out while it minted the credential, say) must not start it after the
	// workflow moved on.
	stopped map[string]time.Time
}

// ActivityRegistry is where activities are registered: a worker, or the
// test suite's environments.
type ActivityRegistry interface {
	RegisterActivityWithOptions(a any, options activity.RegisterOptions)
}

// runningTurn is a turn's process on this node, and its session.
type runningTurn struct {
	p         *process.Process
	sessionID int64
}

// RegisterShared registers the activities any runner node runs, on the
// shared task queue's worker.
func (a *Activities) RegisterShared(w ActivityRegistry) {
	w.RegisterActivityWithOptions(a.Transition, activity.RegisterOptions{Name: ActivityTransition})
	w.RegisterActivityWithOptions(a.NoteOnTimeline, activity.RegisterOptions{Name: ActivityNoteOnTimeline})
	w.RegisterActivityWithOptions(a.DrainQueue, activity.RegisterOptions{Name: ActivityDrain})
	w.RegisterActivityWithOptions(a.SessionState, activity.RegisterOptions{Name: ActivitySessionState})
	w.RegisterActivityWithOptions(a.AbandonRecovery, activity.RegisterOptions{Name: ActivityAbandonRecovery})
	w.RegisterActivityWithOptions(a.RevokeTurnCredentials, activity.RegisterOptions{Name: ActivityRevokeTurnCredentials})
	w.RegisterActivityWithOptions(a.AcquireTurnSlot, activity.RegisterOptions{Name: ActivityAcquireSlot})
	w.RegisterActivityWithOptions(a.ReleaseTurnSlot, activity.RegisterOptions{Name: ActivityReleaseSlot})
	a.registerAccounts(w)
}

// AcquireTurnSlot asks lifecycle for a turn slot. A session lifecycle will
// give none (failed, archived, gone) is not asked again.
func (a *Activities) AcquireTurnSlot(ctx context.Context, req SlotRequest) (SlotAnswer, error) {
	ans, err := a.Lifecycle.AcquireSlot(ctx, req)
	var refused *RefusedError
	if errors.As(err, &refused) {
		return SlotAnswer{}, temporal.NewNonRetryableApplicationError(refused.Error(), ErrSlotRefused, err)
	}
	return ans, err
}

// ReleaseTurnSlot gives the session's slot back and tells the workflows
// of the waiting turns the freed slot went to, so they take it now. A
// signal that does not land is only logged: such a workflow asks again
// at its next look (slotRecheck).
func (a *Activities) ReleaseTurnSlot(ctx context.Context, req SlotRequest) error {
	granted, err := a.Lifecycle.ReleaseSlot(ctx, req)
	if err != nil {
		return err
	}
	if a.Signaler == nil {
		return nil
	}
	for _, id := range granted {
		if err := a.Signaler.SignalWorkflow(ctx, ID(id), "", SignalSlot, nil); err != nil {
			a.logger().WarnContext(ctx, "tell a waiting turn its slot is free; it asks again at its next look",
				"session_id", id, "error", err)
		}
	}
	return nil
}

// RevokeTurnCredentials revokes the credentials minted for an ended turn.
// A request lifecycle refuses as malformed is not retried.
func (a *Activities) RevokeTurnCredentials(ctx context.Context, req TurnCredentialsRequest) error {
	err := a.Lifecycle.RevokeTurnCredentials(ctx, req.SessionID, req.TurnID)
	if status.Code(err) == codes.InvalidArgument {
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrCredentialsRefused, err)
	}
	return err
}

// AbandonRecovery gives up recovering the session automatically (its
// recovery budget is spent).
func (a *Activities) AbandonRecovery(ctx context.Context, req AbandonRequest) error {
	return a.Lifecycle.AbandonRecovery(ctx, req.SessionID, req.Reason)
}

// SessionState reads the session's status from lifecycle.
func (a *Activities) SessionState(ctx context.Context, sessionID int64) (SessionState, error) {
	return a.Lifecycle.SessionState(ctx, sessionID)
}

// NoteOnTimeline writes one line on the session's timeline. A note
// lifecycle refuses as malformed is not retried.
func (a *Activities) NoteOnTimeline(ctx context.Context, req NoteRequest) error {
	err := a.Lifecycle.Note(ctx, req.SessionID, req.NoteID, req.Message, req.Warning)
	if status.Code(err) == codes.InvalidArgument {
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrNoteRefused, err)
	}
	return err
}

// RegisterClones registers PrepareWorkspace on the worker of
// ClonesTaskQueue, which every node polls.
func (a *Activities) RegisterClones(w ActivityRegistry) {
	w.RegisterActivityWithOptions(a.PrepareWorkspace, activity.RegisterOptions{Name: ActivityPrepareWorkspace})
}

// RegisterNode registers the activities of this node's own task queue.
func (a *Activities) RegisterNode(w ActivityRegistry) {
	w.RegisterActivityWithOptions(a.PrepareWorkspace, activity.RegisterOptions{Name: ActivityPrepareWorkspace})
	w.RegisterActivityWithOptions(a.RunTurn, activity.RegisterOptions{Name: ActivityRunTurn})
	w.RegisterActivityWithOptions(a.StopTurn, activity.RegisterOptions{Name: ActivityStopTurn})
	w.RegisterActivityWithOptions(a.DeliverElicitationAnswer, activity.RegisterOptions{Name: ActivityDeliverAnswer})
	w.RegisterActivityWithOptions(a.CloneOnDisk, activity.RegisterOptions{Name: ActivityCloneOnDisk})
}

// CloneOnDisk reports whether a session's working directory is still on
// this node's disk: a recovery resumes a conversation only in its clone.
// Only its absence counts as gone; any other error is asked again.
func (a *Activities) CloneOnDisk(_ context.Context, ws Workspace) (bool, error) {
	_, err := os.Stat(ws.Workdir)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, fmt.Errorf("look for the clone at %s: %w", ws.Workdir, err)
}

// StopTurn terminates a turn's process running on this node by the ladder
// and returns once it is dead; RunTurn then reports a signal Zimmer sent. A
// turn already over, or not started, is no error, and may never start
// afterwards: its answer proves the turn has no process on this node. (Cancelling RunTurn would do the same, but
// an activity hears of its cancellation only when it next heartbeats.)
// It answers the termination's result word (domain.Termination*): already
// dead when no process of the turn was running. Each step of the ladder is
// a line on the session's timeline (narrateTermination).
func (a *Activities) StopTurn(ctx context.Context, turnID string) (string, error) {
	a.mu.Lock()
	if a.stopped == nil {
		a.stopped = map[string]time.Time{}
	}
	now := time.Now()
	for id, at := range a.stopped {
		if now.Sub(at) > stoppedMemory {
			delete(a.stopped, id)
		}
	}
	a.stopped[turnID] = now
	r, ok := a.running[turnID]
	a.mu.Unlock()
	if !ok {
		return domain.TerminationAlreadyDead, nil
	}
	term, err := r.p.Terminate(ctx)
	result := a.narrateTermination(ctx, r.sessionID, turnID, r.p, term, err)
	if err != nil {
		return result, fmt.Errorf("terminate turn %s: %w", turnID, err)
	}
	return result, nil
}

// narrateTermination writes each step the ladder took with a turn's agent
// on its session's timeline and answers the result word. The lines of one
// process's termination have fixed note ids, so the callers sharing its
// one walk (StopTurn, RunTurn's cancellation, a shutdown) write them once.
// Lifecycle not answering costs the lines, never the termination: they
// are logged instead.
func (a *Activities) narrateTermination(ctx context.Context, sessionID int64, turnID string, p *process.Process, t process.Termination, err error) string {
	d := domain.Termination{
		Pid: p.Pid(), AlreadyEnded: t.Rung == process.RungAlreadyEnded, LeaderSignalled: t.LeaderSignalled,
		Killed: t.Rung == process.RungKill, TermGrace: t.TermGrace,
		PermissionDenied: errors.Is(t.GroupRefused, unix.EPERM) && errors.Is(t.LeaderRefused, unix.EPERM),
	}
	if t.GroupRefused != nil {
		d.GroupRefused = t.GroupRefused.Error()
	}
	if err != nil {
		d.Failed = err.Error()
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), noteTimeout)
	defer cancel()
	for i, line := range domain.TerminationLines(turnID, d) {
		id := uuid.NewSHA1(uuid.NameSpaceURL, fmt.Appendf(nil, "zimmer:runner/termination/%s/%d/%d", turnID, p.Pid(), i)).String()
		if err := a.Lifecycle.Note(ctx, sessionID, id, line, d.Failed != ""); err != nil {
			a.logger().Warn("write a termination line on the session's timeline", "session_id", sessionID, "turn", turnID,
				"line", line, "error", err)
		}
	}
	return d.Result()
}

// noteTimeout bounds writing a process's lines on a timeline: the ladder's
// caller waits for them.
const noteTimeout = 5 * time.Second

// stoppedMemory is how long StopTurn's ban on a turn is kept: far longer
// than a lost RunTurn can take to reach its process's start.
const stoppedMemory = 24 * time.Hour

// startTurn starts a turn's process unless StopTurn got there first; f
// follows its output and takes the answers to its elicitations.
func (a *Activities) startTurn(sessionID int64, turnID string, cmd process.Command, opts process.Options, f *lineFollower) (*process.Process, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.stopped[turnID]; ok {
		return nil, errStoppedBeforeStart
	}
	p, err := process.Start(cmd, opts)
	if err != nil {
		return nil, err
	}
	if a.running == nil {
		a.running = map[string]runningTurn{}
		a.followers = map[string]*lineFollower{}
	}
	a.running[turnID] = runningTurn{p: p, sessionID: sessionID}
	f.started(p)
	a.followers[turnID] = f
	return p, nil
}

func (a *Activities) forget(turnID string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.running, turnID)
	delete(a.followers, turnID)
}

// DeliverElicitationAnswer hands an answer to the agent of a turn running
// on this node: it writes the answer on the agent's stdin and returns the
// action the agent reported taking. A turn not running here, an agent not
// waiting on that elicitation (answered, or it stopped waiting first) or
// one whose runtime takes no answers is ErrElicitationNotPending.
func (a *Activities) DeliverElicitationAnswer(ctx context.Context, req AnswerElicitationRequest) (AnswerElicitationResult, error) {
	a.mu.Lock()
	f := a.followers[req.TurnID]
	a.mu.Unlock()
	if f == nil {
		return AnswerElicitationResult{}, notPending("turn %s's agent is not running on runner node %s any more; send the session a message instead", req.TurnID, a.Node)
	}
	action, err := f.answer(ctx, req)
	if err != nil {
		return AnswerElicitationResult{}, err
	}
	return AnswerElicitationResult{Action: action}, nil
}

func notPending(format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	return temporal.NewNonRetryableApplicationError(msg, ErrElicitationNotPending, nil)
}

var errStoppedBeforeStart = errors.New("the turn was stopped (StopTurn) before its process started: not starting it")

// Transition fires a lifecycle event; a refusal is non-retryable.
func (a *Activities) Transition(ctx context.Context, req TransitionRequest) error {
	err := a.Lifecycle.Transition(ctx, req)
	var refused *RefusedError
	if errors.As(err, &refused) {
		return temporal.NewNonRetryableApplicationError(refused.Error(), ErrRefused, err)
	}
	return err
}

// DrainQueue asks the queue for the turn that follows req.FromJobID. A
// refusal retrying cannot change is non-retryable (ErrDrainRefused).
func (a *Activities) DrainQueue(ctx context.Context, req DrainRequest) (HandOver, error) {
	h, err := a.queue().DeliverNextMessage(ctx, req.SessionID, req.FromJobID)
	var refused *DrainRefusedError
	if errors.As(err, &refused) {
		// The message says it all; the cause would only repeat it.
		return HandOver{}, temporal.NewNonRetryableApplicationError(refused.Error(), ErrDrainRefused, nil)
	}
	if err != nil {
		return HandOver{}, fmt.Errorf("drain the queue of session %d after %s: %w", req.SessionID, req.FromJobID, err)
	}
	return h, nil
}

// PrepareWorkspace makes (or checks) the session's clone on this node. A
// clone that cannot be made is a non-retryable ErrPrepareFailed carrying
// the session's failure_reason.
func (a *Activities) PrepareWorkspace(ctx context.Context, req PrepareRequest) (Workspace, error) {
	s := req.Session
	steps := newStepTimer()
	if err := a.Preparer.TakeOver(ctx, s.ID, req.TakeOverFrom); err != nil {
		return Workspace{}, err
	}
	steps.done("take_over")
	w, err := a.Preparer.Prepare(ctx, workspace.Spec{
		SessionID: s.ID, GitRoot: s.GitRoot, Branch: s.Branch, Subdirectory: s.Subdirectory,
	})
	steps.done("prepare")
	a.logger().Debug("prepare steps", append(steps.attrs(), "session_id", s.ID)...)
	var perr *workspace.PrepareError
	if errors.As(err, &perr) && !perr.Retryable {
		return Workspace{}, temporal.NewNonRetryableApplicationError(perr.Reason, ErrPrepareFailed, err)
	}
	if err != nil {
		return Workspace{}, fmt.Errorf("prepare the clone of session %d: %w", s.ID, err)
	}
	return Workspace{Node: w.Node, Workdir: w.Workdir(), StateDir: filepath.Join(a.StateDir, strconv.FormatInt(s.ID, 10))}, nil
}

// RunTurn runs one agent process to its end, heartbeating while it lives.
// Cancelling the activity (or losing its heartbeat) runs the termination
// ladder. An elicitation the agent blocks on is signalled to the session's
// workflow, as is its end.
func (a *Activities) RunTurn(ctx context.Context, req RunTurnRequest) (TurnResult, error) {
	notStarted := func(err error) (TurnResult, error) {
		return TurnResult{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTurnNotStarted, err)
	}
	steps := newStepTimer()
	rt, err := a.Runtimes.Lookup(req.Session.Runtime)
	if err != nil {
		return notStarted(err)
	}
	if err := a.awaitClone(ctx, req); err != nil {
		return notStarted(err)
	}
	steps.done("clone_check")
	composed, fork, err := a.composePrompt(ctx, req)
	if err != nil {
		return TurnResult{}, err
	}
	steps.done("prompt")
	credID, token, err := a.mint(ctx, req)
	if err != nil {
		return TurnResult{}, fmt.Errorf("mint the session's credential: %w", err)
	}
	steps.done("credential")
	// Should the turn be lost, the workflow revokes its credentials by
	// turn id (RevokeTurnCredentials).
	activity.RecordHeartbeat(ctx, TurnProgress{TurnID: req.TurnID})
	defer a.revoke(ctx, req.Session.ID, credID)
	launch, err := rt.Prepare(agent.Turn{
		SessionID: req.Session.ID, RuntimeSessionID: req.RuntimeSessionID, Resume: req.Resume,
		Prompt: composed.Text, Workdir: req.Workspace.Workdir, StateDir: req.Workspace.StateDir,
		MCP: agent.MCPEndpoint{URL: a.MCPURL, Token: token},
	})
	if err != nil {
		return notStarted(err)
	}
	if err := a.logIn(&launch, req); err != nil {
		return notStarted(err)
	}
	if err := launch.WriteFiles(); err != nil {
		return notStarted(err)
	}
	defer func() {
		if err := launch.RemoveFiles(); err != nil {
			a.logger().Warn("remove the turn's files", "turn", req.TurnID, "error", err)
		}
	}()
	steps.done("files")

	follower := &lineFollower{a: a, ctx: ctx, rt: rt, req: req,
		workflowID: activity.GetInfo(ctx).WorkflowExecution.ID, takesAnswers: launch.TakesAnswers}
	opts := a.Process
	opts.OnLine = follower.line
	// Named in its process record, for the next incarnation's logs (SWEEPS).
	opts.Labels = map[string]string{"turn": req.TurnID, "session": strconv.FormatInt(req.Session.ID, 10)}
	a.recordPrompt(ctx, req, composed)
	steps.done("prompt_line")
	// The fork/exec has a span of its own under the activity's, and the
	// agent's environment names it (TRACEPARENT, PL-26): an agent that
	// traces continues the trace from the request that asked for the turn.
	sctx, span := tracing.Tracer().Start(ctx, "agent start", oteltrace.WithAttributes(
		attribute.Int64("zimmer.session.id", req.Session.ID), attribute.String("zimmer.turn.id", req.TurnID),
		attribute.String("zimmer.runtime", rt.Name()), attribute.String("zimmer.runner.node", a.Node)))
	p, err := a.startTurn(req.Session.ID, req.TurnID, process.Command{
		Path: launch.Args[0], Args: launch.Args, Dir: launch.Dir,
		Env: tracing.Environ(sctx, launch.Environ(os.Environ())), Stdin: launch.Stdin, KeepStdinOpen: launch.TakesAnswers,
	}, opts, follower)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(otelcodes.Error, "the agent did not start")
	} else {
		span.SetAttributes(attribute.Int("process.pid", p.Pid()))
	}
	span.End()
	steps.done("fork")
	a.logger().Debug("turn start steps", append(steps.attrs(), "turn", req.TurnID)...)
	if errors.Is(err, errStoppedBeforeStart) {
		return TurnResult{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTurnNotStarted, err)
	}
	if err != nil {
		return notStarted(err)
	}
	defer a.forget(req.TurnID)
	countTurnStarted(ctx, rt.Name())
	timeAsked(ctx, rt.Name(), req.Asked, time.Now())
	// The prompt is the agent's now: its parts are counted (once per turn,
	// however often the activity is retried).
	a.recordCosts(ctx, req.TurnID, promptCosts(req, composed, fork)...)
	defer func() {
		if u := follower.usage(); u != nil {
			a.recordCosts(context.WithoutCancel(ctx), req.TurnID, domain.UsageCost(req.Session.ID, req.TurnID, *u, fork))
		}
	}()
	tick := time.NewTicker(a.heartbeatInterval())
	defer tick.Stop()
	shutdown := false
	for running := true; running; {
		select {
		case <-p.Done():
			running = false
		case <-tick.C:
			activity.RecordHeartbeat(ctx, follower.progress())
		case <-activity.GetWorkerStopChannel(ctx):
			// The runner is shutting down (a deploy): stop the agent by the
			// ladder and report it, so the workflow retries the turn on the
			// node's next incarnation (PathRunnerShutdown) instead of
			// waiting for a heartbeat to time out.
			shutdown = true
			term, err := p.Terminate(context.WithoutCancel(ctx))
			a.narrateTermination(ctx, req.Session.ID, req.TurnID, p, term, err)
			if err != nil {
				a.logger().Error("terminate the turn's process at shutdown", "turn", req.TurnID, "error", err)
			}
			<-p.Done()
			running = false
		case <-ctx.Done():
			// Cancelled (an interrupt) or the heartbeat timed out: no turn
			// outlives its activity.
			term, err := p.Terminate(context.WithoutCancel(ctx))
			a.narrateTermination(ctx, req.Session.ID, req.TurnID, p, term, err)
			if err != nil {
				a.logger().Error("terminate the turn's process", "turn", req.TurnID, "error", err)
			}
			<-p.Done()
			if ender, ok := a.transcripts().(TurnEnder); ok {
				_ = ender.EndTurn(context.WithoutCancel(ctx), req.Session.ID, req.TurnID, "stopped by Zimmer")
			}
			countTurnEnded(ctx, rt.Name(), outcomeStopped)
			return TurnResult{}, ctx.Err()
		}
	}
	exitedAt := time.Now()
	exit, err := p.Wait(ctx)
	if err != nil {
		return TurnResult{}, fmt.Errorf("wait for the agent: %w", err)
	}
	countTurnEnded(ctx, rt.Name(), exitOutcome(exit, shutdown))
	// Nothing of a turn outlives it: what the agent left running in its
	// process group (a server it started, say) is swept now, not at the
	// runner's next start. A group already empty costs one probe.
	if _, err := p.Terminate(ctx); err != nil {
		a.logger().Warn("sweep what the turn's agent left running", "turn", req.TurnID, "error", err)
	}
	if ender, ok := a.transcripts().(TurnEnder); ok {
		if err := ender.EndTurn(ctx, req.Session.ID, req.TurnID, exit.String()); err != nil {
			a.logger().Warn("record the turn's end in its transcript", "turn", req.TurnID, "error", err)
		}
	}
	result := TurnResult{
		Shutdown: shutdown, ExitCode: exit.Code, SignalSentByUs: exit.SignalSentByUs, StatusKnown: exit.StatusKnown,
		StderrTail: exit.StderrTail, RuntimeSessionID: follower.runtimeSessionID, Wall: follower.wallInfo(),
		ExitedAt: exitedAt,
	}
	if exit.Signaled() {
		result.Signal = unix.SignalName(exit.Signal)
	}
	return result, nil
}

// logIn adds the turn's account's login to its launch: the ambient login
// adds nothing. An account this node does not know (its configuration
// differs from the node that chose it) cannot be logged in as.
func (a *Activities) logIn(launch *agent.Launch, req RunTurnRequest) error {
	if req.Account == "" || req.Account == domain.AmbientAccount {
		return nil
	}
	if a.Pool == nil {
		return fmt.Errorf("turn %s runs under %s account %q, and runner node %s has no login pool", req.TurnID, req.Session.Runtime, req.Account, a.Node)
	}
	login, ok := a.Pool.Login(req.Session.Runtime, req.Account)
	if !ok {
		return fmt.Errorf("runner node %s has no %s account %q in its RUNNER_ACCOUNTS_FILE: give every node the same accounts",
			a.Node, req.Session.Runtime, req.Account)
	}
	launch.Env = append(launch.Env, login.Environ()...)
	return nil
}

// mint issues the turn's credential, waiting out a lifecycle that does not
// answer (restarting, its database down) rather than failing the session
// over it: no process has started, so waiting is safe, and the turn
// heartbeats meanwhile. A refusal (the session deleted, say) is final.
func (a *Activities) mint(ctx context.Context, req RunTurnRequest) (id, token string, err error) {
	wait, giveUp := 200*time.Millisecond, time.Now().Add(mintPatience)
	for {
		id, token, err = a.Lifecycle.MintCredential(ctx, CredentialRequest{
			SessionID: req.Session.ID, TurnID: req.TurnID, Node: a.Node, Incarnation: a.Incarnation, TTL: turnCredentialTTL,
		})
		if err == nil || !transient(err) || time.Now().After(giveUp) {
			return id, token, err
		}
		a.logger().Warn("lifecycle did not mint the turn's credential; asking again", "turn", req.TurnID, "error", err)
		activity.RecordHeartbeat(ctx, TurnProgress{TurnID: req.TurnID})
		select {
		case <-ctx.Done():
			return "", "", fmt.Errorf("%w (last: %w)", ctx.Err(), err)
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// awaitClone makes sure the turn's working directory is there: a turn asked
// for right after an unarchive can come before the restore has given the
// clone back, and waits for it (heartbeating) rather than start an agent
// in a missing directory.
func (a *Activities) awaitClone(ctx context.Context, req RunTurnRequest) error {
	if _, err := os.Stat(req.Workspace.Workdir); !errors.Is(err, fs.ErrNotExist) || a.Preparer == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, restorePatience)
	defer cancel()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		tick := time.NewTicker(a.heartbeatInterval())
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				activity.RecordHeartbeat(ctx, TurnProgress{TurnID: req.TurnID})
			}
		}
	}()
	return a.Preparer.AwaitRestore(ctx, req.Session.ID, 500*time.Millisecond)
}

// restorePatience bounds how long a turn waits for an unarchive's restore.
const restorePatience = 10 * time.Minute

// mintPatience bounds waiting for lifecycle to mint a turn's credential:
// past it the turn fails, naming lifecycle's last answer.
const mintPatience = 10 * time.Minute

// transient: a gRPC error another attempt may not meet.
func transient(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Internal, codes.Unknown, codes.ResourceExhausted, codes.Aborted:
		return true
	}
	return false
}

func (a *Activities) revoke(ctx context.Context, sessionID int64, id string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := a.Lifecycle.RevokeCredential(ctx, sessionID, id); err != nil {
		a.logger().Warn("revoke the turn's session credential", "session_id", sessionID, "credential_id", id, "error", err)
	}
}

func (a *Activities) heartbeatInterval() time.Duration {
	if a.HeartbeatInterval <= 0 {
		return DefaultTurnHeartbeat
	}
	return a.HeartbeatInterval
}

func (a *Activities) logger() *slog.Logger {
	if a.Logger == nil {
		return slog.Default()
	}
	return a.Logger
}

func (a *Activities) queue() Queue {
	if a.Queue == nil {
		return NoQueue{}
	}
	return a.Queue
}

func (a *Activities) transcripts() TranscriptSink {
	if a.Transcripts == nil {
		return NoTranscript{}
	}
	return a.Transcripts
}

// lineFollower handles a turn's output lines, in order, on the process
// package's delivery goroutine.
type lineFollower struct {
	a   *Activities
	ctx context.Context
	rt  agent.Runtime
	req RunTurnRequest
	// workflowID is signalled without a run id: the current run is the
	// one waiting for this turn.
	workflowID string

	takesAnswers bool

	mu               sync.Mutex
	blocked          bool
	runtimeSessionID string
	// wall is the quota or authentication wall the CLI reported, in its
	// last words on it (its result line says most), with the reset any of
	// its lines named; wallAt is when that reset's line was read (a delay
	// counts from it).
	wall   *agent.Wall
	wallAt time.Time
	// proc is the agent's process, once started.
	proc *process.Process
	// pending is the elicitation the agent waits on, from its line until
	// the line saying what became of it.
	pending *agent.Elicitation
	// answering is the elicitation an answer was written for, and took
	// receives the action the agent then reported.
	answering string
	took      chan string
	// lastUsage is what the runtime last reported the turn used.
	lastUsage *domain.Usage
	// prCalls follows the tool calls that open pull requests (RN-34).
	prCalls domain.PullRequestCalls
}

func (f *lineFollower) started(p *process.Process) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.proc = p
}

// answerAckTimeout bounds the wait for the agent to say what it did with
// an answer written on its stdin.
const answerAckTimeout = 10 * time.Second

// answer writes req on the agent's stdin, if it waits on that elicitation
// and nobody else is answering it, and returns the action the agent then
// reported. An agent that stopped waiting before it read the answer
// reports a timeout: that answer is refused as not pending, never taken
// for a success.
func (f *lineFollower) answer(ctx context.Context, req AnswerElicitationRequest) (string, error) {
	f.mu.Lock()
	switch {
	case !f.takesAnswers || f.proc == nil:
		f.mu.Unlock()
		return "", notPending("the agent of turn %s (runtime %s) takes no answers to elicitations", req.TurnID, f.rt.Name())
	case f.pending == nil:
		f.mu.Unlock()
		return "", notPending("the agent of turn %s is not waiting on elicitation %q any more: it was answered or it stopped waiting", req.TurnID, req.ID)
	case f.pending.ID != req.ID:
		pending := f.pending.ID
		f.mu.Unlock()
		return "", notPending("the agent of turn %s waits on elicitation %q, not %q", req.TurnID, pending, req.ID)
	case f.answering != "":
		f.mu.Unlock()
		return "", notPending("elicitation %q is being answered by another caller; its agent takes one answer", req.ID)
	}
	took := make(chan string, 1)
	f.answering, f.took = req.ID, took
	p := f.proc
	f.mu.Unlock()
	release := func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.answering == req.ID {
			f.answering, f.took = "", nil
		}
	}

	line, err := agent.AnswerLine(req.ID, req.Action, req.Content)
	if err == nil {
		err = p.WriteInput(line)
	}
	if errors.Is(err, process.ErrNoInput) {
		release()
		return "", notPending("the agent of turn %s has ended: it cannot take the answer", req.TurnID)
	}
	if err != nil {
		release()
		return "", fmt.Errorf("hand the agent of turn %s the answer to elicitation %q: %w", req.TurnID, req.ID, err)
	}
	wait := time.NewTimer(answerAckTimeout)
	defer wait.Stop()
	select {
	case action := <-took:
		if action == agent.ElicitationTimedOut {
			return "", notPending("elicitation %q expired: the agent stopped waiting before the answer reached it", req.ID)
		}
		return action, nil
	case <-p.Done():
		release()
		return "", notPending("the agent of turn %s ended before it took the answer to elicitation %q", req.TurnID, req.ID)
	case <-wait.C:
		release()
		return "", fmt.Errorf("the agent of turn %s was handed the answer to elicitation %q but did not say what it did with it within %s",
			req.TurnID, req.ID, answerAckTimeout)
	case <-ctx.Done():
		release()
		return "", ctx.Err()
	}
}

func (f *lineFollower) line(l process.Line) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ev := agent.Event{Kind: agent.KindText, Type: "stderr", Text: l.Text, Raw: l.Text}
	if l.Stream == process.Stdout {
		ev = f.rt.ParseLine(l.Text)
	}
	if err := f.a.transcripts().Append(f.ctx, f.req.Session.ID, f.req.TurnID, ev); err != nil {
		f.a.logger().Warn("keep a transcript line", "turn", f.req.TurnID, "error", err)
	}
	if l.Stream != process.Stdout {
		return
	}
	f.followPullRequests(ev)
	if u := ev.Usage; u != nil {
		f.lastUsage = &domain.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
			CacheReadTokens: u.CacheReadTokens, CacheCreationTokens: u.CacheCreationTokens, CostUSD: u.CostUSD}
	}
	if ev.Wall != nil {
		f.noteWall(*ev.Wall)
	}
	if ev.RuntimeSessionID != "" && ev.RuntimeSessionID != f.runtimeSessionID {
		f.runtimeSessionID = ev.RuntimeSessionID
		// Said at once, not at the next tick: a turn lost in its first
		// seconds must still resume the conversation it began, not replay
		// the start.
		activity.RecordHeartbeat(f.ctx, TurnProgress{TurnID: f.req.TurnID, RuntimeSessionID: f.runtimeSessionID})
	}
	outcome := ""
	if e := ev.Elicitation; e != nil {
		f.pending = e
	}
	if r := ev.ElicitationResult; r != nil && f.pending != nil && r.ID == f.pending.ID {
		f.pending = nil
		if f.answering == r.ID {
			f.took <- r.Action
			f.answering, f.took = "", nil
		}
		outcome = r.Action
		if outcome == agent.ElicitationTimedOut {
			outcome = rules.ElicitationExpired
		}
	}
	switch blocked := ev.Kind == agent.KindElicitation; {
	case blocked && !f.blocked:
		msg, info := "", (*ElicitationInfo)(nil)
		if e := ev.Elicitation; e != nil {
			msg = e.Message
			info = &ElicitationInfo{ID: e.ID, TurnID: f.req.TurnID, Message: e.Message, RequestedSchema: e.RequestedSchema}
			if e.Timeout > 0 {
				info.ExpiresAt = time.Now().Add(e.Timeout)
			}
		}
		f.signal(ElicitationSignal{TurnID: f.req.TurnID, Blocked: true, Message: msg, Elicitation: info})
	case !blocked && f.blocked:
		// The agent printed something else: its elicitation was answered
		// (or gave up) and it went on; its result line says which.
		f.signal(ElicitationSignal{TurnID: f.req.TurnID, Outcome: outcome})
	}
}

// recordAttempts and recordTimeout bound recording one pull request: the
// call is idempotent in lifecycle, so a retry is safe.
const (
	recordAttempts = 5
	recordTimeout  = 10 * time.Second
)

// followPullRequests records, in the background, the pull requests ev
// shows the agent's own tools opened: the transcript goes on meanwhile,
// and an answer that is slow to come never holds a line back.
func (f *lineFollower) followPullRequests(ev agent.Event) {
	for _, c := range ev.ToolCalls {
		f.prCalls.Called(c.ID, c.Name, c.Input)
	}
	for _, r := range ev.ToolResults {
		for _, pr := range f.prCalls.Returned(r.ToolUseID, r.Text, r.IsError) {
			if f.a.PullRequests == nil {
				continue
			}
			go f.recordPullRequest(context.WithoutCancel(f.ctx), pr.URL())
		}
	}
}

func (f *lineFollower) recordPullRequest(ctx context.Context, url string) {
	wait := 200 * time.Millisecond
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, recordTimeout)
		err := f.a.PullRequests.RecordPullRequest(actx, f.req.Session.ID, f.req.TurnID, url)
		cancel()
		if err == nil {
			return
		}
		if attempt == recordAttempts {
			f.a.logger().Error("record a pull request the agent opened", "session_id", f.req.Session.ID,
				"turn", f.req.TurnID, "url", url, "error", err)
			return
		}
		time.Sleep(wait)
		wait *= 2
	}
}

// noteWall keeps the CLI's latest words on its wall, and the first reset
// it named when its latest words name none.
func (f *lineFollower) noteWall(w agent.Wall) {
	named := !w.ResetAt.IsZero() || w.ResetIn > 0 || w.ResetClock != ""
	if f.wall != nil && !named {
		w.ResetAt, w.ResetIn, w.ResetClock = f.wall.ResetAt, f.wall.ResetIn, f.wall.ResetClock
	}
	if f.wall == nil || named {
		f.wallAt = time.Now()
	}
	f.wall = &w
}

// wallInfo is the wall the turn's CLI hit, resolved as of when it said so.
func (f *lineFollower) wallInfo() *WallInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	return wallOf(f.wall, f.wallAt)
}

// progress is what RunTurn heartbeats: should the turn be lost, the
// workflow reads its last one to learn whether the runtime had begun its
// conversation.
func (f *lineFollower) progress() TurnProgress {
	f.mu.Lock()
	defer f.mu.Unlock()
	return TurnProgress{TurnID: f.req.TurnID, RuntimeSessionID: f.runtimeSessionID}
}

func (f *lineFollower) signal(s ElicitationSignal) {
	if err := f.a.Signaler.SignalWorkflow(f.ctx, f.workflowID, "", SignalElicitation, s); err != nil {
		f.a.logger().Error("signal the session's workflow about an elicitation", "turn", f.req.TurnID, "error", err)
		return
	}
	f.blocked = s.Blocked
}
