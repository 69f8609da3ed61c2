package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/clock"
)

// SweepCandidates lists the sessions a sweep may act on. It reads without
// locks; each sweep decides again under the session's lock, so a list
// that went stale in between only costs a transaction that writes nothing.
type SweepCandidates interface {
	// Untouched lists up to limit sessions, the longest untouched first,
	// last updated before cutoff and neither running nor archived.
	Untouched(ctx context.Context, cutoff time.Time, limit int) ([]int64, error)
	// BlockedOnElicitation lists up to limit needs_input sessions blocked
	// on an elicitation and untouched since cutoff, the oldest first.
	BlockedOnElicitation(ctx context.Context, cutoff time.Time, limit int) ([]int64, error)
	// HeartbeatDue lists up to limit needs_input sessions with their
	// heartbeat on, not blocked on an elicitation, untouched since cutoff
	// and for their own heartbeat interval by now, the longest first.
	HeartbeatDue(ctx context.Context, cutoff, now time.Time, limit int) ([]int64, error)
}

// PendingMessages is the queue's answer the heartbeat sweep needs: whether
// a session holds a message still to be delivered (pending or processing).
// A nudge then would race that delivery into a second process.
type PendingMessages interface {
	HasPendingMessages(ctx context.Context, sessionID int64) (bool, error)
}

// DefaultSweepBatch bounds the sessions one run of a sweep acts on: a
// backlog (a first deployment, a long outage) is worked off over several
// runs, each short enough for its activity's timeout.
const DefaultSweepBatch = 200

// ArchiveStaleSessions is the stale-session sweep (the spec's
// HealthMonitorService#archive_old_sessions): it archives the sessions
// untouched for After, as Zimmer's system archive. Each session is its own
// transaction on the one write path, re-checked under its lock
// (domain.ArchiveStale), so a touch that commits first wins.
type ArchiveStaleSessions struct {
	Repo           SessionRepository
	Candidates     SweepCandidates
	Clock          clock.Clock
	TrashRetention time.Duration
	// After is how long untouched makes a session stale (the spec's 7
	// days); the archive line names it.
	After time.Duration
	// Batch bounds one run (DefaultSweepBatch when 0).
	Batch  int
	Logger *slog.Logger
}

// ArchiveUntouchedSince archives up to a batch of the sessions untouched
// since cutoff and says how many it archived. A session it could not
// archive is named in the error and the run's retry takes it again; one
// touched or deleted in the meantime is left alone.
func (uc ArchiveStaleSessions) ArchiveUntouchedSince(ctx context.Context, cutoff time.Time) (int64, error) {
	ids, err := uc.Candidates.Untouched(ctx, cutoff, batchOr(uc.Batch))
	if err != nil {
		return 0, err
	}
	return sweep(ctx, uc.Repo, ids, "archive stale session", func(s domain.Session, wakes domain.Wakes) (domain.Outcome, bool, error) {
		env := domain.Env{Now: uc.Clock.Now(), Wakes: wakes, TrashRetention: uc.TrashRetention}
		return domain.ArchiveStale(s, cutoff, uc.After, env)
	}, func(id int64) {
		orDefault(uc.Logger).InfoContext(ctx, "archived a stale session", "session_id", id, "untouched_since", cutoff)
	})
}

// sweep acts on each listed session in a transaction of its own, deciding
// under its lock (ok false: no longer the sweep's, nothing written), and
// says on how many it acted. A session it could not act on is named in the
// error, so the run's retry takes it again; a deleted one is skipped.
func sweep(ctx context.Context, repo SessionRepository, ids []int64, what string,
	decide func(domain.Session, domain.Wakes) (domain.Outcome, bool, error), acted func(id int64),
) (int64, error) {
	var (
		n    int64
		errs []error
	)
	for _, id := range ids {
		c, err := repo.Update(ctx, domain.SessionRef{ID: id}, func(s domain.Session, wakes domain.Wakes) (Change, error) {
			out, ok, err := decide(s, wakes)
			switch {
			case err != nil:
				return Change{}, err
			case !ok:
				return Change{Nothing: true}, nil
			}
			return Change{Transitioned: &out}, nil
		})
		var gone *domain.NotFoundError
		switch {
		case errors.As(err, &gone):
		case err != nil:
			errs = append(errs, fmt.Errorf("%s %d: %w", what, id, err))
		case c.Transitioned != nil:
			n++
			acted(id)
		}
	}
	return n, errors.Join(errs...)
}

