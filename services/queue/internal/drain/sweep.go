package drain

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/periodic"
)

// StaleSealAge is how long an archive attempt may hold a session's seal
// before the sweep asks whether its archive ever committed. An attempt
// seals, asks lifecycle to archive and commits or unseals within a request;
// one still holding a seal after a minute has died.
const StaleSealAge = time.Minute

// Sweep lifts the seals archive attempts left behind (their caller died
// between sealing and committing, so nobody unseals them): every seal older
// than StaleSealAge whose session lifecycle does not report archived. An
// archived session's seal is left to the archive's retire effect, which
// takes it over. A session lifecycle no longer knows (deleted) has no
// archive left to commit, so its seal is lifted too.
//
// Should the archive commit after all, between the sweep's read and its
// unseal, the retire effect still seals the queue and retires every live
// message; only the archive line would not have named a message accepted
// in between.
type Sweep struct {
	Seals    Seals
	Sessions Sessions
	Logger   *slog.Logger
}

// Periodic runs the sweep as a periodic sweep: the schedule
// <service>-stale-seals every StaleSealAge on the service's task queue,
// lifting seals placed before its run's time minus StaleSealAge.
func (s *Sweep) Periodic() periodic.Sweep {
	return periodic.Sweep{Name: "stale-seals", Window: StaleSealAge, Did: "unsealed", Run: s.UnsealStale}
}

// UnsealStale lifts the stale seals placed before cutoff and says how many.
// A session whose status cannot be read now keeps its seal until a later
// run; the error names it, and the run retries.
func (s *Sweep) UnsealStale(ctx context.Context, cutoff time.Time) (int64, error) {
	held, err := s.Seals.StaleSeals(ctx, cutoff)
	if err != nil {
		return 0, err
	}
	var (
		unsealed int64
		errs     []error
	)
	for _, id := range slices.Sorted(maps.Keys(held)) {
		status, err := s.Sessions.Status(ctx, id)
		switch {
		case errors.Is(err, ErrSessionNotFound):
			status = "deleted"
		case err != nil:
			errs = append(errs, fmt.Errorf("read session %d's status: %w", id, err))
			continue
		case status == rules.StatusArchived:
			continue
		}
		if err := s.Seals.Unseal(ctx, id, held[id]); err != nil {
			errs = append(errs, err)
			continue
		}
		unsealed++
		s.Logger.InfoContext(ctx, "lifted a stale archive seal: the archive attempt never committed",
			"session_id", id, "sealed_by", held[id], "status", status)
	}
	return unsealed, errors.Join(errs...)
}
