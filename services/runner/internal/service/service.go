// Package service is the runner's composition root, the only package that
// knows every adapter; main and the component tests build the service here.
package service

import (
	"context"
	"log/slog"

	"github.com/zimmerhq/zimmer/services/platform/host"
	"github.com/zimmerhq/zimmer/services/platform/inbox"
	"github.com/zimmerhq/zimmer/services/platform/outbox"
	"github.com/zimmerhq/zimmer/services/platform/pgdb"
	"github.com/zimmerhq/zimmer/services/runner/internal/grpcapi"
	"github.com/zimmerhq/zimmer/services/runner/internal/store"
	"github.com/zimmerhq/zimmer/services/runner/internal/transcript"
)

// Name is the service's name: its log field, Temporal task queue
// (zimmer-runner) and default database (zimmer_runner).
const Name = "runner"

// MigrationSets is the runner database's schema, in the order it is applied.
var MigrationSets = []pgdb.MigrationSet{inbox.Migrations, outbox.Migrations, store.Migrations}

// Service is a runnable runner service: the platform host (Run, Close, Addr,
// and the Pool and Temporal client tests reach for) with the runner's
// adapters registered on it.
type Service struct {
	*host.Host
	// Transcripts is the Sink a turn appends its lines to; the transcript
	// methods' followers in this process hear of each line at once.
	Transcripts transcript.Recorder
	// API is the RunnerService registered on the gRPC server; NewNode adds
	// the methods that need the turns (InterruptTurn) before it serves.
	API *grpcapi.Server
}

// New migrates the database, opens the pool, listens for gRPC, connects the
// Temporal worker when cfg names a server, and registers the runner API. Run
// starts it; Close releases it.
func New(ctx context.Context, cfg host.Config, logger *slog.Logger) (*Service, error) {
	h, err := host.New(ctx, Name, cfg, logger, MigrationSets...)
	if err != nil {
		return nil, err
	}
	transcripts := store.NewTranscripts(h.Pool, transcript.DefaultLimits)
	notifier, stopping := transcript.NewNotifier(), make(chan struct{})
	h.Go(func(ctx context.Context) error { <-ctx.Done(); close(stopping); return nil })
	api := grpcapi.NewServer().
		WithTranscripts(grpcapi.Transcripts{Store: transcripts, Notifier: notifier, Logger: logger, Stopping: stopping}).
		WithCosts(grpcapi.Costs{Store: store.NewCosts(h.Pool)})
	api.Register(h.GRPC.Server)
	return &Service{Host: h, Transcripts: transcript.Recorder{Store: transcripts, Notifier: notifier}, API: api}, nil
}
