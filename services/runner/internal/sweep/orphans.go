// Package sweep holds the runner's sweeps, each a Temporal Schedule an
// operator finds, triggers and pauses in the Web UI:
//
//   - runner-orphaned-sessions (the spec's CleanupOrphanedSessionsJob,
//     every RUNNER_ORPHAN_SWEEP_INTERVAL): the sessions lifecycle holds
//     running, or parked by a recovery, whose session workflow runs no
//     turn and has none waiting, are handed a recover request (path
//     "orphan sweep"), which the workflow decides on from the session as
//     it then stands;
//   - runner-zombie-reaper-<node> (the spec's ZombieReaperJob, every
//     RUNNER_ZOMBIE_REAP_INTERVAL), on the node's own task queue: reaps
//     the node's zombie children no live waiter owns (process.ReapZombies).
package sweep

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/runner/internal/domain"
	"github.com/zimmerhq/zimmer/services/runner/internal/workflow"
)

// Candidate is a session lifecycle lists for the orphan sweep
// (ListRecoveryCandidates).
type Candidate struct {
	SessionID            int64
	Status               string
	PausedBy             string
	BlockedOnElicitation bool
	// RunningJobID is a running session's job: the turn lifecycle believes
	// is live.
	RunningJobID string
	UpdatedAt    time.Time
}

// Lifecycle is what the orphan sweep asks of the lifecycle service.
type Lifecycle interface {
	// RecoveryCandidates lists up to limit sessions settled before
	// settledBefore that are running, or parked by a recovery (paused_by
	// recovery), the oldest change first.
	RecoveryCandidates(ctx context.Context, settledBefore time.Time, limit int) ([]Candidate, error)
}

// Workflows answers what a session's workflow is doing.
type Workflows interface {
	// TurnState queries the session's workflow (workflow.QueryTurnState);
	// found is false when the session has no workflow.
	TurnState(ctx context.Context, sessionID int64) (state workflow.TurnState, found bool, err error)
}

// Turns hands a turn request to a session's workflow, starting it if it
// is not running (workflow.Starter).
type Turns interface {
	Send(ctx context.Context, req workflow.TurnRequest) error
}

// OrphanedSessions is the orphan sweep.
type OrphanedSessions struct {
	Lifecycle Lifecycle
	Workflows Workflows
	Turns     Turns
	// Batch bounds the sessions one run looks at (DefaultBatch when 0); a
	// backlog is worked off over several runs.
	Batch  int
	Logger *slog.Logger
}

// DefaultBatch is lifecycle's ListRecoveryCandidates maximum.
const DefaultBatch = 500

// Orphaned reports whether a session's workflow leaves it stranded: none
// at all, or one that neither runs a turn nor has a request waiting. A
// workflow running a turn, or about to, is the session's live turn.
func Orphaned(state workflow.TurnState, found bool) bool {
	return !found || (!state.InFlight && state.Pending == 0)
}

// RequestID is the recover request's id for c. The workflow drops an id it
// has seen, so the sweep asks once per stranding however often it runs: a
// running session is stranded with its job (the turn lifecycle believes
// live), a parked one with its last change.
func RequestID(c Candidate) string {
	if c.Status == rules.StatusRunning && c.RunningJobID != "" {
		return "recover/orphan/" + c.RunningJobID
	}
	return "recover/orphan/" + strconv.FormatInt(c.SessionID, 10) + "/" + strconv.FormatInt(c.UpdatedAt.Unix(), 10)
}

// RecoverSettledBefore sends a recover request (path "orphan sweep") to
// every orphaned session among the candidates settled before cutoff, and
// says how many it sent. A candidate it could not ask about or send to is
// named in the error, the others are still done; the run's retry asks
// again, and a request already sent is dropped by its id.
func (o OrphanedSessions) RecoverSettledBefore(ctx context.Context, cutoff time.Time) (int64, error) {
	batch := o.Batch
	if batch <= 0 {
		batch = DefaultBatch
	}
	candidates, err := o.Lifecycle.RecoveryCandidates(ctx, cutoff, batch)
	if err != nil {
		return 0, fmt.Errorf("list the recovery candidates: %w", err)
	}
	var (
		sent int64
		errs []error
	)
	for _, c := range candidates {
		state, found, err := o.Workflows.TurnState(ctx, c.SessionID)
		if err != nil {
			errs = append(errs, fmt.Errorf("ask the workflow of session %d for its turn: %w", c.SessionID, err))
			continue
		}
		if !Orphaned(state, found) {
			continue
		}
		req := workflow.TurnRequest{
			RequestID: RequestID(c), Kind: workflow.KindRecover, Path: domain.PathOrphanSweep,
			Session: workflow.SessionSpec{ID: c.SessionID},
		}
		if err := o.Turns.Send(ctx, req); err != nil {
			errs = append(errs, fmt.Errorf("hand session %d its recovery: %w", c.SessionID, err))
			continue
		}
		sent++
		o.logger().InfoContext(ctx, "orphan sweep: a session with no live turn is handed its recovery",
			"session_id", c.SessionID, "status", c.Status, "paused_by", c.PausedBy, "request_id", req.RequestID,
			"workflow_found", found, "updated_at", c.UpdatedAt)
	}
	return sent, errors.Join(errs...)
}

func (o OrphanedSessions) logger() *slog.Logger {
	if o.Logger == nil {
		return slog.Default()
	}
	return o.Logger
}
