// Package workflow drives a session's turns on Temporal: one workflow per
// session (id session/<id>, on the runner's task queue zimmer-runner) takes
// turn requests by signal and runs them one at a time, each turn an activity
// (RunTurn) on the task queue of the node holding the session's clone
// (zimmer-runner-<node>). Lifecycle owns the session's state: the workflow
// reports every turn's start and end to it through the Transition activity,
// which calls lifecycle's TransitionSession as the runner service.
//
// docs/contexts/runner.md (RN-1 to RN-8) says why it is shaped this way.
package workflow

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/workflowid"
	"github.com/zimmerhq/zimmer/services/runner/internal/domain"
)

// Names registered with the worker. They are part of the workflow's history:
// renaming one strands the workflows already running.
const (
	WorkflowName             = "zimmer.runner.Session"
	ActivityTransition       = "zimmer.runner.Transition"
	ActivityPrepareWorkspace = "zimmer.runner.PrepareWorkspace"
	ActivityRunTurn          = "zimmer.runner.RunTurn"
	// ActivityDrain asks the queue for the turn that follows a clean exit
	// (DrainRequest → HandOver). A local activity: it runs inside the
	// workflow task that learnt of the exit, so a handed-over turn waits for
	// no extra dispatch by Temporal.
	ActivityDrain = "zimmer.runner.DrainQueue"

	// SignalTurn asks for a turn (TurnRequest).
	SignalTurn = "turn"
	// SignalElicitation is sent by RunTurn when the agent blocks on an MCP
	// elicitation and when it goes on (ElicitationSignal).
	SignalElicitation = "elicitation"
	// SignalInterrupt says the session left running by someone else's hand
	// (a user's pause, an archive) while a turn may be running
	// (InterruptRequest).
	SignalInterrupt = "interrupt"

	// UpdateInterruptTurn halts the running turn's process and answers once
	// it is gone (InterruptTurnRequest → InterruptTurnResult); the turn's end
	// is then not routed. RunnerService.InterruptTurn sends it.
	UpdateInterruptTurn = "interrupt_turn"

	// UpdateAnswerElicitation hands an answer to the agent of the running
	// turn (AnswerElicitationRequest → AnswerElicitationResult) through
	// ActivityDeliverAnswer on the turn's node. RunnerService's
	// AnswerElicitation sends it.
	UpdateAnswerElicitation = "answer_elicitation"
	// ActivityDeliverAnswer writes an answer on the agent's stdin on the
	// node running it, and returns what the agent did with it.
	ActivityDeliverAnswer = "zimmer.runner.DeliverElicitationAnswer"

	// QueryTurnState answers TurnState: whether the workflow is running a
	// turn, for the orphan sweep.
	QueryTurnState = "turn_state"

	ActivitySessionState = "zimmer.runner.SessionState"
	// ActivityAbandonRecovery calls lifecycle's AbandonRecovery
	// (AbandonRequest).
	ActivityAbandonRecovery = "zimmer.runner.AbandonRecovery"
	// ActivityStopTurn ends a turn's process on its node by the ladder
	// (turn id → the result word, domain.Termination*).
	ActivityStopTurn = "zimmer.runner.StopTurn"
	// ActivityNoteOnTimeline writes one line on the session's timeline
	// (NoteRequest): what recovery decided and why.
	ActivityNoteOnTimeline = "zimmer.runner.NoteOnTimeline"
	// ActivityCloneOnDisk asks the node holding the clone whether its
	// working directory is still there (Workspace → bool).
	ActivityCloneOnDisk = "zimmer.runner.CloneOnDisk"
)

// The turn slots (LC-36, RN-35): a turn's process starts only once its
// session holds one of the fleet's slots, and gives it back when the turn
// ends. Each is one local activity call of the session's workflow.
const (
	// ActivityAcquireSlot asks lifecycle for a slot (SlotRequest →
	// SlotAnswer).
	ActivityAcquireSlot = "zimmer.runner.AcquireTurnSlot"
	// ActivityReleaseSlot gives it back (SlotRequest), and tells the
	// workflows of the turns the freed slot went to (SignalSlot).
	ActivityReleaseSlot = "zimmer.runner.ReleaseTurnSlot"
	// SignalSlot tells a workflow whose turn waits for a slot that one is
	// its now: it asks again at once rather than at its next look.
	SignalSlot = "slot"
	// ErrSlotRefused: lifecycle will give the session no slot (it failed
	// or was archived while its turn waited): the turn does not run.
	// Never retried.
	ErrSlotRefused = "SlotRefused"
)

