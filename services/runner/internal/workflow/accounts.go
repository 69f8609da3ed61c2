package workflow

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/runner/internal/agent"
	"github.com/zimmerhq/zimmer/services/runner/internal/domain"
)

// The login pools (RN-30). Every turn's process runs under an account
// with capacity, chosen by ChooseAccount (its own activity, apart from
// anything else a turn waits for). A turn whose CLI hits a quota or
// authentication wall, or that finds its account without capacity, parks
// its session (ParkOnPool, then lifecycle's pause with auth_outage_reason)
// and keeps the undelivered prompt in State.Parked; the account's refill
// (AccountRefill, id accounts/<runtime>/<account>/refill) sleeps on a
// Temporal timer until the account has capacity and asks each parked
// session's workflow to unpark (KindUnpark), which resumes it with that
// prompt and a nudge naming the park.

// Names registered with the worker.
const (
	// ActivityChooseAccount picks a turn's account and records the turn
	// under it (ChooseAccountRequest → domain.Choice).
	ActivityChooseAccount = "zimmer.runner.ChooseAccount"
	// ActivityParkOnPool rests a walled account, records the session's
	// park and starts the account's refill (ParkRequest → ParkResult).
	ActivityParkOnPool = "zimmer.runner.ParkOnPool"
	// ActivityUnpark forgets a session's park (session id).
	ActivityUnpark = "zimmer.runner.Unpark"
	// RefillWorkflowName is the account's refill (RefillRequest).
	RefillWorkflowName = "zimmer.runner.AccountRefill"
	// ActivityAccountAvailableAt answers when an account has capacity
	// again (RefillRequest → time.Time).
	ActivityAccountAvailableAt = "zimmer.runner.AccountAvailableAt"
	// ActivityWakeParked asks the workflows of the sessions parked on an
	// account to unpark (RefillRequest → count signalled).
	ActivityWakeParked = "zimmer.runner.WakeParkedSessions"
)

// KindUnpark asks a session's workflow to resume its parked turn: its
// account's refill sends it.
const KindUnpark = "unpark"

// RefillID is the workflow id of an account's refill: an operator finds
// the pool's timers under accounts/.
func RefillID(runtime, account string) string {
	return "accounts/" + runtime + "/" + account + "/refill"
}

// ChooseAccountRequest asks for the account a turn runs under.
type ChooseAccountRequest struct {
	SessionID int64
	Runtime   string
	TurnID    string
	// Sticky is the account the session's conversation lives under.
	Sticky string
}

// WallInfo is the wall a turn's CLI hit (agent.Wall), its reset resolved
// on the node that read it.
type WallInfo struct {
	Kind    string
	Message string
	ResetAt time.Time
	// ResetKnown is false when the CLI named no reset (ResetAt is then the
	// fallback, domain.WallFallback from the wall).
	ResetKnown bool
}

// ParkRequest parks a session on an account: after a wall (Wall set), or
// because the account it needs has no capacity (Until, Reason from the
// pool's choice).
type ParkRequest struct {
	SessionID int64
	Runtime   string
	Account   string
	Wall      *WallInfo
	Until     time.Time
	Reason    string
}

// ParkResult is the park as recorded: the session's auth_outage_reason
// and when its account has capacity again.
type ParkResult struct {
	Reason string
	Until  time.Time
}

// RefillRequest names an account whose refill is awaited.
type RefillRequest struct {
	Runtime string
	Account string
}

// ParkedTurn is the prompt a park kept from its turn, and the park's
// reason, for the turn that resumes the session.
type ParkedTurn struct {
	Prompt  string
	Account string
	Reason  string
	Until   time.Time
}

