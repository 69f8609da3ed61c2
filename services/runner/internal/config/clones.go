package config

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/zimmerhq/zimmer/services/platform/envcfg"
)

// Clones configures a clone's life after its session's archive: where
// preserved work is kept, how long an archive can be undone before the
// clone is touched, and how often the trash reaper runs.
type Clones struct {
	// PreservationDir is RUNNER_PRESERVATION_DIR, absolute: the node's
	// preservation store, <dir>/<session id>/ holding an archived session's
	// unpushed work (default <RUNNER_WORKSPACES_DIR>/.preserved).
	PreservationDir string
	// UndoWindow is RUNNER_CLONE_UNDO_WINDOW (2m): how long after an
	// archive the clone is left as it is.
	UndoWindow time.Duration
	// ReapInterval is RUNNER_TRASH_REAP_INTERVAL (1h): how often the
	// runner-trash-reaper schedule runs.
	ReapInterval time.Duration
	// TrashRetention is RUNNER_TRASH_RETENTION (96h, the spec's 4 days):
	// the deadline the stale-clone backstop gives a clone whose session
	// holds none, after its archive.
	TrashRetention time.Duration
}

func loadClones(ctx context.Context, getenv func(string) string, workspacesDir string) (Clones, error) {
	var env struct {
		PreservationDir string        `env:"RUNNER_PRESERVATION_DIR"`
		UndoWindow      time.Duration `env:"RUNNER_CLONE_UNDO_WINDOW, default=2m"`
		ReapInterval    time.Duration `env:"RUNNER_TRASH_REAP_INTERVAL, default=1h"`
		TrashRetention  time.Duration `env:"RUNNER_TRASH_RETENTION, default=96h"`
	}
	if err := envcfg.Load(ctx, getenv, &env); err != nil {
		return Clones{}, err
	}
	c := Clones{PreservationDir: env.PreservationDir, UndoWindow: env.UndoWindow, ReapInterval: env.ReapInterval,
		TrashRetention: env.TrashRetention}
	if c.UndoWindow < 0 {
		return Clones{}, fmt.Errorf("RUNNER_CLONE_UNDO_WINDOW must not be negative, got %s", c.UndoWindow)
	}
	for name, d := range map[string]time.Duration{"RUNNER_TRASH_REAP_INTERVAL": c.ReapInterval, "RUNNER_TRASH_RETENTION": c.TrashRetention} {
		if d <= 0 {
			return Clones{}, fmt.Errorf("%s must be positive, got %s", name, d)
		}
	}
	if c.PreservationDir == "" {
		c.PreservationDir = filepath.Join(workspacesDir, ".preserved")
	}
	abs, err := filepath.Abs(c.PreservationDir)
	if err != nil {
		return Clones{}, fmt.Errorf("RUNNER_PRESERVATION_DIR %q: %w", c.PreservationDir, err)
	}
	c.PreservationDir = abs
	return c, nil
}