// SlotRequest names the turn a slot is asked for or given back by.
type SlotRequest struct {
	SessionID int64
	TurnID    string
	// Node is the runner node holding the session's clone, where the turn
	// runs: lifecycle holds it to that node's own limit too (LC-38).
	Node string
}

// SlotAnswer is lifecycle's answer to a slot asked for: granted, or where
// the turn waits in line (its 1-based Position).
type SlotAnswer struct {
	Granted  bool
	Position int
}

// ActivityRevokeTurnCredentials revokes every credential minted for a turn
// once it has ended, however it ended (TurnCredentialsRequest).
const ActivityRevokeTurnCredentials = "zimmer.runner.RevokeTurnCredentials"

// Error types of the application errors activities return; the workflow
// routes on them.
const (
	// ErrPrepareFailed: the clone cannot be made; the message is the
	// session's failure_reason. Never retried.
	ErrPrepareFailed = "PrepareFailed"
	// ErrCredentialsRefused: lifecycle refused a revocation of a turn's
	// credentials as malformed. Never retried.
	ErrCredentialsRefused = "CredentialsRefused"
	// ErrTurnNotStarted: the agent process could not be started (unknown
	// runtime, missing binary); the message says why. Never retried.
	ErrTurnNotStarted = "TurnNotStarted"
	// ErrElicitationNotPending: the agent is not waiting on the
	// elicitation an answer names (answered, it stopped waiting, its turn
	// ended) or cannot take answers; the message says which. Never retried.
	ErrElicitationNotPending = "ElicitationNotPending"
	// ErrRefused: lifecycle refused the transition and the session is not
	// where the transition would have put it: someone else moved it (an
	// archive, a user's pause). Never retried.
	ErrRefused = "TransitionRefused"
	// ErrDrainRefused: the queue answered the drain with an error retrying
	// cannot change (a misconfigured caller, an unknown session): nothing
	// is handed over and the turn pauses. Never retried.
	ErrDrainRefused = "DrainRefused"
	// ErrNoteRefused: lifecycle refused a timeline note as malformed.
	// Never retried.
	ErrNoteRefused = "NoteRefused"
)

// DefaultTurnsPerRun is after how many turns a session's workflow continues
// as new, so its history stays small however long the session lives.
const DefaultTurnsPerRun = 50

// ID is the workflow id of a session's workflow.
func ID(sessionID int64) string { return workflowid.Session(sessionID) }

// TaskQueue is the runner's shared task queue: the session workflows and the
// activities any node may run (SessionState, AbandonRecovery).
const TaskQueue = "zimmer-runner"

// ClonesTaskQueue is polled by every runner node for PrepareWorkspace
// alone: a session's first clone (or its clone anew after its node died)
// goes to whichever live node takes it, which then holds the session's
// turns (State.Node): Temporal spreads sessions over the nodes that have
// room.
const ClonesTaskQueue = "zimmer-runner-clones"

// NodeTaskQueue is the task queue of the runner node named node: the
// activities that touch its disk or its processes (PrepareWorkspace,
// RunTurn).
func NodeTaskQueue(node string) string { return "zimmer-runner-" + node }

// Turn kinds.
const (
	// KindFirst is the session's first turn: the workflow clones and starts
	// the session (waiting → running).
	KindFirst = "first"
	// KindResume is a turn after a deliberate resume (restart, a
	// follow-up): lifecycle already moved the session to running.
	KindResume = "resume"
	// KindHandOver is the turn the queue handed over at the previous turn's
	// clean exit: lifecycle already made its job the session's running job,
	// and the session never left running.
	KindHandOver = "handover"
	// KindRecover asks the workflow to recover the session if its turn is
	// gone (the orphan sweep): it re-reads the session and, when no turn
	// of it is live, decides by the stand-down table (domain.Decide).
	KindRecover = "recover"
)

// TurnState is the answer to QueryTurnState.
type TurnState struct {
	// InFlight: a turn is being run (its process, its start or its end).
	InFlight bool
	// Pending counts requests received and not yet run.
	Pending int
	// Node holds the session's clone ("" before the first turn).
	Node string
}

