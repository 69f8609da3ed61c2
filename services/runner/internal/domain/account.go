package domain

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// A runtime's login pool: the accounts its CLI may run under (the
// deployer's RUNNER_ACCOUNTS_FILE), or, with none configured, the one
// ambient login the CLI finds on its own. Each turn runs under an account
// with capacity; one that hits a quota or authentication wall rests until
// its reset, and the sessions parked on it wait for its refill.

// AmbientAccount names the runtime's own login: the account of a runtime
// for which none is configured, as before pools existed.
const AmbientAccount = "ambient"

// QuotaTarget is a deployer's ceiling on an account: at most MaxTurns
// turns started within any Window (Claude Code's five-hour and weekly
// windows, say). An account at a target has no capacity until its oldest
// turn in the window ages out.
type QuotaTarget struct {
	Window   time.Duration
	MaxTurns int
}

func (q QuotaTarget) String() string { return fmt.Sprintf("%d turns per %s", q.MaxTurns, q.Window) }

// Account is one login of a runtime's pool, as the pool decides on it:
// its name and targets (never its secrets, which stay in the runner's
// configuration).
type Account struct {
	Runtime string
	Name    string
	Targets []QuotaTarget
}

// TargetUse is how much of a target an account has used: the turns it
// started within the window, and when the oldest of the ones over the
// target leaves it (zero while under the target).
type TargetUse struct {
	Target  QuotaTarget
	Turns   int
	FreesAt time.Time
}

// AccountUse is an account as the pool sees it now.
type AccountUse struct {
	Account Account
	// RestsUntil is when a wall it hit resets (zero: none, or past).
	RestsUntil time.Time
	// WallReason is what the last wall said.
	WallReason string
	Targets    []TargetUse
	// Recent counts its turns within UsageWindow: least used goes first.
	Recent int
}

// UsageWindow is how far back "least used" looks when an account has no
// target of its own: Claude Code's shortest quota window.
const UsageWindow = 5 * time.Hour

// UsageWindowOf is the window an account's recent use is counted over:
// its shortest target's, else UsageWindow.
func UsageWindowOf(a Account) time.Duration {
	w := UsageWindow
	for i, t := range a.Targets {
		if i == 0 || t.Window < w {
			w = t.Window
		}
	}
	return w
}

// AvailableAt is when the account has capacity again: now when it has
// some, else the later of its wall's reset and its targets' freeing.
func (u AccountUse) AvailableAt(now time.Time) time.Time {
	at := now
	if u.RestsUntil.After(at) {
		at = u.RestsUntil
	}
	for _, t := range u.Targets {
		if t.Turns >= t.Target.MaxTurns && t.FreesAt.After(at) {
			at = t.FreesAt
		}
	}
	return at
}

// HasCapacity reports whether a turn may start under the account now.
func (u AccountUse) HasCapacity(now time.Time) bool { return !u.AvailableAt(now).After(now) }

// why says why the account has no capacity now.
func (u AccountUse) why(now time.Time) string {
	var parts []string
	if u.RestsUntil.After(now) {
		w := "it hit a wall"
		if u.WallReason != "" {
			w += " (" + u.WallReason + ")"
		}
		parts = append(parts, w)
	}
	for _, t := range u.Targets {
		if t.Turns >= t.Target.MaxTurns {
			parts = append(parts, "it reached its quota target of "+t.Target.String())
		}
	}
	return strings.Join(parts, " and ")
}

// Choice is the pool's answer for one turn: run it under Account, or park
// the session until Until, when Account (the one it waits for) has
// capacity again.
type Choice struct {
	Run     bool
	Account string
	Until   time.Time
	// Reason says, for a park, what the pool is out of, in words for the
	// session's auth_outage_reason.
	Reason string
}

