package config_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/runner/internal/config"
)

func TestLoadClones(t *testing.T) {
	t.Parallel()
	cfg, err := load(map[string]string{"RUNNER_NODE": "n", "RUNNER_WORKSPACES_DIR": "/srv/ws"})
	require.NoError(t, err)
	require.Equal(t, config.Clones{
		PreservationDir: "/srv/ws/.preserved", UndoWindow: 2 * time.Minute, ReapInterval: time.Hour, TrashRetention: 96 * time.Hour,
	}, cfg.Clones)

	cfg, err = load(map[string]string{"RUNNER_NODE": "n", "RUNNER_WORKSPACES_DIR": "/srv/ws", "RUNNER_PRESERVATION_DIR": "/keep",
		"RUNNER_CLONE_UNDO_WINDOW": "0s", "RUNNER_TRASH_REAP_INTERVAL": "10m", "RUNNER_TRASH_RETENTION": "24h"})
	require.NoError(t, err)
	require.Equal(t, config.Clones{PreservationDir: "/keep", ReapInterval: 10 * time.Minute, TrashRetention: 24 * time.Hour}, cfg.Clones)

	for name, value := range map[string]string{"RUNNER_CLONE_UNDO_WINDOW": "-1s", "RUNNER_TRASH_REAP_INTERVAL": "0s", "RUNNER_TRASH_RETENTION": "-1h"} {
		_, err := load(map[string]string{"RUNNER_NODE": "n", "RUNNER_WORKSPACES_DIR": "/srv/ws", name: value})
		require.ErrorContains(t, err, name)
	}
}
