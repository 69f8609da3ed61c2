package config_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/platform/servicetest"
	"github.com/zimmerhq/zimmer/services/runner/internal/config"
)

func load(vars map[string]string) (config.Config, error) {
	return config.Load(context.Background(), servicetest.Getenv(vars))
}

func TestLoadNode(t *testing.T) {
	t.Parallel()
	host, err := os.Hostname()
	require.NoError(t, err)
	cfg, err := load(map[string]string{"HOME": "/home/z"})
	require.NoError(t, err)
	require.Equal(t, host, cfg.Node, "the default is the hostname")
	require.Equal(t, "127.0.0.1:9104", cfg.GRPCAddr)

	cfg, err = load(map[string]string{"HOME": "/home/z", "RUNNER_NODE": "runner-b.eu_1"})
	require.NoError(t, err)
	require.Equal(t, "runner-b.eu_1", cfg.Node)

	for _, bad := range []string{"-a", "a b", "a/b", "ä", string(make([]byte, 64))} {
		_, err := load(map[string]string{"HOME": "/home/z", "RUNNER_NODE": bad})
		require.ErrorContains(t, err, "RUNNER_NODE", "node %q", bad)
	}
}

func TestLoadWorkspacesDir(t *testing.T) {
	t.Parallel()
	wd, err := os.Getwd()
	require.NoError(t, err)
	tests := []struct {
		name string
		vars map[string]string
		want string
	}{
		{"set", map[string]string{"RUNNER_WORKSPACES_DIR": "/srv/ws", "ZIMMER_DATA_DIR": "/data"}, "/srv/ws"},
		{"set relative", map[string]string{"RUNNER_WORKSPACES_DIR": "ws"}, filepath.Join(wd, "ws")},
		{"in the data folder", map[string]string{"ZIMMER_DATA_DIR": "/data", "XDG_DATA_HOME": "/xdg", "HOME": "/home/z"}, "/data/workspaces"},
		{"in the data folder, relative", map[string]string{"ZIMMER_DATA_DIR": ".data"}, filepath.Join(wd, ".data", "workspaces")},
		{"in XDG_DATA_HOME", map[string]string{"XDG_DATA_HOME": "/xdg", "HOME": "/home/z"}, "/xdg/zimmer/workspaces"},
		{"in HOME", map[string]string{"HOME": "/home/z"}, "/home/z/.local/share/zimmer/workspaces"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.vars["RUNNER_NODE"] = "n"
			cfg, err := load(tc.vars)
			require.NoError(t, err)
			require.Equal(t, tc.want, cfg.WorkspacesDir)
		})
	}
	home, err := os.UserHomeDir()
	require.NoError(t, err)
	cfg, err := load(map[string]string{"RUNNER_NODE": "n"})
	require.NoError(t, err)
	require.Equal(t, filepath.Join(home, ".local", "share", "zimmer", "workspaces"), cfg.WorkspacesDir,
		"without HOME in getenv, the process's home")
}

func TestLoadTurnSettings(t *testing.T) {
	t.Parallel()
	cfg, err := load(map[string]string{"HOME": "/home/z"})
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:9101", cfg.LifecycleAddr)
	require.Equal(t, "127.0.0.1:9103", cfg.QueueAddr)
	require.Equal(t, "127.0.0.1:9102", cfg.LineageAddr)
	require.Equal(t, "http://127.0.0.1:8080/mcp", cfg.MCPURL)
	require.Equal(t, "demo", cfg.Agents.DefaultRuntime)
	require.Equal(t, "zimmer-demo-agent", cfg.Agents.DemoAgentPath)
	require.Equal(t, 3*time.Second, cfg.Ladder.TermGrace, "the spec's graces")
	require.Equal(t, time.Second, cfg.Ladder.KillGrace)
	require.Equal(t, time.Second, cfg.Ladder.SweepGrace)

	cfg, err = load(map[string]string{"HOME": "/home/z", "RUNNER_DEFAULT_RUNTIME": "claude_code",
		"RUNNER_SIGTERM_GRACE": "500ms", "RUNNER_LIFECYCLE_ADDR": "10.0.0.1:9101", "RUNNER_DEMO_AGENT_PATH": "/opt/demo",
		"RUNNER_QUEUE_ADDR": "10.0.0.1:9103"})
	require.NoError(t, err)
	require.Equal(t, "10.0.0.1:9103", cfg.QueueAddr)
	require.Equal(t, "claude_code", cfg.Agents.DefaultRuntime)
	require.Equal(t, 500*time.Millisecond, cfg.Ladder.TermGrace)
	require.Equal(t, "10.0.0.1:9101", cfg.LifecycleAddr)
	require.Equal(t, "/opt/demo", cfg.Agents.DemoAgentPath)
}

func TestLoadQueueNone(t *testing.T) {
	t.Parallel()
	cfg, err := load(map[string]string{"HOME": "/home/z", "RUNNER_QUEUE_ADDR": "none", "RUNNER_LINEAGE_ADDR": "none"})
	require.NoError(t, err)
	require.Empty(t, cfg.QueueAddr, "none: no queue is asked, every clean exit pauses")
	require.Empty(t, cfg.LineageAddr, "none: turns carry their text alone")
}

func TestLoadTranscriptRetention(t *testing.T) {
	t.Parallel()
	cfg, err := load(map[string]string{"HOME": "/home/z"})
	require.NoError(t, err)
	require.Equal(t, 30*24*time.Hour, cfg.TranscriptRetention, "a month by default")
	cfg, err = load(map[string]string{"HOME": "/home/z", "RUNNER_TRANSCRIPT_RETENTION": "2h"})
	require.NoError(t, err)
	require.Equal(t, 2*time.Hour, cfg.TranscriptRetention)
	for _, bad := range []string{"0s", "-1h", "soon"} {
		_, err := load(map[string]string{"HOME": "/home/z", "RUNNER_TRANSCRIPT_RETENTION": bad})
		require.ErrorContains(t, err, "RUNNER_TRANSCRIPT_RETENTION", bad)
	}
}

// RUNNER_TURN_SLOTS is the node's own limit (LC-38): unset or empty is
// none; anything but a whole number from 0 to the bound is refused, naming
// the variable.
func TestLoadNodeTurnSlots(t *testing.T) {
	t.Parallel()
	cfg, err := load(map[string]string{"HOME": "/home/z"})
	require.NoError(t, err)
	require.Nil(t, cfg.TurnSlots)
	for in, want := range map[string]int{"0": 0, " 2 ": 2, "100000": 100000} {
		cfg, err := load(map[string]string{"HOME": "/home/z", "RUNNER_TURN_SLOTS": in})
		require.NoError(t, err, in)
		require.Equal(t, want, *cfg.TurnSlots, in)
	}
	for _, in := range []string{"-1", "two", "1.5", "100001", "99999999999999999999"} {
		_, err := load(map[string]string{"HOME": "/home/z", "RUNNER_TURN_SLOTS": in})
		require.ErrorContains(t, err, "RUNNER_TURN_SLOTS", in)
	}
}