// AccountPool is the login pools' state, shared by every node (Postgres).
type AccountPool interface {
	// Choose decides a turn's account and records the turn under it when
	// it runs; a turn asked again answers the account it was given.
	Choose(ctx context.Context, req ChooseAccountRequest, now time.Time) (domain.Choice, error)
	// AvailableAt is when an account has capacity again (now, or earlier,
	// when it has some; now for an account no longer configured).
	AvailableAt(ctx context.Context, runtime, account string, now time.Time) (time.Time, error)
	RecordWall(ctx context.Context, runtime, account string, until time.Time, reason string, now time.Time) error
	Park(ctx context.Context, p domain.PoolPark) error
	Unpark(ctx context.Context, sessionID int64) error
	ParkedOn(ctx context.Context, runtime, account string) ([]domain.PoolPark, error)
	// Login is the account's login on this node (its secrets); false when
	// this node's configuration has no such account.
	Login(runtime, account string) (agent.Login, bool)
}

// RefillStarter starts an account's refill unless it already runs.
type RefillStarter interface {
	StartRefill(ctx context.Context, req RefillRequest) error
}

// RegisterRefill registers the accounts' refill workflow on the shared
// task queue's worker.
func RegisterRefill(w interface {
	RegisterWorkflowWithOptions(w any, options workflow.RegisterOptions)
}) {
	w.RegisterWorkflowWithOptions(AccountRefill, workflow.RegisterOptions{Name: RefillWorkflowName})
}

// registerAccounts registers the pools' activities (RegisterShared).
func (a *Activities) registerAccounts(w ActivityRegistry) {
	w.RegisterActivityWithOptions(a.ChooseAccount, activity.RegisterOptions{Name: ActivityChooseAccount})
	w.RegisterActivityWithOptions(a.ParkOnPool, activity.RegisterOptions{Name: ActivityParkOnPool})
	w.RegisterActivityWithOptions(a.Unpark, activity.RegisterOptions{Name: ActivityUnpark})
	w.RegisterActivityWithOptions(a.AccountAvailableAt, activity.RegisterOptions{Name: ActivityAccountAvailableAt})
	w.RegisterActivityWithOptions(a.WakeParkedSessions, activity.RegisterOptions{Name: ActivityWakeParked})
}

// ChooseAccount picks the turn's account. Without a pool (a test rig) the
// turn runs under the ambient login.
func (a *Activities) ChooseAccount(ctx context.Context, req ChooseAccountRequest) (domain.Choice, error) {
	if a.Pool == nil {
		return domain.Choice{Run: true, Account: domain.AmbientAccount}, nil
	}
	return a.Pool.Choose(ctx, req, time.Now())
}

// ParkOnPool rests a walled account until its reset (its fallback when the
// CLI named none), records the session's park and starts the account's
// refill, and answers the park's reason and end.
func (a *Activities) ParkOnPool(ctx context.Context, req ParkRequest) (ParkResult, error) {
	now := time.Now()
	res := ParkResult{Reason: req.Reason, Until: req.Until}
	if w := req.Wall; w != nil {
		res.Until = w.ResetAt
		res.Reason = domain.WallReason(req.Runtime, req.Account, w.Kind, w.Message, w.ResetAt, w.ResetKnown)
		if a.Pool != nil {
			if err := a.Pool.RecordWall(ctx, req.Runtime, req.Account, w.ResetAt, res.Reason, now); err != nil {
				return ParkResult{}, err
			}
		}
	}
	if a.Pool == nil {
		return res, nil
	}
	err := a.Pool.Park(ctx, domain.PoolPark{SessionID: req.SessionID, Runtime: req.Runtime, Account: req.Account,
		Reason: res.Reason, Until: res.Until, ParkedAt: now})
	if err != nil {
		return ParkResult{}, err
	}
	if a.Refills != nil {
		if err := a.Refills.StartRefill(ctx, RefillRequest{Runtime: req.Runtime, Account: req.Account}); err != nil {
			return ParkResult{}, fmt.Errorf("start the refill of %s account %q: %w", req.Runtime, req.Account, err)
		}
	}
	return res, nil
}

// Unpark forgets a session's park: it was resumed.
func (a *Activities) Unpark(ctx context.Context, sessionID int64) error {
	if a.Pool == nil {
		return nil
	}
	return a.Pool.Unpark(ctx, sessionID)
}

// AccountAvailableAt answers when the account has capacity again.
func (a *Activities) AccountAvailableAt(ctx context.Context, req RefillRequest) (time.Time, error) {
	if a.Pool == nil {
		return time.Now(), nil
	}
	return a.Pool.AvailableAt(ctx, req.Runtime, req.Account, time.Now())
}