// TurnRequest asks a session's workflow for a turn.
type TurnRequest struct {
	// RequestID identifies the request (the lifecycle event that asked for
	// it): a request seen before is ignored, so a redelivered event never
	// runs a second turn.
	RequestID string
	Kind      string
	// Prompt is the turn's prompt; empty on a resume means
	// domain.ContinuePrompt.
	Prompt string
	// JobID is a resume's or a hand-over's running_job_id, which lifecycle
	// drew for it: the turn runs under it, so the session's running job
	// names its live turn. Empty (an older event) means the workflow's own
	// turnID.
	JobID string
	// Session is what the first turn needs to clone and launch.
	Session SessionSpec
	// Path names a KindRecover request's producer (domain.PathOrphanSweep).
	Path string
	// RequestedAt is when the turn was asked for, for the whole-path
	// latency histograms only (metrics.go): lifecycle's time of the event
	// that asked (the session's creation, the transition carrying the
	// turn), or a hand-over's previous agent exit. Zero when unknown (an
	// event from before the field, a recovery).
	RequestedAt time.Time
	// TraceParent and TraceState are the W3C trace context of the request
	// that asked for the turn (Starter.Send's caller): the turn's
	// activities continue that trace, not the workflow run's (PL-26).
	// Empty with tracing off.
	TraceParent string `json:",omitempty"`
	TraceState  string `json:",omitempty"`
}

// SessionSpec and SessionState are the runner domain's, carried in the
// workflow's payloads (State, TurnRequest, the SessionState activity's
// answer) under the names they have always had there.
type (
	SessionSpec  = domain.SessionSpec
	SessionState = domain.SessionState
)

// ElicitationSignal reports that the agent blocked on an elicitation
// (Blocked) or went on (!Blocked).
type ElicitationSignal struct {
	TurnID  string
	Blocked bool
	Message string
	// Blocked: the question (nil when the agent did not say).
	Elicitation *ElicitationInfo
	// !Blocked: what became of it (TransitionRequest.ElicitationOutcome).
	Outcome string
}

// AnswerElicitationRequest is the answer_elicitation update: an answer for
// the agent of turn TurnID, blocked on elicitation ID.
type AnswerElicitationRequest struct {
	TurnID  string
	ID      string
	Action  string
	Content map[string]any
}

// AnswerElicitationResult is the action the agent reported taking.
type AnswerElicitationResult struct {
	Action string
}

// InterruptRequest asks the workflow to stop the running turn if the
// session is no longer running (the check is the workflow's: the event may
// be late, and the session running again by then).
type InterruptRequest struct {
	RequestID string
}

// InterruptTurnRequest asks the workflow to halt its running turn on
// purpose (a user's pause, an archive, a queue interrupt): whoever asks owns
// the session's next state.
type InterruptTurnRequest struct {
	Reason string
	// TurnID, when set, halts only that turn, and only once its process
	// runs: any other turn, and one still starting, run whole, unmarked
	// (the queue's interrupts, which name the turn running when they were
	// asked). Empty halts whatever runs and keeps the next process from
	// starting (a pause, an archive).
	TurnID string
}

// InterruptTurnResult answers an InterruptTurnRequest once no process of the
// turn is left.
type InterruptTurnResult struct {
	// Interrupted: a process was running and the ladder ended it.
	Interrupted bool
	TurnID      string
	// Result is the termination's result word (domain.Termination*), ""
	// when nothing was interrupted.
	Result string
}

// NoteRequest writes one line on a session's timeline; NoteID, drawn once
// by the workflow, makes a retry harmless.
type NoteRequest struct {
	SessionID int64
	NoteID    string
	Message   string
	Warning   bool
}

// TurnCredentialsRequest revokes the credentials minted for one turn.
type TurnCredentialsRequest struct {
	SessionID int64
	TurnID    string
}

// CredentialRequest is what a turn's credential is minted with: the turn
// it is for, on which node and incarnation of its runner, and how long it
// may live at most.
type CredentialRequest struct {
	SessionID   int64
	TurnID      string
	Node        string
	Incarnation string
	TTL         time.Duration
}

// AbandonRequest gives up recovering a session (AbandonRecovery).
type AbandonRequest struct {
	SessionID int64
	Reason    string
}

