package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	runneragent "github.com/zimmerhq/zimmer/services/runner/internal/agent"
)

// TestQuotaWallPrintsClaudeCodesWallAndRestsTheLogin: the directive makes
// the real binary print what Claude Code prints at its usage limit, which
// the runner's parser reads as a quota wall with its reset; the login
// then rests (every turn under it hits the wall), and once its quota has
// reset the same prompt of the same conversation goes past the spent line.
func TestQuotaWallPrintsClaudeCodesWallAndRestsTheLogin(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := []string{configDirVar + "=" + dir}
	const conversation = "0b7c54d1-3f0a-4c8e-9b21-5a6d7e8f9012"
	prompt := "@demo quota-wall 1h\nthe parked message"
	parser := runneragent.NewDemo(runneragent.DemoOptions{})
	before := time.Now()

	r := startAgent(t, prompt, runOpts{env: env, args: []string{"--session-id", conversation}})
	exit := r.wait(t)
	require.Equal(t, 1, exit.Code, "the CLI exits 1 at its usage limit")
	var wall *runneragent.Wall
	for _, raw := range r.raw {
		if ev := parser.ParseLine(raw); ev.Wall != nil {
			wall = ev.Wall
		}
	}
	require.NotNil(t, wall, "the runner reads the wall")
	require.Equal(t, runneragent.WallQuota, wall.Kind)
	reset, ok := wall.Reset(time.Now())
	require.True(t, ok)
	require.WithinDuration(t, before.Add(time.Hour), reset, 5*time.Second)
	require.NotContains(t, texts(r.lines()), "the parked message", "nothing of the prompt ran")

	// Resting: another prompt under the same login hits the wall too.
	r = startAgent(t, "something else", runOpts{env: env})
	require.Equal(t, 1, r.wait(t).Code)
	require.Empty(t, texts(r.lines())[1:], "only the wall's own message")

	// The quota resets: the parked message, delivered again, goes past its
	// spent wall.
	var st loginState
	b, err := os.ReadFile(filepath.Join(dir, "login.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &st))
	st.RestsUntil = time.Now().Add(-time.Second).Unix()
	b, err = json.Marshal(st)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "login.json"), b, 0o600))

	r = startAgent(t, prompt, runOpts{env: env, args: []string{"--session-id", conversation, "--resume"}})
	require.Equal(t, 0, r.wait(t).Code)
	require.Equal(t, []string{"the parked message"}, texts(r.lines()))
}

func TestQuotaWallNeedsAPositiveDuration(t *testing.T) {
	t.Parallel()
	_, err := parseScript("@demo quota-wall 0s")
	require.ErrorContains(t, err, "positive duration")
	_, err = parseScript("@demo quota-wall soon")
	require.ErrorContains(t, err, "quota-wall")
}