// WakeParkedSessions asks each session parked on the account to unpark;
// each workflow decides (a session asleep on a wake is skipped there, one
// already resumed by hand ignores it). The request id names the park, so a
// retried activity asks each park once.
func (a *Activities) WakeParkedSessions(ctx context.Context, req RefillRequest) (int, error) {
	if a.Pool == nil {
		return 0, nil
	}
	parks, err := a.Pool.ParkedOn(ctx, req.Runtime, req.Account)
	if err != nil {
		return 0, err
	}
	for _, p := range parks {
		tr := TurnRequest{RequestID: fmt.Sprintf("unpark/%d/%d", p.SessionID, p.ParkedAt.UnixNano()), Kind: KindUnpark}
		if err := a.Signaler.SignalWorkflow(ctx, ID(p.SessionID), "", SignalTurn, tr); err != nil {
			return 0, fmt.Errorf("ask session %d to unpark: %w", p.SessionID, err)
		}
	}
	return len(parks), nil
}

// AccountRefill is an account's refill: it sleeps on a Temporal timer
// until the account has capacity again (read again after each sleep: a
// later wall moves it), then asks the sessions parked on it to resume.
func AccountRefill(ctx workflow.Context, req RefillRequest) error {
	actx := untilAnswered(ctx)
	for range refillSleepsPerRun {
		var at time.Time
		if err := workflow.ExecuteActivity(actx, ActivityAccountAvailableAt, req).Get(ctx, &at); err != nil {
			return err
		}
		if d := at.Sub(workflow.Now(ctx)); d > 0 {
			workflow.GetLogger(ctx).Info("the account rests: waiting for its refill", "runtime", req.Runtime, "account", req.Account, "until", at)
			if err := workflow.Sleep(ctx, d); err != nil {
				return err
			}
			continue
		}
		var woke int
		if err := workflow.ExecuteActivity(actx, ActivityWakeParked, req).Get(ctx, &woke); err != nil {
			return err
		}
		workflow.GetLogger(ctx).Info("the account refilled: parked sessions asked to resume", "runtime", req.Runtime, "account", req.Account, "sessions", woke)
		return nil
	}
	return workflow.NewContinueAsNewError(ctx, RefillWorkflowName, req)
}

// refillSleepsPerRun bounds a refill's history: a pool walled again and
// again continues as new.
const refillSleepsPerRun = 50

// chooseAccount asks the pool for turn id's account, as a local activity
// in the workflow task at hand: the turn's path costs no extra dispatch
// (RN-4). Asked again until the pool answers; a retry of a choice that
// was recorded answers the same account.
func (t *turnRunner) chooseAccount(ctx workflow.Context, id string) (domain.Choice, error) {
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout:    transitionTimeout,
		ScheduleToCloseTimeout: 5 * time.Minute,
		RetryPolicy:            &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
	})
	req := ChooseAccountRequest{SessionID: t.st.Session.ID, Runtime: t.st.Session.Runtime, TurnID: id, Sticky: t.st.Account}
	for {
		var c domain.Choice
		err := workflow.ExecuteLocalActivity(lctx, ActivityChooseAccount, req).Get(ctx, &c)
		if err == nil || ctx.Err() != nil || temporal.IsCanceledError(err) {
			return c, err
		}
		workflow.GetLogger(ctx).Warn("the login pool did not answer in five minutes; asking again", "turn", id, "error", err)
	}
}

// noteAccount writes on the timeline the account a turn runs under when
// it is not the one the session's turns ran under before (its first, or
// a change): each turn's own is in the pool's turn record.
func (t *turnRunner) noteAccount(ctx workflow.Context, id, account string) error {
	before := t.st.Account
	t.st.Account = account
	if account == before || account == domain.AmbientAccount {
		return nil // no pool: the runtime's own login, as before pools
	}
	line := fmt.Sprintf("[Accounts] turn %s runs under the %s account %q", id, t.st.Session.Runtime, account)
	if before != "" {
		line += fmt.Sprintf(" (its conversation was under %q, which left the pool)", before)
	}
	return t.note(ctx, line, false)
}