// ExpireElicitationBlocks is the expired-elicitation sweep (the spec's
// CleanupExpiredElicitationsJob): the needs_input sessions blocked on an
// elicitation for longer than Expiry lose the block and get
// lost_elicitation (domain.ExpireElicitationBlock), each in its own
// transaction, decided again under its lock.
type ExpireElicitationBlocks struct {
	Repo       SessionRepository
	Candidates SweepCandidates
	Clock      clock.Clock
	Expiry     time.Duration
	// Batch bounds one run (DefaultSweepBatch when 0).
	Batch  int
	Logger *slog.Logger
}

// ExpireBlockedSince clears up to a batch of the elicitation blocks
// untouched since cutoff and says how many it cleared.
func (uc ExpireElicitationBlocks) ExpireBlockedSince(ctx context.Context, cutoff time.Time) (int64, error) {
	ids, err := uc.Candidates.BlockedOnElicitation(ctx, cutoff, batchOr(uc.Batch))
	if err != nil {
		return 0, err
	}
	return sweep(ctx, uc.Repo, ids, "expire the elicitation block of session", func(s domain.Session, _ domain.Wakes) (domain.Outcome, bool, error) {
		out, ok := domain.ExpireElicitationBlock(s, cutoff, uc.Expiry, domain.Env{Now: uc.Clock.Now()})
		return out, ok, nil
	}, func(id int64) {
		orDefault(uc.Logger).InfoContext(ctx, "cleared a stranded elicitation block", "session_id", id, "blocked_since_before", cutoff)
	})
}

func batchOr(batch int) int {
	if batch <= 0 {
		return DefaultSweepBatch
	}
	return batch
}

func orDefault(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.Default()
	}
	return l
}

// NudgeHeartbeats is the heartbeat sweep (the spec's HeartbeatSweepJob):
// each needs_input session with its heartbeat on, at rest for its interval,
// resumes with the heartbeat prompt (domain.Heartbeat) — unless it is
// blocked on an elicitation or the queue holds a message for it, which is
// about to be delivered and would race the nudge into a second process.
type NudgeHeartbeats struct {
	Repo           SessionRepository
	Candidates     SweepCandidates
	Clock          clock.Clock
	TrashRetention time.Duration
	// Queue answers whether a session holds a pending message; nil when no
	// queue is configured (then nothing can be pending).
	Queue PendingMessages
	// Batch bounds one run (DefaultSweepBatch when 0).
	Batch  int
	Logger *slog.Logger
}

// NudgeRestingSince nudges up to a batch of the sessions due a heartbeat
// and says how many it resumed. cutoff is the run's time less the shortest
// heartbeat interval: no session that came to rest after it can be due. A
// session whose queue cannot be read is skipped this run (a doubt never
// nudges); the next run asks again.
func (uc NudgeHeartbeats) NudgeRestingSince(ctx context.Context, cutoff time.Time) (int64, error) {
	ids, err := uc.Candidates.HeartbeatDue(ctx, cutoff, uc.Clock.Now(), batchOr(uc.Batch))
	if err != nil {
		return 0, err
	}
	logger := orDefault(uc.Logger)
	due := ids[:0]
	for _, id := range ids {
		if uc.Queue != nil {
			pending, err := uc.Queue.HasPendingMessages(ctx, id)
			if err != nil {
				logger.WarnContext(ctx, "skipped a heartbeat: the queue did not say whether the session holds a pending message",
					"session_id", id, "error", err)
				continue
			}
			if pending {
				continue
			}
		}
		due = append(due, id)
	}
	return sweep(ctx, uc.Repo, due, "nudge the heartbeat of session", func(s domain.Session, wakes domain.Wakes) (domain.Outcome, bool, error) {
		env := domain.Env{Now: uc.Clock.Now(), Wakes: wakes, TrashRetention: uc.TrashRetention, FreshJobID: freshJobID()}
		return domain.Heartbeat(s, env)
	}, func(id int64) {
		logger.InfoContext(ctx, "nudged a resting session: its heartbeat was due", "session_id", id)
	})
}
