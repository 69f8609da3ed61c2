package agent_test

import (
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/runner/internal/agent"
)

// walls returns the walls among events, in order.
func walls(events []agent.Event) []agent.Wall {
	var out []agent.Wall
	for _, e := range events {
		if e.Wall != nil {
			out = append(out, *e.Wall)
		}
	}
	return out
}

// TestClaudeCodeQuotaWallsFromTheFakeCLI replays Claude Code's real wall
// output through the fake CLI: each is a typed wall with its reset, apart
// from the errors a turn can end in.
func TestClaudeCodeQuotaWallsFromTheFakeCLI(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 4, 23, 1, 0, 0, 0, time.UTC)
	rome, err := time.LoadLocation("Europe/Rome")
	require.NoError(t, err)
	for _, tc := range []struct {
		replay string
		kind   agent.WallKind
		reset  time.Time
		known  bool
	}{
		{"claude_wall.jsonl", agent.WallQuota, time.Unix(1755615600, 0).UTC(), true},
		{"claude_wall_clock.jsonl", agent.WallQuota, time.Date(2026, 4, 23, 4, 50, 0, 0, rome), true},
		{"claude_auth.jsonl", agent.WallAuth, time.Time{}, false},
	} {
		t.Run(tc.replay, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			rt := agent.NewClaudeCode(agent.ClaudeCodeOptions{Path: fake(t, "fake-claude")})
			l, err := rt.Prepare(b.turn("hi"))
			require.NoError(t, err)
			res := run(t, rt, l, "FAKE_RECORD="+b.record, "FAKE_REPLAY="+fake(t, tc.replay), "FAKE_EXIT=1")
			require.Equal(t, 1, res.exitCode, res.stderr)
			ws := walls(res.events)
			require.NotEmpty(t, ws, "the wall is recognised")
			for _, w := range ws {
				require.Equal(t, tc.kind, w.Kind)
				reset, known := w.Reset(now)
				require.Equal(t, tc.known, known, w.Message)
				if known {
					require.True(t, tc.reset.Equal(reset), "reset %s, want %s (%s)", reset, tc.reset, w.Message)
				}
			}
			require.True(t, res.events[len(res.events)-1].IsError, "the result still says the turn did nothing")
		})
	}
}

// TestCodexQuotaWallsFromTheFakeCLI replays the Codex CLI's real wall
// output through its fake.
func TestCodexQuotaWallsFromTheFakeCLI(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 4, 20, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		replay string
		kind   agent.WallKind
		reset  time.Time
		known  bool
	}{
		{"codex_wall.jsonl", agent.WallQuota, now.Add(2*24*time.Hour + 17*time.Hour + 14*time.Minute), true},
		{"codex_wall_reset.jsonl", agent.WallQuota, time.Unix(1777936568, 0).UTC(), true},
		{"codex_auth.jsonl", agent.WallAuth, time.Time{}, false},
	} {
		t.Run(tc.replay, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			rt := agent.NewCodex(agent.CodexOptions{Path: fake(t, "fake-codex")})
			l, err := rt.Prepare(b.turn("hi"))
			require.NoError(t, err)
			res := run(t, rt, l, "FAKE_RECORD="+b.record, "FAKE_REPLAY="+fake(t, tc.replay), "FAKE_EXIT=1")
			require.Equal(t, 1, res.exitCode, res.stderr)
			ws := walls(res.events)
			require.Len(t, ws, 2, "the error line and turn.failed both say it")
			for _, w := range ws {
				require.Equal(t, tc.kind, w.Kind)
				reset, known := w.Reset(now)
				require.Equal(t, tc.known, known, w.Message)
				if known {
					require.True(t, tc.reset.Equal(reset), "reset %s, want %s (%s)", reset, tc.reset, w.Message)
				}
			}
		})
	}
}