// State is the workflow's input, carried across continue-as-new.
type State struct {
	Session SessionSpec
	// Node holds the session's clone; its turns run on NodeTaskQueue(Node).
	// "" until a node made the clone (ClonesTaskQueue).
	Node string
	// LostNode is the node declared dead that held the clone: the next
	// clone is made elsewhere, taking its workspace over.
	LostNode string
	// Workspace is set once the clone is ready.
	Workspace *Workspace
	// RuntimeSessionID is the runtime's conversation id (claude's UUID,
	// codex's thread), fixed by the first turn.
	RuntimeSessionID string
	// Started: a turn has begun before, so the next one resumes the
	// runtime's conversation.
	Started bool
	// Turns counts every turn the session ran, across runs: the turn ids.
	Turns int
	// Pending are requests received and not yet run.
	Pending []TurnRequest
	// Halted is the answer of the InterruptTurn that halted the last turn,
	// until the next turn begins: a retry of that interrupt (its caller
	// lost the answer) gets the same answer, so the caller still delivers
	// in the halted turn's place instead of leaving the session running
	// with no process.
	Halted *InterruptTurnResult `json:",omitempty"`
	// Seen are the latest request ids (at most maxSeen), for dedup.
	Seen []string
	// TurnsPerRun overrides DefaultTurnsPerRun (tests).
	TurnsPerRun int
	// NodeDeadAfter is how long a lost turn's node may leave its task
	// queue unserved before it is declared dead (0: DefaultNodeDeadAfter).
	NodeDeadAfter time.Duration
	// Recoveries counts the automatic recoveries since the last clean
	// exit; at domain.MaxRecoveries Zimmer gives up (AbandonRecovery).
	Recoveries int
	// Confirmed: a turn's process ran to a known end or reported the
	// runtime's conversation, so the next turn may resume it. A lost turn
	// before that replays the start instead (StartReplays of them, at most
	// domain.MaxStartReplays).
	Confirmed    bool
	StartReplays int
	// ParkedPrompt is the prompt of a turn lost before its runtime began a
	// conversation, which parked the session: the orphan sweep's replay of
	// the start runs it again ("" reads the session's own prompt).
	ParkedPrompt string
	// Account is the login the session's conversation lives under (its
	// runtime keeps it in that account's configuration directory): its
	// turns stay on it while it is in the pool.
	Account string
	// Parked is the turn a login-pool park kept (accounts.go): its prompt
	// runs when the refill unparks the session, or goes along with the
	// next turn anyone else asks for.
	Parked *ParkedTurn
	// fired counts the transitions this run fired, for their idempotency
	// keys; unexported, so it starts again with each run (whose id the
	// keys carry).
	fired int
	// SearchAttributes: the namespace has ZimmerSessionId, ZimmerStatus and
	// ZimmerRuntime (the runner registers them at start where Temporal lets
	// it), so the workflow keeps them current for the Web UI's filters.
	SearchAttributes bool
}

// Search attributes of a session's workflow.
var (
	SearchSessionID = temporal.NewSearchAttributeKeyInt64("ZimmerSessionId")
	SearchStatus    = temporal.NewSearchAttributeKeyKeyword("ZimmerStatus")
	SearchRuntime   = temporal.NewSearchAttributeKeyKeyword("ZimmerRuntime")
)

const maxSeen = 200

// Workspace is where a session's turns run.
type Workspace struct {
	// Node is the runner node that made the clone and holds it.
	Node string
	// Workdir is the clone's subdirectory: the agent's working directory.
	Workdir string
	// StateDir is the runner's per-session directory (prompt and MCP
	// files), outside the clone.
	StateDir string
}

// TransitionRequest is one call of lifecycle's TransitionSession.
type TransitionRequest struct {
	SessionID      int64
	Event          string
	RunningJobID   string
	FailureReason  string
	SystemRecovery bool
	PausedBy       string
	// IdempotencyKey names this transition (idempotencyKey): lifecycle
	// answers a retry with it as already applied.
	IdempotencyKey string
	// Elicitation is what EventBlock blocks on.
	Elicitation *ElicitationInfo
	// ElicitationOutcome is what became of the question EventUnblock ends
	// (rules: an action the agent took, expired or stranded; "" unknown).
	ElicitationOutcome string
	// AuthOutageReason, on EventPause, parks the session on its login
	// pool (accounts.go).
	AuthOutageReason string
}

// ElicitationInfo is the question an agent blocked on, as lifecycle keeps
// it for answers.
type ElicitationInfo struct {
	ID              string
	TurnID          string
	Message         string
	RequestedSchema map[string]any
	// ExpiresAt is when the agent stops waiting; zero when it did not say.
	ExpiresAt time.Time
}

// Lifecycle events the workflow fires: lifecycle's own (rules).
const (
	EventStart   = rules.EventStart
	EventPause   = rules.EventPause
	EventResume  = rules.EventResume
	EventFail    = rules.EventFail
	EventBlock   = rules.EventBlockOnElicitation
	EventUnblock = rules.EventUnblockFromElicitation
)

// DrainRequest asks the queue for the turn that follows FromJobID, the turn
// that just exited 0 (QueueService.DeliverNextMessage).
type DrainRequest struct {
	SessionID int64
	FromJobID string
}

