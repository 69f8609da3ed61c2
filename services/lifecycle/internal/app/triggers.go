package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/clock"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// TriggerRepository keeps the triggers in lifecycle's database, every
// write on the sessions' one write path (Update's shape: the session
// locked, a pure decision, one commit).
type TriggerRepository interface {
	// Arm is Update with what arming reads under the session's lock
	// (ArmingRead): a fresh trigger id, the session's own armed one-time
	// wake-ups and, when watched is set, that session's status, locked FOR
	// KEY SHARE (its transitions wait for the arming, so a watcher armed is
	// seen by the next one).
	Arm(ctx context.Context, ref domain.SessionRef, watched int64,
		decide func(s domain.Session, wakes domain.Wakes, read ArmingRead) (Change, error)) (Change, error)
	// WithTrigger is Update with trigger triggerID read FOR UPDATE under
	// the session's lock; a trigger of another session is NotFound.
	WithTrigger(ctx context.Context, ref domain.SessionRef, triggerID int64,
		decide func(domain.Session, domain.Wakes, domain.Trigger) (Change, error)) (Change, error)
	// Triggers lists the armed triggers f selects, soonest first.
	Triggers(ctx context.Context, f TriggerFilter) ([]domain.Trigger, error)
	// WakesOf returns the armed wake-ups of each of ids that has any, in
	// one query.
	WakesOf(ctx context.Context, ids []int64) (map[int64]domain.Wakes, error)
}

// ArmingRead is what Arm reads beside the locked session.
type ArmingRead struct {
	// TriggerID is the fresh trigger's id.
	TriggerID int64
	// OneTimeArmed are the ids of the session's own armed one-time
	// wake-ups, oldest first: what a Pause Until supersedes.
	OneTimeArmed []int64
	// WatchedStatus is the watched session's status; nil when it does not
	// exist (or none is watched).
	WatchedStatus *domain.Status
}

// TriggerFilter selects armed triggers.
type TriggerFilter struct {
	SessionID        int64
	WatchedSessionID int64
	Kind             domain.TriggerKind
	Limit            int
}

// Search limits.
const (
	DefaultTriggerPage = 50
	MaxTriggerPage     = 500
	// MaxAwaitingIDs bounds one AwaitingScheduledWake question.
	MaxAwaitingIDs = 1000
)

// Triggers are the trigger use cases (TriggerService, RefreshSession).
type Triggers struct {
	Repo     TriggerRepository
	Sessions SessionRepository
	Clock    clock.Clock
	// Turns halts a running session's turn before Pause Until sleeps it;
	// nil when no runner is configured.
	Turns TurnInterrupter
	// Transition applies the refresh's resume.
	Transition TransitionSession
}

// NewTriggers wires the trigger use cases over repo and the sessions' use
// cases (their repository, clock, and the transition the refresh applies).
func NewTriggers(repo TriggerRepository, sessions Sessions) Triggers {
	return Triggers{Repo: repo, Sessions: sessions.Get.Repo, Clock: sessions.Transition.Clock,
		Turns: sessions.Transition.Turns, Transition: sessions.Transition}
}

// Armed is an armed trigger and the session as the arming left it.
type Armed struct {
	Trigger domain.Trigger
	Session domain.Session
	Message string
}

// WakeMeUpLater arms a one-time wake of the session at req's time: a
// needs_input session sleeps now, a waiting one stays asleep, a running
// one sleeps when its turn ends. Agent wakes add up: it supersedes none.
func (uc Triggers) WakeMeUpLater(ctx context.Context, ref string, req domain.WakeRequest, actor domain.Actor) (Armed, error) {
	req.DelayAllowed = true
	return uc.armWake(ctx, ref, req, domain.SourceWakeMeUpLater, false, actor)
}

// PauseUntil is the operator's Pause Until: the session is asleep in
// waiting with one wake armed at req's time when it returns, its own
// unfired one-time wake-ups superseded in the same commit (never two
// armed, never none in between). A running turn is halted first (the
// runner's InterruptTurn, as a pause does); should the halt not land, the
// sleep is deferred to the turn's end, the spec's fallback.
func (uc Triggers) PauseUntil(ctx context.Context, ref string, req domain.WakeRequest, actor domain.Actor) (Armed, error) {
	req.DelayAllowed = false
	if _, err := req.FireAt(uc.Clock.Now()); err != nil {
		return Armed{}, err // refused before a turn is halted
	}
	r, err := domain.ParseSessionRef(ref)
	if err != nil {
		return Armed{}, err
	}
	s, err := uc.Sessions.Get(ctx, r)
	if err != nil {
		return Armed{}, err
	}
	if err := domain.CanPauseUntil(s); err != nil {
		return Armed{}, err // refused before a turn is halted; checked again under the lock
	}
	halted := s.Status == domain.StatusRunning
	if halted && uc.Turns != nil {
		if err := uc.Turns.InterruptTurn(ctx, s.ID, "pause_until"); err != nil {
			slog.WarnContext(ctx, "Pause Until could not halt the running turn; the session sleeps when its turn ends",
				"session_id", s.ID, "error", err)
			halted = false
		}
	}
	return uc.armWake(ctx, ref, req, domain.SourcePauseUntil, halted, actor)
}

