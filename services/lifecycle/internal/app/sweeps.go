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
	batch := uc.Batch
	if batch <= 0 {
		batch = DefaultSweepBatch
	}
	ids, err := uc.Candidates.Untouched(ctx, cutoff, batch)
	if err != nil {
		return 0, err
	}
	var (
		archived int64
		errs     []error
	)
	for _, id := range ids {
		c, err := uc.Repo.Update(ctx, domain.SessionRef{ID: id}, func(s domain.Session, wakes domain.Wakes) (Change, error) {
			env := domain.Env{Now: uc.Clock.Now(), Wakes: wakes, TrashRetention: uc.TrashRetention}
			out, ok, err := domain.ArchiveStale(s, cutoff, uc.After, env)
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
			errs = append(errs, fmt.Errorf("archive stale session %d: %w", id, err))
		case c.Transitioned != nil:
			archived++
			uc.logger().InfoContext(ctx, "archived a stale session", "session_id", id, "untouched_since", cutoff)
		}
	}
	return archived, errors.Join(errs...)
}

func (uc ArchiveStaleSessions) logger() *slog.Logger {
	if uc.Logger == nil {
		return slog.Default()
	}
	return uc.Logger
}
