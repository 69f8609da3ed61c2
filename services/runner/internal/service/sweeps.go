package service

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"go.temporal.io/sdk/worker"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

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

// sweepNodeCredentials revokes the turn credentials the node's earlier
// incarnations minted: none of their turns runs any more (takeOverNode
// killed what they left), and a turn's end may not have revoked its own
// (its runner stopped with lifecycle already down, say). This incarnation's
// credentials are kept, so the node serves its queue meanwhile; lifecycle
// is asked until it answers.
func (s *Service) sweepNodeCredentials(ctx context.Context, lifecycle rw.Lifecycle, node, incarnation string) {
	for wait := 200 * time.Millisecond; ; wait = min(2*wait, 30*time.Second) {
		n, err := lifecycle.SweepNodeCredentials(ctx, node, incarnation)
		if err == nil {
			if n > 0 {
				s.Logger.Info("revoked the turn credentials the node's previous incarnations left", "count", n)
			}
			return
		}
		if code := status.Code(err); code == codes.InvalidArgument || code == codes.PermissionDenied {
			s.Logger.Error("lifecycle refused to revoke the turn credentials the node's previous incarnations left; "+
				"their expiry still closes them", "error", err)
			return
		}
		s.Logger.Warn("revoke the turn credentials the node's previous incarnations left; asking lifecycle again", "error", err, "retry_in", wait)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
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
	reaper := sweep.ZombieReaper{Reap: process.ReapZombies, Logger: s.Logger}
	return sweep.SetupZombieReaper(ctx, s.Temporal, node, cfg.Node, reaper, cfg.ZombieReapInterval)
}