func (uc Triggers) armWake(ctx context.Context, ref string, req domain.WakeRequest, source domain.TriggerSource,
	halted bool, actor domain.Actor,
) (Armed, error) {
	r, err := domain.ParseSessionRef(ref)
	if err != nil {
		return Armed{}, err
	}
	wakeAt, err := req.FireAt(uc.Clock.Now())
	if err != nil {
		return Armed{}, err
	}
	cmd := domain.Command{Actor: actor}
	c, err := uc.Repo.Arm(ctx, r, 0, func(s domain.Session, wakes domain.Wakes, read ArmingRead) (Change, error) {
		env := domain.Env{Now: uc.Clock.Now(), Wakes: wakes, FreshJobID: freshJobID()}
		t := domain.Trigger{ID: read.TriggerID, SessionID: s.ID, Kind: domain.KindOneTime, FireAt: wakeAt.At,
			Timezone: wakeAt.Timezone, Prompt: req.Prompt, Source: source, Status: domain.TriggerArmed, CreatedAt: env.Now}
		var supersedes []int64
		if source == domain.SourcePauseUntil {
			supersedes = read.OneTimeArmed
		}
		out, err := domain.ArmWake(s, t, supersedes, halted && s.Status == domain.StatusRunning, cmd, env)
		if err != nil {
			return Change{}, err
		}
		a := &Arming{Trigger: t, At: env.Now, Supersedes: supersedes}
		if len(out.Applied) == 0 && out.Session.Markers == s.Markers {
			a.Timeline = out.Timeline // asleep already: the session stays as it is
		} else {
			a.Outcome = &out
		}
		return Change{Armed: a}, nil
	})
	if err != nil {
		return Armed{}, err
	}
	return armed(c.Armed), nil
}

func armed(a *Arming) Armed {
	t := a.Trigger
	at := domain.WakeAt{At: t.FireAt, Timezone: t.Timezone}.Format()
	s := a.Session
	msg := fmt.Sprintf("Session %d is asleep; wake-up #%d wakes it at %s.", s.ID, t.ID, at)
	if s.Status == domain.StatusRunning {
		msg = fmt.Sprintf("Session %d goes to sleep when its turn ends; wake-up #%d wakes it at %s.", s.ID, t.ID, at)
	}
	if len(a.Supersedes) > 0 {
		msg += " It supersedes " + domain.WakeUpList(a.Supersedes) + "."
	}
	return Armed{Trigger: t, Session: s, Message: msg}
}

// Watch arms a watcher: when the watched session next reaches one of the
// states, the session gets the prompt as its next turn. Arming it puts the
// session to sleep as a wake does (waiting now, or when its running turn
// ends).
func (uc Triggers) Watch(ctx context.Context, ref string, req domain.WatchRequest, actor domain.Actor) (Armed, error) {
	r, err := domain.ParseSessionRef(ref)
	if err != nil {
		return Armed{}, err
	}
	if _, err := req.Validate(r.ID); err != nil {
		return Armed{}, err // every field but "itself" for a slug, checked again below
	}
	cmd := domain.Command{Actor: actor}
	c, err := uc.Repo.Arm(ctx, r, req.WatchedSessionID, func(s domain.Session, wakes domain.Wakes, read ArmingRead) (Change, error) {
		states, err := req.Validate(s.ID)
		if err != nil {
			return Change{}, err
		}
		env := domain.Env{Now: uc.Clock.Now(), Wakes: wakes, FreshJobID: freshJobID()}
		t := domain.Trigger{ID: read.TriggerID, SessionID: s.ID, Kind: domain.KindSessionState, WatchedSessionID: req.WatchedSessionID,
			States: states, Prompt: req.Prompt, Source: domain.SourceWatch, Status: domain.TriggerArmed, CreatedAt: env.Now}
		out, err := domain.ArmWatch(s, t, read.WatchedStatus, cmd, env)
		if err != nil {
			return Change{}, err
		}
		a := &Arming{Trigger: t, At: env.Now}
		if len(out.Applied) == 0 && out.Session.Markers == s.Markers {
			a.Timeline = out.Timeline
		} else {
			a.Outcome = &out
		}
		return Change{Armed: a}, nil
	})
	if err != nil {
		return Armed{}, err
	}
	a := c.Armed
	return Armed{Trigger: a.Trigger, Session: a.Session}, nil
}