// parkOnPool parks the session on its login pool: the account rests (after a
// wall), the park is recorded and the refill armed, then lifecycle's
// pause with auth_outage_reason puts the session to sleep. prompt is kept
// for the turn that resumes it: the message is not lost with the turn
// that never ran it.
func (t *turnRunner) parkOnPool(ctx workflow.Context, id, prompt string, req ParkRequest) error {
	st := t.st
	req.SessionID, req.Runtime = st.Session.ID, st.Session.Runtime
	var res ParkResult
	if err := workflow.ExecuteActivity(untilAnswered(ctx), ActivityParkOnPool, req).Get(ctx, &res); err != nil {
		return err
	}
	if t.unparked != "" {
		prompt = t.unparked // the message itself, not the nudge around it
	}
	st.Parked = &ParkedTurn{Prompt: prompt, Account: req.Account, Reason: res.Reason, Until: res.Until}
	workflow.GetLogger(ctx).Info("parked on the login pool", "turn", id, "account", req.Account, "until", res.Until)
	return t.endTransition(ctx, TransitionRequest{Event: EventPause, AuthOutageReason: res.Reason})
}

// unpark is an account's refill reaching the session: it resumes the
// parked turn's prompt with the nudge naming the park — unless nothing is
// parked any more (a person's message took it along), the session is no
// longer parked (resumed, paused, archived: the prompt rides along with
// its next turn), or it is asleep on a wake somebody chose (the wake's
// turn takes it; resuming would consume the wake).
func (t *turnRunner) unpark(ctx workflow.Context, req TurnRequest) (*TurnRequest, error) {
	st := t.st
	if st.Parked == nil {
		workflow.GetLogger(ctx).Info("unpark asked with nothing parked: dropped", "request", req.RequestID)
		return nil, nil
	}
	s, err := t.sessionState(ctx)
	if err != nil {
		return nil, err
	}
	switch {
	case s.Status != rules.StatusWaiting || s.PausedBy != rules.PausedByAuthOutage:
		workflow.GetLogger(ctx).Info("unpark asked of a session no longer parked: its prompt waits for the next turn",
			"status", s.Status, "paused_by", s.PausedBy)
		return nil, nil
	case s.AwaitingWake:
		workflow.GetLogger(ctx).Info("unpark skipped: the session sleeps on a wake ahead, whose turn takes the parked prompt")
		return nil, nil
	}
	st.Turns++
	id := turnID(st.Session.ID, st.Turns)
	err = t.transition(ctx, TransitionRequest{Event: EventResume, SystemRecovery: true, RunningJobID: id})
	if isRefused(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	parked := st.takeParked()
	if err := workflow.ExecuteActivity(untilAnswered(ctx), ActivityUnpark, st.Session.ID).Get(ctx, nil); err != nil {
		return nil, err
	}
	t.unparked = parked.Prompt
	return t.turns(ctx, id, domain.UnparkPrompt(parked.Prompt, parked.Reason))
}

// takeParked hands the parked turn over to the turn that runs it.
func (st *State) takeParked() ParkedTurn {
	p := *st.Parked
	st.Parked = nil
	return p
}

// withParked is the prompt of a turn someone else asked for while a
// parked prompt waits: the parked message first (it came first), then
// theirs. ok says a parked prompt went along.
func (st *State) withParked(prompt string) (string, bool) {
	if st.Parked == nil {
		return prompt, false
	}
	p := st.takeParked()
	if strings.TrimSpace(prompt) == "" {
		return p.Prompt, true
	}
	return p.Prompt + "\n\n" + prompt, true
}

// wallOf is the wall a turn's result reports, nil when none.
func wallOf(w *agent.Wall, now time.Time) *WallInfo {
	if w == nil {
		return nil
	}
	reset, known := w.Reset(now)
	if !known || !reset.After(now) {
		reset, known = now.Add(domain.WallFallback), false
	}
	return &WallInfo{Kind: string(w.Kind), Message: w.Message, ResetAt: reset, ResetKnown: known}
}
