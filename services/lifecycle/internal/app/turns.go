package app

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
)

// TurnInterrupter halts a session's running turn: the runner's
// InterruptTurn, which returns once the turn's agent process is gone (the
// termination ladder finished) or at once when none runs.
type TurnInterrupter interface {
	InterruptTurn(ctx context.Context, sessionID int64, reason string) error
}

// haltTurnFirst stops a running session's agent process before a pause or
// an archive is applied, as the spec orders it: the process is halted
// first, then the session leaves running, so nothing the agent does lands
// after the session says it stopped. The session's state is read without a
// lock (the call may take the ladder's graces, and the runner's own
// transitions must not queue behind it); the transition then decides under
// the lock as always.
//
// Should the runner not answer, a pause is refused with ErrUnavailable
// (retry: a pause that leaves the agent working would be a lie), while an
// archive goes on: putting a session away must not depend on the runner,
// and the runner still stops the turn when it hears the session left
// running (its post-commit interrupt, the safety net of every transition
// out of running).
func (uc TransitionSession) haltTurnFirst(ctx context.Context, ref string, verb Verb) error {
	if uc.Turns == nil || (verb != Verb(domain.EventPause) && verb != Verb(domain.EventArchive)) {
		return nil
	}
	r, err := domain.ParseSessionRef(ref)
	if err != nil {
		return err
	}
	s, err := uc.Repo.Get(ctx, r)
	if err != nil {
		return err // an unknown session is refused here as the transition would
	}
	return uc.halt(ctx, s, verb)
}

// halt is haltTurnFirst for a session already read.
func (uc TransitionSession) halt(ctx context.Context, s domain.Session, verb Verb) error {
	if uc.Turns == nil || s.Status != domain.StatusRunning {
		return nil
	}
	err := uc.Turns.InterruptTurn(ctx, s.ID, string(verb))
	switch {
	case err == nil:
		return nil
	case verb == Verb(domain.EventArchive):
		slog.WarnContext(ctx, "archiving a running session whose turn the runner did not halt; it stops the turn once the archive is announced",
			"session_id", s.ID, "error", err)
		return nil
	default:
		return fmt.Errorf("the runner did not halt session %d's turn, so it was not paused; retry shortly: %w (%w)",
			s.ID, domain.ErrUnavailable, err)
	}
}
