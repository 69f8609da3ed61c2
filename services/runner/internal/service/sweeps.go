package service

import (
	"context"
	"fmt"
	"path/filepath"

	"go.temporal.io/sdk/worker"
	"google.golang.org/grpc"

	"github.com/zimmerhq/zimmer/services/runner/internal/clients"
	"github.com/zimmerhq/zimmer/services/runner/internal/config"
	"github.com/zimmerhq/zimmer/services/runner/internal/process"
	"github.com/zimmerhq/zimmer/services/runner/internal/sweep"
	rw "github.com/zimmerhq/zimmer/services/runner/internal/workflow"
)

// ProcessRecordDir is where a node records the agent processes it starts
// (process.Options.RecordDir): <RUNNER_WORKSPACES_DIR>/.state/processes,
// beside the sessions' state folders, which are named by number.
func ProcessRecordDir(cfg config.Config) string {
	return filepath.Join(cfg.WorkspacesDir, ".state", "processes")
}

// takeOverNode makes this incarnation the node's only one before it serves
// the node's task queue: it becomes the child subreaper of the agents it
// starts, and kills every agent process its previous incarnation left
// running (a runner killed -9 leaves its agents, each in its own group).
// A lost turn's StopTurn on the node's queue proves its process gone only
// because of this: no incarnation serves the queue before the kill.
func (s *Service) takeOverNode(ctx context.Context, cfg config.Config) error {
	if err := process.SetChildSubreaper(); err != nil {
		// Orphaned grandchildren go to init instead: the group sweeps still
		// reach them while they keep their group.
		s.Logger.Warn("the runner is not the subreaper of its agents' orphans", "error", err)
	}
	killed, err := process.KillRecorded(ctx, ProcessRecordDir(cfg), s.Logger)
	if len(killed) > 0 {
		s.Logger.Info("killed the agent processes the node's previous incarnation left", "count", len(killed))
	}
	if err != nil {
		return fmt.Errorf("kill the processes the node's previous incarnation left: %w", err)
	}
	return nil
}

// runSweeps sets up the runner's sweeps (package sweep): the orphan sweep
// on the shared queue, asking lifecycle over conn and handing requests
// through starter, and this node's zombie reaper on its own queue (node).
func (s *Service) runSweeps(ctx context.Context, cfg config.Config, conn grpc.ClientConnInterface,
	starter rw.Starter, node worker.Registry,
) error {
	orphans := sweep.OrphanedSessions{
		Lifecycle: clients.NewLifecycle(conn), Workflows: sweep.TemporalWorkflows{Client: s.Temporal},
		Turns: starter, Logger: s.Logger,
	}
	if err := sweep.SetupOrphanedSessions(ctx, s.Temporal, s.Worker, Name, orphans,
		cfg.OrphanGrace, cfg.OrphanSweepInterval); err != nil {
		return err
	}
	// Zombies are reaped as children end (SIGCHLD): an agent's orphan at
	// once, anything else once it is old enough to be no waiter's. The
	// schedule's passes remain a backstop.
	s.Go(func(ctx context.Context) error {
		process.RunZombieReaper(ctx, func(reaped []process.Reaped, err error) {
			for _, r := range reaped {
				s.Logger.InfoContext(ctx, "reaped a zombie no one was waiting for",
					"pid", r.Pid, "exit_status", r.Status.ExitStatus(), "signal", r.Status.Signal().String())
			}
			if err != nil {
				s.Logger.WarnContext(ctx, "reap zombies", "error", err)
			}
		})
		return nil
	})
	reaper := sweep.ZombieReaper{Reap: process.ReapZombies, Logger: s.Logger}
	return sweep.SetupZombieReaper(ctx, s.Temporal, node, cfg.Node, reaper, cfg.ZombieReapInterval)
}
