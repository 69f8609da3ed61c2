package app

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/clock"
)

// ElicitationAnswerer hands an answer to the agent process blocked on an
// elicitation: the runner's AnswerElicitation, which routes it to the node
// running the turn and returns once the agent took it, with the action the
// agent reported. A stale answer (the turn gone, the agent no longer
// waiting on it) is the runner's refusal.
type ElicitationAnswerer interface {
	AnswerElicitation(ctx context.Context, sessionID int64, e domain.Elicitation, answer domain.ElicitationAnswer) (action string, err error)
}

// Elicitations lists and answers the questions sessions' agents are
// blocked on.
type Elicitations struct {
	Repo  SessionRepository
	Clock clock.Clock
	// Answerer is nil when no runner is configured: nothing can be
	// answered.
	Answerer ElicitationAnswerer
	Logger   *slog.Logger
}

// Pending returns the session ref names and the elicitations its agent is
// blocked on (none or one).
func (uc Elicitations) Pending(ctx context.Context, ref string) (domain.Session, []domain.Elicitation, error) {
	r, err := domain.ParseSessionRef(ref)
	if err != nil {
		return domain.Session{}, nil, err
	}
	s, err := uc.Repo.Get(ctx, r)
	if err != nil {
		return domain.Session{}, nil, err
	}
	if e := domain.PendingElicitation(s); e != nil && e.ID != "" {
		return s, []domain.Elicitation{*e}, nil
	}
	return s, nil, nil
}

// Answer checks answer against the elicitation id the session's agent is
// blocked on (domain.CheckElicitationAnswer), hands it to the agent, and
// records on the timeline who answered and how, naming by. The session is
// read without a lock: the runner's own unblock, which the agent's taking
// the answer sets off, must not queue behind this call. Two answers at
// once are the runner's to order: the agent takes one, the other is
// refused as no longer pending. It returns the session as it stands after
// and the action the agent reported.
func (uc Elicitations) Answer(ctx context.Context, ref, id string, answer domain.ElicitationAnswer, by string) (domain.Session, string, error) {
	r, err := domain.ParseSessionRef(ref)
	if err != nil {
		return domain.Session{}, "", err
	}
	s, err := uc.Repo.Get(ctx, r)
	if err != nil {
		return domain.Session{}, "", err
	}
	e, err := domain.CheckElicitationAnswer(s, id, answer)
	if err != nil {
		return domain.Session{}, "", err
	}
	if uc.Answerer == nil {
		return domain.Session{}, "", fmt.Errorf("no runner is configured to hand session %d's agent its answer: %w", s.ID, domain.ErrUnavailable)
	}
	action, err := uc.Answerer.AnswerElicitation(ctx, s.ID, e, answer)
	if err != nil {
		return domain.Session{}, "", err
	}
	line := domain.TimelineEntry{Kind: domain.TimelineNote, Message: domain.Attributed(domain.ElicitationAnsweredLine(e, action), by)}
	c, err := uc.Repo.Update(ctx, domain.SessionRef{ID: s.ID}, func(cur domain.Session, _ domain.Wakes) (Change, error) {
		return Change{Marked: &Marking{Session: cur, Timeline: []domain.TimelineEntry{line}, At: uc.Clock.Now()}}, nil
	})
	if err != nil {
		// The agent has its answer, which is what was asked; only the
		// record of it is missing, and an error now would invite a retry
		// that can only be refused.
		orDefault(uc.Logger).WarnContext(ctx, "the agent took the answer; recording it on the timeline failed",
			"session_id", s.ID, "elicitation_id", e.ID, "action", action, "error", err)
		return s, action, nil
	}
	return c.Marked.Session, action, nil
}
