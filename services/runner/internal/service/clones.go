package service

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/worker"
	"google.golang.org/grpc"

	"github.com/zimmerhq/zimmer/services/runner/internal/clients"
	"github.com/zimmerhq/zimmer/services/runner/internal/clone"
	"github.com/zimmerhq/zimmer/services/runner/internal/config"
	"github.com/zimmerhq/zimmer/services/runner/internal/grpcapi"
	"github.com/zimmerhq/zimmer/services/runner/internal/store"
	"github.com/zimmerhq/zimmer/services/runner/internal/summary"
	"github.com/zimmerhq/zimmer/services/runner/internal/transcript"
	"github.com/zimmerhq/zimmer/services/runner/internal/workspace"
)

// runClones adds the clone's life after archive: the clone workflows and
// their shared activities on zimmer-runner, the disk's activities on this
// node's worker, the status summaries' workflows and activities on
// zimmer-runner, the effects of subscriber "runner" on the consumer,
// GetClone on the API, and the runner-trash-reaper schedule.
func (s *Service) runClones(ctx context.Context, cfg config.Config, preparer *workspace.Preparer,
	lifecycle grpc.ClientConnInterface, node worker.Worker, consumer *grpcapi.Consumer) error {
	keeper, err := workspace.NewKeeper(preparer, cfg.Clones.PreservationDir)
	if err != nil {
		return err
	}
	workspaces := store.NewWorkspaces(s.Pool)
	acts := &clone.Activities{
		Keeper: keeper, Clones: workspaces, Sessions: clients.NewLifecycle(lifecycle), Starter: s.Temporal,
		TrashRetention: cfg.Clones.TrashRetention, Logger: s.Logger,
	}
	clone.RegisterWorkflows(s.Worker)
	acts.RegisterShared(s.Worker)
	acts.RegisterNode(node)
	summaries := &summary.Activities{Lifecycle: clients.NewLifecycle(lifecycle), Transcripts: store.NewTranscripts(s.Pool, transcript.DefaultLimits)}
	summaries.Register(s.Worker)
	effects := grpcapi.NewEffects(s.Temporal, cfg.Clones.UndoWindow, s.Logger)
	if cfg.StatusSummaries {
		effects.WithStatusSummaries()
	}
	consumer.WithEffects(effects)
	s.API.WithClones(grpcapi.Clones{Store: workspaces, Logger: s.Logger})
	if err := clone.Schedule(ctx, s.Temporal, cfg.Clones.ReapInterval); err != nil {
		return fmt.Errorf("schedule the trash reaper: %w", err)
	}
	return nil
}
