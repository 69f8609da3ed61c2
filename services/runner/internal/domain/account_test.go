package domain_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/runner/internal/domain"
)

func TestChooseAccount(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	reset := now.Add(40 * time.Minute)
	target := domain.QuotaTarget{Window: 5 * time.Hour, MaxTurns: 10}
	use := func(name string, recent int, mods ...func(*domain.AccountUse)) domain.AccountUse {
		u := domain.AccountUse{Account: domain.Account{Runtime: "claude_code", Name: name, Targets: []domain.QuotaTarget{target}},
			Recent: recent, Targets: []domain.TargetUse{{Target: target, Turns: recent}}}
		for _, m := range mods {
			m(&u)
		}
		return u
	}
	resting := func(u *domain.AccountUse) { u.RestsUntil, u.WallReason = reset, "usage limit" }
	full := func(at time.Time) func(*domain.AccountUse) {
		return func(u *domain.AccountUse) { u.Targets[0].Turns, u.Targets[0].FreesAt = 10, at }
	}
	for _, tc := range []struct {
		name   string
		pool   []domain.AccountUse
		sticky string
		run    bool
		want   string
		until  time.Time
	}{
		{"least used first", []domain.AccountUse{use("a", 3), use("b", 1), use("c", 2)}, "", true, "b", time.Time{}},
		{"a tie goes by name", []domain.AccountUse{use("b", 1), use("a", 1)}, "", true, "a", time.Time{}},
		{"a resting account is passed over", []domain.AccountUse{use("a", 0, resting), use("b", 5)}, "", true, "b", time.Time{}},
		{"an account at its target is passed over", []domain.AccountUse{use("a", 0, full(now.Add(time.Hour))), use("b", 5)}, "", true, "b", time.Time{}},
		{"a session keeps its account", []domain.AccountUse{use("a", 9), use("b", 0)}, "a", true, "a", time.Time{}},
		{"and waits for it when it rests", []domain.AccountUse{use("a", 0, resting), use("b", 0)}, "a", false, "a", reset},
		{"an account gone from the pool is replaced", []domain.AccountUse{use("b", 4), use("c", 2)}, "a", true, "c", time.Time{}},
		{"a dry pool waits for the first account back",
			[]domain.AccountUse{use("a", 0, resting), use("b", 0, full(now.Add(10*time.Minute)))}, "", false, "b", now.Add(10 * time.Minute)},
		{"a wall and a target: the later frees it", []domain.AccountUse{use("a", 0, resting, full(now.Add(2*time.Hour)))}, "a", false, "a", now.Add(2 * time.Hour)},
		{"the ambient login is one account", []domain.AccountUse{{Account: domain.Account{Runtime: "demo", Name: domain.AmbientAccount}}}, "", true, domain.AmbientAccount, time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := domain.ChooseAccount("claude_code", tc.pool, tc.sticky, now)
			require.Equal(t, tc.run, c.Run, c.Reason)
			require.Equal(t, tc.want, c.Account)
			if !tc.run {
				require.True(t, tc.until.Equal(c.Until), "until %s, want %s", c.Until, tc.until)
				require.NotEmpty(t, c.Reason)
			}
		})
	}
}

func TestUnparkPromptKeepsTheMessageAndNamesThePark(t *testing.T) {
	t.Parallel()
	p := domain.UnparkPrompt("fix the bug", `the demo account "a" hit its usage limit`)
	require.True(t, len(p) > len("fix the bug") && p[:len("fix the bug")] == "fix the bug", "the message first, whole")
	require.Contains(t, p, "Recovery path: login pool refill")
	require.True(t, domain.IsSystemRecovery(p))
}