// HandOver is the queue's answer to a drain: Delivered, the next turn runs
// at once under JobID (lifecycle already made it the session's running
// job) with Prompt; else the turn pauses.
type HandOver struct {
	Delivered bool
	JobID     string
	Prompt    string
}

// PrepareRequest asks a node for a session's clone.
type PrepareRequest struct {
	Session SessionSpec
	// TakeOverFrom is a node declared dead that held the session's
	// workspace: the clone is made anew on this node instead.
	TakeOverFrom string
}

// RunTurnRequest is one agent turn.
type RunTurnRequest struct {
	Session          SessionSpec
	TurnID           string
	Prompt           string
	Workspace        Workspace
	RuntimeSessionID string
	Resume           bool
	// Account is the login the turn runs under (ChooseAccount): the node
	// adds its environment from its own configuration, so no secret
	// travels through Temporal.
	Account string
	// Asked is when and how the turn was asked for; set only on the
	// request's first process, so a recovery's retry is not timed again.
	Asked Asked
}

// Asked is the origin of a turn's whole-path latency: its request's kind
// (KindFirst, KindResume, KindHandOver) and TurnRequest.RequestedAt.
type Asked struct {
	Kind string
	At   time.Time
}

// TurnProgress is RunTurn's heartbeat detail.
type TurnProgress struct {
	TurnID string
	// RuntimeSessionID is the conversation id the runtime reported so far:
	// once set, the conversation exists and a lost turn resumes it.
	RuntimeSessionID string
}

// TurnResult is how a turn's process ended.
type TurnResult struct {
	ExitCode int
	// Signal names the signal the process died by ("SIGKILL"), "" when it
	// exited.
	Signal         string
	SignalSentByUs bool
	// StatusKnown is false when the exit status was lost.
	StatusKnown bool
	// Shutdown: the runner node was shutting down (SIGTERM to the runner,
	// a deploy) and stopped the process by the ladder; the turn is retried
	// (domain.PathRunnerShutdown), at most domain.MaxShutdownRetries times
	// in a row.
	Shutdown   bool
	StderrTail []string
	// RuntimeSessionID is the conversation id the runtime reported, if any.
	RuntimeSessionID string
	// Wall is the quota or authentication wall the CLI hit, if it did: the
	// turn did nothing, and the session parks on its login pool.
	Wall *WallInfo
	// ExitedAt is when the node saw the process end: a hand-over's
	// RequestedAt, for the exit → next agent histogram.
	ExitedAt time.Time
}

// End is how the turn ended, for the runner domain's turn-state table
// (domain.AfterTurn).
func (r TurnResult) End() domain.TurnEnd {
	return domain.TurnEnd{Shutdown: r.Shutdown, StatusKnown: r.StatusKnown, ExitCode: r.ExitCode,
		Signal: r.Signal, SignalSentByUs: r.SignalSentByUs}
}

// turnCredentialTTL is how long a turn's credential lives at most: as long
// as the turn may (turnMaxDuration), so a credential whose revocation was
// lost still closes.
const turnCredentialTTL = turnMaxDuration

// turnID names a turn: the session's id and the turn's number. It is the
// session's running_job_id while the turn runs and names the turn's lines
// in the transcript, so it is data callers read, not a workflow id, and
// keeps its format (session-7/turn-1) apart from the workflow ids'.
func turnID(sessionID int64, n int) string { return fmt.Sprintf("session-%d/turn-%d", sessionID, n) }

// Timeouts of the activities; the turn itself has no deadline (an agent may
// work for hours) but must heartbeat.
const (
	turnHeartbeatTimeout = 30 * time.Second
	// DefaultTurnHeartbeat is how often a running turn heartbeats while
	// nothing changes (RN-40): two chances inside turnHeartbeatTimeout, so
	// one late or lost heartbeat never declares a live turn lost. Each
	// heartbeat is a call to Temporal (the node worker throttles to 1 s),
	// and a sleeping agent's turn costs nothing else: 5 s made them most
	// of the runner's CPU while 200 agents slept.
	DefaultTurnHeartbeat = 10 * time.Second
	turnMaxDuration      = 7 * 24 * time.Hour
	prepareTimeout       = 30 * time.Minute
	transitionTimeout    = 30 * time.Second
	// drainAttemptTimeout bounds one DeliverNextMessage; the drain retries
	// until the queue answers.
	drainAttemptTimeout = 10 * time.Second
)

// DefaultNodeDeadAfter: see State.NodeDeadAfter.
const DefaultNodeDeadAfter = 5 * time.Minute
