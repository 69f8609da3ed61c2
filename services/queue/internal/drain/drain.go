// Package drain delivers a session's queued messages when no turn end
// will: after a pause that is not a turn end, and after any enqueue. One
// Temporal workflow per session (id session/<session_id>/drain, type
// zimmer.queue.Drain, on the queue's task queue zimmer-queue) is started or
// poked by signal-with-start; it waits a little, then makes up to three
// attempts 30 seconds apart, and pages an operator when all three fail,
// leaving the messages pending for the session's next turn.
//
// The package also sweeps stale archive seals (schedule queue-stale-seals,
// see Sweep) and the claims their holders left behind (schedule
// queue-expired-claims, see ClaimSweep).
//
// Its ports (Lifecycle, Deliverer, Sessions, Seals, Claims) are its own, so it
// depends on no other package of the queue; internal/service wires them.
// docs/contexts/queue.md (QU-7) says why it is shaped this way.
package drain

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zimmerhq/zimmer/services/platform/workflowid"
)

// Names registered with the worker. They are part of the workflow's
// history: renaming one strands the workflows already running.
const (
	WorkflowName           = "zimmer.queue.Drain"
	ActivityRecordAttempt  = "zimmer.queue.RecordDrainAttempt"
	ActivityDeliverPending = "zimmer.queue.DeliverPending"
	ActivityRaiseExhausted = "zimmer.queue.RaiseDrainExhausted"
	ActivityAbandon        = "zimmer.queue.AbandonQueue"

	// SignalPoke asks the session's workflow to (re)try delivering its
	// queue; it carries nothing.
	SignalPoke = "poke"
)

// The drain's schedule: a pause-then-deliver caller (an interrupt, an
// auto-continue) gets DefaultDelay to deliver first; then MaxAttempts
// attempts AttemptInterval apart. The attempts are counted by lifecycle
// per idle spell (resume clears the count), so a poke that arrives after the
// budget is spent cannot start a fresh one.
const (
	DefaultDelay    = 10 * time.Second
	AttemptInterval = 30 * time.Second
	MaxAttempts     = 3
)

// WorkflowID is the id of session's drain workflow.
func WorkflowID(sessionID int64) string { return workflowid.Drain(sessionID) }

// AlertKey deduplicates the exhausted-drain alert per session.
func AlertKey(sessionID int64) string { return fmt.Sprintf("queue_drain_exhausted/%d", sessionID) }

// Attempt is lifecycle's answer to RecordDrainAttempt.
type Attempt struct {
	// Counted: the session is at rest and may take a delivery; Attempts
	// counts this idle spell's attempts, this one included.
	Counted  bool
	Attempts int
	// Refusal says why not when not counted ("busy", "closed",
	// "blocked_on_elicitation", "auth_outage", "mcp_retry", "asleep"); ""
	// when counted.
	Refusal string
	// Message is lifecycle's explanation of a refusal.
	Message string
}

// Lifecycle counts drain attempts (LifecycleService.RecordDrainAttempt).
type Lifecycle interface {
	RecordDrainAttempt(ctx context.Context, sessionID int64) (Attempt, error)
}

// Deliverer delivers the session's next pending message as a turn, if
// there is one and the session still takes it (the queue's app: claim
// under a lease, DeliverTurn IDLE automatic, mark sent). delivered is
// false when nothing was delivered and nothing went wrong: the queue is
// empty, or lifecycle refused.
//
// Abandon ends the live messages of a session lifecycle no longer knows
// (it was deleted) undelivered, with that reason, and says how many.
type Deliverer interface {
	DeliverPending(ctx context.Context, sessionID int64) (delivered bool, err error)
	Abandon(ctx context.Context, sessionID int64) (undelivered int, err error)
}

// ErrSessionNotFound: lifecycle knows no such session (it was deleted).
var ErrSessionNotFound = errors.New("lifecycle knows no such session")

// ErrTypeSessionGone is the type of the non-retryable activity error an
// attempt fails with when lifecycle knows no such session: the drain ends
// at once instead of trying again.
const ErrTypeSessionGone = "SessionGone"

// Sessions reads a session's status ("archived", "waiting", ...) from
// lifecycle; an unknown session is ErrSessionNotFound.
type Sessions interface {
	Status(ctx context.Context, sessionID int64) (string, error)
}

// Seals is the queue store's view of archive seals.
type Seals interface {
	// StaleSeals returns, by session, the archive attempt holding each seal
	// placed before sealedBefore (never retirement's own seal).
	StaleSeals(ctx context.Context, sealedBefore time.Time) (map[int64]string, error)
	// Unseal lifts the seal by holds; a no-op when by no longer holds it.
	Unseal(ctx context.Context, sessionID int64, by string) error
}