// ChooseAccount picks the account a session's turn runs under. A session
// keeps the account its conversation began under (sticky), while that
// account is still in the pool: the runtime keeps a conversation in its
// login's configuration directory, so --resume finds it only there. With
// no account yet (a first turn, or its account left the pool), the least
// used with capacity goes first (fewest recent turns, then by name). When
// the account the session needs has no capacity, the session parks until
// it has; with no account of its own and none with capacity, until the
// first one has.
func ChooseAccount(runtime string, pool []AccountUse, sticky string, now time.Time) Choice {
	if sticky != "" {
		if i := slices.IndexFunc(pool, func(u AccountUse) bool { return u.Account.Name == sticky }); i >= 0 {
			u := pool[i]
			if u.HasCapacity(now) {
				return Choice{Run: true, Account: sticky}
			}
			return Choice{Account: sticky, Until: u.AvailableAt(now), Reason: fmt.Sprintf(
				"the %s account %q this session's conversation lives under has no capacity: %s; it has again at %s",
				runtime, sticky, u.why(now), u.AvailableAt(now).UTC().Format(time.RFC3339))}
		}
	}
	if len(pool) == 0 {
		return Choice{}
	}
	ready := slices.DeleteFunc(slices.Clone(pool), func(u AccountUse) bool { return !u.HasCapacity(now) })
	if len(ready) > 0 {
		least := slices.MinFunc(ready, func(a, b AccountUse) int {
			return cmp.Or(cmp.Compare(a.Recent, b.Recent), cmp.Compare(a.Account.Name, b.Account.Name))
		})
		return Choice{Run: true, Account: least.Account.Name}
	}
	first := slices.MinFunc(pool, func(a, b AccountUse) int {
		return cmp.Or(a.AvailableAt(now).Compare(b.AvailableAt(now)), cmp.Compare(a.Account.Name, b.Account.Name))
	})
	return Choice{Account: first.Account.Name, Until: first.AvailableAt(now), Reason: fmt.Sprintf(
		"the %s login pool is dry: every account has hit a wall or its quota target; %q has capacity again first, at %s",
		runtime, first.Account.Name, first.AvailableAt(now).UTC().Format(time.RFC3339))}
}

// PoolPark is a session parked on an account (paused_by auth_outage): the
// account's refill resumes it.
type PoolPark struct {
	SessionID int64
	Runtime   string
	Account   string
	Reason    string
	Until     time.Time
	ParkedAt  time.Time
}

// WallFallback is how long an account rests after a wall whose reset the
// CLI did not name (or a login that has to be renewed): long enough not to
// hammer a spent account, short enough that a fixed login is found again
// soon.
const WallFallback = 30 * time.Minute

// WallReason is a wall's auth_outage_reason: the runtime, the account, what
// the CLI said and when the account has capacity again.
func WallReason(runtime, account, kind, message string, until time.Time, resetKnown bool) string {
	what := "hit its usage limit"
	if kind == "auth" {
		what = "is not logged in any more"
	}
	when := "resets at " + until.UTC().Format(time.RFC3339)
	if !resetKnown {
		when = fmt.Sprintf("no reset was named: tried again at %s", until.UTC().Format(time.RFC3339))
	}
	msg := strings.Join(strings.Fields(message), " ")
	if r := []rune(msg); len(r) > 300 {
		msg = string(r[:300]) + "…"
	}
	return fmt.Sprintf("the %s account %q %s (%q); %s", runtime, account, what, msg, when)
}

// UnparkPrompt is the prompt of the turn that resumes a parked session:
// the message the wall kept from it, then the nudge naming the park, so
// neither the agent nor a human reading over its shoulder has to guess
// why it comes again (the spec's system_recovery(reason:) from
// AuthOutageParkService).
func UnparkPrompt(parked, reason string) string {
	nudge := recoveryMark + " Your last turn never ran: its login hit a wall and Zimmer parked the session until the login pool refilled. " +
		"It has; the message above is delivered now, once.\nRecovery path: login pool refill (" + reason + ")."
	if strings.TrimSpace(parked) == "" {
		return nudge
	}
	return parked + "\n\n" + nudge
}
