package app

import (
	"context"
	"time"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/clock"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// AbandonRecovery gives up recovering a session automatically
// (domain.AbandonRecovery) under the session's lock.
type AbandonRecovery struct {
	Repo  SessionRepository
	Clock clock.Clock
}

// Handle returns the session as it stands, and whether this call gave its
// recovery up (false: there was nothing to abandon).
// by names the caller on the timeline line.
func (uc AbandonRecovery) Handle(ctx context.Context, id int64, reason, by string) (domain.Session, bool, error) {
	if id <= 0 {
		return domain.Session{}, false, validation.Invalid("session_id", "is required: the numeric id of the session")
	}
	if len([]rune(reason)) > 4*domain.MaxRecoveryReasonChars {
		return domain.Session{}, false, validation.Invalid("reason", "is too long")
	}
	var abandoned bool
	c, err := uc.Repo.Update(ctx, domain.SessionRef{ID: id}, func(s domain.Session, _ domain.Wakes) (Change, error) {
		given, line, ok := domain.AbandonRecovery(s, reason, by)
		if abandoned = ok; !ok {
			return Change{Nothing: true}, nil
		}
		return Change{Marked: &Marking{Session: given, Timeline: []domain.TimelineEntry{line}, At: uc.Clock.Now()}}, nil
	})
	if err != nil {
		return domain.Session{}, false, err
	}
	if c.Marked != nil {
		return c.Marked.Session, abandoned, nil
	}
	got, err := uc.Repo.Get(ctx, domain.SessionRef{ID: id})
	return got, abandoned, err
}

// ClearTrashExpiry drops an archived session's trash deadline once nothing
// of it is retained (domain.ClearTrashExpiry), under the session's lock.
type ClearTrashExpiry struct{ Repo SessionRepository }

// Handle returns the session as it stands, and whether this call cleared
// its deadline (false: not that archive's, or cleared already).
func (uc ClearTrashExpiry) Handle(ctx context.Context, id int64, archivedAt time.Time) (domain.Session, bool, error) {
	var vs validation.Violations
	if id <= 0 {
		vs.Add("session_id", "is required: the numeric id of the session")
	}
	if archivedAt.IsZero() {
		vs.Add("archived_at", "is required: the archive whose trash holds nothing any more")
	}
	if err := vs.Err(); err != nil {
		return domain.Session{}, false, err
	}
	var cleared bool
	c, err := uc.Repo.Update(ctx, domain.SessionRef{ID: id}, func(s domain.Session, _ domain.Wakes) (Change, error) {
		got, ok := domain.ClearTrashExpiry(s, archivedAt)
		if cleared = ok; !ok {
			return Change{Nothing: true}, nil
		}
		return Change{Marked: &Marking{Session: got}}, nil
	})
	if err != nil {
		return domain.Session{}, false, err
	}
	if c.Marked != nil {
		return c.Marked.Session, cleared, nil
	}
	got, err := uc.Repo.Get(ctx, domain.SessionRef{ID: id})
	return got, cleared, err
}