// List lists the session's armed triggers, soonest first.
func (uc Triggers) List(ctx context.Context, ref string) ([]domain.Trigger, error) {
	r, err := domain.ParseSessionRef(ref)
	if err != nil {
		return nil, err
	}
	s, err := uc.Sessions.Get(ctx, r)
	if err != nil {
		return nil, err
	}
	return uc.Repo.Triggers(ctx, TriggerFilter{SessionID: s.ID, Limit: MaxTriggerPage})
}

// Search lists armed triggers across sessions.
func (uc Triggers) Search(ctx context.Context, f TriggerFilter) ([]domain.Trigger, error) {
	var vs validation.Violations
	if f.Kind != "" && f.Kind != domain.KindOneTime && f.Kind != domain.KindSessionState {
		vs.Add("kind", "%q is not a kind: give one_time or session_state", f.Kind)
	}
	switch {
	case f.Limit < 0 || f.Limit > MaxTriggerPage:
		vs.Add("page_size", "must be between 0 (%d) and %d", DefaultTriggerPage, MaxTriggerPage)
	case f.Limit == 0:
		f.Limit = DefaultTriggerPage
	}
	if err := vs.Err(); err != nil {
		return nil, err
	}
	return uc.Repo.Triggers(ctx, f)
}

// Cancel disarms one of the session's triggers; its timer then fires into
// nothing. A trigger that fired or was cancelled is NotFound.
func (uc Triggers) Cancel(ctx context.Context, ref string, triggerID int64, by string) (domain.Trigger, error) {
	r, err := domain.ParseSessionRef(ref)
	if err != nil {
		return domain.Trigger{}, err
	}
	if triggerID <= 0 {
		return domain.Trigger{}, validation.Invalid("trigger_id", "is required: the trigger's numeric id")
	}
	c, err := uc.Repo.WithTrigger(ctx, r, triggerID, func(_ domain.Session, _ domain.Wakes, t domain.Trigger) (Change, error) {
		now := uc.Clock.Now()
		t, line, err := domain.CancelTrigger(t, now, by)
		if err != nil {
			return Change{}, err
		}
		return Change{Triggered: &TriggerMove{Trigger: t, Timeline: []domain.TimelineEntry{line}, At: now}}, nil
	})
	if err != nil {
		return domain.Trigger{}, err
	}
	return c.Triggered.Trigger, nil
}

// AwaitingScheduledWake returns which of ids are asleep on purpose (a
// one-time wake still ahead, or an armed watcher), in ids' order, from one
// query.
func (uc Triggers) AwaitingScheduledWake(ctx context.Context, ids []int64) ([]int64, error) {
	if len(ids) > MaxAwaitingIDs {
		return nil, validation.Invalid("session_ids", "ask about at most %d sessions at once, got %d", MaxAwaitingIDs, len(ids))
	}
	if len(ids) == 0 {
		return nil, nil
	}
	wakes, err := uc.Repo.WakesOf(ctx, ids)
	if err != nil {
		return nil, err
	}
	now := uc.Clock.Now()
	var asleep []int64
	for _, id := range ids {
		if w, ok := wakes[id]; ok && w.Asleep(now) {
			asleep = append(asleep, id)
			delete(wakes, id) // an id asked twice is answered once
		}
	}
	return asleep, nil
}

// Refreshed is what a refresh did.
type Refreshed struct {
	Session   domain.Session
	Refreshed bool
	Message   string
}

// Refresh nudges a session that may be stuck, per its state
// (domain.Refresh), deciding under the session's lock from its armed
// wake-ups, so a wake armed meanwhile is never cancelled by the nudge.
func (uc Triggers) Refresh(ctx context.Context, ref string, actor domain.Actor) (Refreshed, error) {
	r, err := domain.ParseSessionRef(ref)
	if err != nil {
		return Refreshed{}, err
	}
	var answer Refreshed
	c, err := uc.Sessions.Update(ctx, r, func(s domain.Session, wakes domain.Wakes) (Change, error) {
		env := domain.Env{Now: uc.Clock.Now(), Wakes: wakes, TrashRetention: uc.Transition.TrashRetention, FreshJobID: freshJobID()}
		out, why, err := domain.Refresh(s, wakes.Asleep(env.Now), domain.Command{Actor: actor}, env)
		var refused *domain.TransitionError
		switch {
		case errors.As(err, &refused):
			return Change{Refused: &Refusal{Err: refused, At: env.Now, By: actor.By}}, nil
		case err != nil:
			return Change{}, err
		case why != "":
			answer = Refreshed{Session: s, Message: why}
			return Change{Nothing: true}, nil
		}
		answer = Refreshed{Refreshed: true}
		return Change{Transitioned: &out}, nil
	})
	if err != nil {
		return Refreshed{}, err
	}
	if c.Transitioned != nil {
		answer.Session, answer.Message = c.Transitioned.Session, domain.RefreshedMessage(*c.Transitioned)
	}
	return answer, nil
}
