package config_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

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