// TestOrdinaryErrorsAreNoWalls: the recorded error transcripts, and the
// model merely talking about limits, are no walls.
func TestOrdinaryErrorsAreNoWalls(t *testing.T) {
	t.Parallel()
	claude := agent.NewClaudeCode(agent.ClaudeCodeOptions{})
	for _, name := range []string{"claude_error.jsonl", "claude_success.jsonl"} {
		for _, line := range readLines(t, name) {
			require.Nil(t, claude.ParseLine(line).Wall, line)
		}
	}
	codex := agent.NewCodex(agent.CodexOptions{})
	for _, name := range []string{"codex_failed.jsonl", "codex_success.jsonl"} {
		for _, line := range readLines(t, name) {
			require.Nil(t, codex.ParseLine(line).Wall, line)
		}
	}
	talk := `{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Claude AI usage limit reached|1755615600 is what the CLI prints"}]}}`
	require.Nil(t, claude.ParseLine(talk).Wall, "the model's own words are not the CLI's wall")
	allowed := `{"type":"rate_limit_event","rate_limit_info":{"status":"allowed_warning","resetsAt":1755615600,"rateLimitType":"seven_day"}}`
	ev := claude.ParseLine(allowed)
	require.Nil(t, ev.Wall, "a warning is no wall")
	require.Equal(t, agent.KindSystem, ev.Kind)
}

func TestWallResetClocks(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 30, 22, 0, 0, 0, time.UTC)
	recife, _ := time.LoadLocation("America/Recife")
	for _, tc := range []struct {
		text string
		want time.Time
	}{
		{"5-hour limit reached ∙ resets 11pm (UTC)", time.Date(2026, 12, 30, 23, 0, 0, 0, time.UTC)},
		{"You've hit your session limit · resets 9:30pm (UTC)", time.Date(2026, 12, 31, 21, 30, 0, 0, time.UTC)},
		{"You've hit your weekly limit · resets Jan 2 at 4pm (America/Recife)", time.Date(2027, 1, 2, 16, 0, 0, 0, recife)},
		{"Claude usage limit reached. Your limit will reset at 12am (UTC).", time.Date(2026, 12, 31, 0, 0, 0, 0, time.UTC)},
	} {
		ev := agent.NewClaudeCode(agent.ClaudeCodeOptions{}).ParseLine(`{"type":"result","subtype":"success","is_error":true,"result":` + quote(tc.text) + `}`)
		require.NotNil(t, ev.Wall, tc.text)
		got, ok := ev.Wall.Reset(now)
		require.True(t, ok, tc.text)
		require.True(t, tc.want.Equal(got), "%s: got %s, want %s", tc.text, got, tc.want)
	}
	ev := agent.NewClaudeCode(agent.ClaudeCodeOptions{}).ParseLine(`{"type":"result","subtype":"success","is_error":true,"result":"You've hit your limit · resets soon (Mars/Olympus)"}`)
	require.NotNil(t, ev.Wall, "a wall whose reset cannot be read is still a wall")
	_, ok := ev.Wall.Reset(now)
	require.False(t, ok)
}

func quote(s string) string {
	b := []byte{'"'}
	for _, r := range s {
		switch r {
		case '"', '\\':
			b = append(b, '\\', byte(r))
		default:
			b = utf8.AppendRune(b, r)
		}
	}
	return string(append(b, '"'))
}

// FuzzWallLines: no line makes a parser panic, and a wall's reset, when
// known, never lies before the moment the line was read by more than a day
// (an epoch the CLI printed may be past; a clock or a delay never is).
func FuzzWallLines(f *testing.F) {
	for _, name := range []string{"claude_wall.jsonl", "claude_wall_clock.jsonl", "claude_auth.jsonl", "codex_wall.jsonl", "codex_wall_reset.jsonl", "codex_auth.jsonl"} {
		for _, line := range readLines(f, name) {
			f.Add(line)
		}
	}
	f.Add(`{"type":"result","is_error":true,"result":"You've hit your limit · resets Feb 31 at 13pm (Nowhere/x)"}`)
	f.Add(`{"type":"error","message":"Rate limit reached. Please try again in 99999999999 days"}`)
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	claude := agent.NewClaudeCode(agent.ClaudeCodeOptions{})
	codex := agent.NewCodex(agent.CodexOptions{})
	f.Fuzz(func(t *testing.T, line string) {
		for _, ev := range []agent.Event{claude.ParseLine(line), codex.ParseLine(line)} {
			if ev.Wall == nil {
				continue
			}
			reset, ok := ev.Wall.Reset(now)
			if ok && ev.Wall.ResetAt.IsZero() && reset.Before(now.Add(-24*time.Hour)) {
				t.Fatalf("reset %s before now %s for %q", reset, now, line)
			}
		}
	})
}
