package app

import (
	"context"
	"time"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// MaxRecoveryCandidates bounds one ListRecoveryCandidates answer, and is
// its default.
const MaxRecoveryCandidates = 500

// RecoveryCandidate is a session a recovery sweep looks at, with what the
// sweep decides on.
type RecoveryCandidate struct {
	SessionID            int64
	Status               domain.Status
	PausedBy             string
	BlockedOnElicitation bool
	// RunningJobID is the running session's job: the turn lifecycle
	// believes is live.
	RunningJobID string
	UpdatedAt    time.Time
}

// RecoveryCandidates lists the sessions the runner's orphan sweep must look
// at, without locks: the runner's workflow decides again from the session
// as it then stands.
type RecoveryCandidates interface {
	// RecoveryCandidates lists up to limit sessions last changed before
	// settledBefore, the oldest change first, that are running, or are
	// needs_input or waiting with paused_by domain.PausedByRecovery.
	RecoveryCandidates(ctx context.Context, settledBefore time.Time, limit int) ([]RecoveryCandidate, error)
}

// ListRecoveryCandidates answers the runner's orphan sweep (the spec's
// CleanupOrphanedSessionsJob): the sessions that may be stranded — running
// with no live turn, or parked by a recovery that never came back — and
// have been settled since settledBefore (a grace, so a turn just started or
// just ended is not taken for lost).
type ListRecoveryCandidates struct{ Candidates RecoveryCandidates }

// Handle validates the request: settledBefore is required; limit 0 means
// MaxRecoveryCandidates, and more is cut to it.
func (uc ListRecoveryCandidates) Handle(ctx context.Context, settledBefore time.Time, limit int) ([]RecoveryCandidate, error) {
	if settledBefore.IsZero() {
		return nil, validation.Invalid("settled_before", "is required: only sessions last changed before it are listed")
	}
	if limit < 0 {
		return nil, validation.Invalid("limit", "must not be negative")
	}
	if limit == 0 || limit > MaxRecoveryCandidates {
		limit = MaxRecoveryCandidates
	}
	return uc.Candidates.RecoveryCandidates(ctx, settledBefore, limit)
}
