package app

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/clock"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// StatusSummaryForks finds a session's status-summary fork at work (one
// not archived): at most one exists, a unique index keeps it so (a second
// Create is ErrAlreadyExists).
type StatusSummaryForks interface {
	StatusSummaryForkAtWork(ctx context.Context, sourceID int64) (domain.Session, bool, error)
}

// CreateStatusSummaryFork creates the runner's throwaway fork of a session
// (domain.NewStatusSummaryFork), or answers the one at work.
type CreateStatusSummaryFork struct {
	Repo  SessionRepository
	Forks StatusSummaryForks
	Clock clock.Clock
}

// Handle returns the fork, and whether this call created it (false: a fork
// of the source was at work already, and that one is returned).
func (uc CreateStatusSummaryFork) Handle(ctx context.Context, sourceID int64, prompt string, covers int64) (domain.Session, bool, error) {
	if sourceID <= 0 {
		return domain.Session{}, false, validation.Invalid("source_session_id", "is required: the numeric id of the session to summarise")
	}
	source, err := uc.Repo.Get(ctx, domain.SessionRef{ID: sourceID})
	if err != nil {
		return domain.Session{}, false, err
	}
	n, markers, err := domain.NewStatusSummaryFork(source, prompt, covers)
	if err != nil {
		return domain.Session{}, false, err
	}
	if err := n.Validate(); err != nil {
		return domain.Session{}, false, err
	}
	if fork, ok, err := uc.Forks.StatusSummaryForkAtWork(ctx, sourceID); err != nil || ok {
		return fork, false, err
	}
	fork, err := uc.Repo.Create(ctx, nil, func(*domain.Session) (domain.Session, error) {
		s, err := n.Build(nil, uc.Clock.Now())
		s.CustomMetadata = markers
		return s, err
	})
	if errors.Is(err, domain.ErrAlreadyExists) {
		// Another refresh created one between the look and the insert.
		at, ok, ferr := uc.Forks.StatusSummaryForkAtWork(ctx, sourceID)
		if ferr == nil && ok {
			return at, false, nil
		}
	}
	return fork, err == nil, err
}

// HarvestStatusSummaryFork ends a fork whose one turn ended: what it wrote
// (or why it failed) goes on its source under the source's lock
// (domain.HarvestStatusSummary), then the fork is archived by Zimmer, a
// system archive that asks no queue (the archive transition still retires
// what is queued for it, and names it).
type HarvestStatusSummaryFork struct {
	Repo       SessionRepository
	Clock      clock.Clock
	Transition TransitionSession
}

// Harvested is a harvest's answer: the source (nil when it is gone), the
// fork, and whether this call recorded its outcome.
type Harvested struct {
	Source    *domain.Session
	Fork      domain.Session
	Harvested bool
}

// Handle records the outcome, then archives the fork; a retry after either
// step does the rest and writes nothing twice.
func (uc HarvestStatusSummaryFork) Handle(ctx context.Context, forkID int64, text, failure string) (Harvested, error) {
	if forkID <= 0 {
		return Harvested{}, validation.Invalid("fork_session_id", "is required: the numeric id of the status-summary fork")
	}
	fork, err := uc.Repo.Get(ctx, domain.SessionRef{ID: forkID})
	if err != nil {
		return Harvested{}, err
	}
	of, ok := fork.ForkOf()
	if !ok {
		return Harvested{}, &domain.PreconditionError{Reason: fmt.Sprintf(
			"session %d is not a status-summary fork (its custom_metadata carries no %s marker), so there is nothing to harvest", forkID, domain.StatusSummaryForkKey)}
	}
	var out Harvested
	c, err := uc.Repo.Update(ctx, domain.SessionRef{ID: of.SourceID}, func(s domain.Session, _ domain.Wakes) (Change, error) {
		h := domain.HarvestStatusSummary(s, of, forkID, text, failure, uc.Clock.Now())
		out.Harvested = h.Changed
		if !h.Changed {
			return Change{Nothing: true}, nil
		}
		return Change{Marked: &Marking{Session: h.Source, Timeline: h.Timeline, At: uc.Clock.Now()}}, nil
	})
	var gone *domain.NotFoundError
	switch {
	case errors.As(err, &gone):
		// The source was deleted: nothing to record, the fork still goes.
	case err != nil:
		return Harvested{}, err
	case c.Marked != nil:
		out.Source = &c.Marked.Session
	default:
		src, err := uc.Repo.Get(ctx, domain.SessionRef{ID: of.SourceID})
		if err != nil && !errors.As(err, &gone) {
			return Harvested{}, err
		}
		if err == nil {
			out.Source = &src
		}
	}
	out.Fork = fork
	if fork.Status == domain.StatusArchived {
		return out, nil
	}
	archived, err := uc.Transition.Fire(ctx, strconv.FormatInt(forkID, 10), string(domain.EventArchive),
		domain.Command{Actor: domain.StatusSummaryCleanup})
	var refused *domain.TransitionError
	switch {
	case errors.As(err, &refused) && refused.From == domain.StatusArchived:
		// Archived meanwhile (a retry racing this one): done.
		got, gerr := uc.Repo.Get(ctx, domain.SessionRef{ID: forkID})
		if gerr != nil {
			return Harvested{}, gerr
		}
		out.Fork = got
		return out, nil
	case err != nil:
		return Harvested{}, fmt.Errorf("archive status-summary fork %d: %w", forkID, err)
	}
	out.Fork = archived.Session
	return out, nil
}
