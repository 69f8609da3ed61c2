package service

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/zimmerhq/zimmer/services/runner/internal/agent"
	"github.com/zimmerhq/zimmer/services/runner/internal/clients"
	"github.com/zimmerhq/zimmer/services/runner/internal/config"
	"github.com/zimmerhq/zimmer/services/runner/internal/grpcapi"
	"github.com/zimmerhq/zimmer/services/runner/internal/process"
	"github.com/zimmerhq/zimmer/services/runner/internal/store"
	rw "github.com/zimmerhq/zimmer/services/runner/internal/workflow"
	"github.com/zimmerhq/zimmer/services/runner/internal/workspace"
)

// NewNode is New plus the turns: the session workflows and the shared
// activities on zimmer-runner, this node's PrepareWorkspace and RunTurn on
// zimmer-runner-<node>, and the consumer of lifecycle's turn requests
// (runner_turns). Without Temporal (component tests) it is New.
func NewNode(ctx context.Context, cfg config.Config, logger *slog.Logger) (*Service, error) {
	svc, err := New(ctx, cfg.Config, logger)
	if err != nil {
		return nil, err
	}
	if svc.Temporal == nil {
		return svc, nil
	}
	if err := svc.runTurns(cfg); err != nil {
		svc.Close()
		return nil, err
	}
	return svc, nil
}

func (s *Service) runTurns(cfg config.Config) error {
	runtimes, err := agent.NewConfiguredRegistry(cfg.Agents)
	if err != nil {
		return err
	}
	preparer, err := workspace.NewPreparer(store.NewWorkspaces(s.Pool), workspace.Options{Node: cfg.Node, Dir: cfg.WorkspacesDir})
	if err != nil {
		return err
	}
	conn, err := s.Dial(cfg.LifecycleAddr)
	if err != nil {
		return fmt.Errorf("dial lifecycle at %s: %w", cfg.LifecycleAddr, err)
	}
	acts := &rw.Activities{
		Lifecycle:   clients.NewLifecycle(conn),
		Preparer:    preparer,
		Runtimes:    runtimes,
		StateDir:    filepath.Join(cfg.WorkspacesDir, ".state"),
		MCPURL:      cfg.MCPURL,
		Signaler:    s.Temporal,
		Transcripts: s.Transcripts,
		Drain:       rw.NoDrain{},
		Process:     process.Options{Ladder: cfg.Ladder},
		Logger:      s.Logger,
	}
	s.Worker.RegisterWorkflowWithOptions(rw.Session, workflow.RegisterOptions{Name: rw.WorkflowName})
	acts.RegisterShared(s.Worker)

	node := worker.New(s.Temporal, rw.NodeTaskQueue(cfg.Node), worker.Options{})
	acts.RegisterNode(node)
	s.Go(func(ctx context.Context) error {
		if err := node.Start(); err != nil {
			return fmt.Errorf("start the worker on %s: %w", rw.NodeTaskQueue(cfg.Node), err)
		}
		<-ctx.Done()
		node.Stop()
		return nil
	})

	grpcapi.NewConsumer(s.Temporal, cfg.Node, runtimes.Default(), s.Logger).Register(s.GRPC.Server)
	return nil
}
