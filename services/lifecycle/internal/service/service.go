// Package service is the lifecycle composition root: the only package that
// knows every adapter.
package service

import (
	"context"
	"log/slog"
	"strings"

	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/app"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/clients"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/config"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/events"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/grpcapi"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/store"
	"github.com/zimmerhq/zimmer/services/platform/grpcclient"
	"github.com/zimmerhq/zimmer/services/platform/host"
	"github.com/zimmerhq/zimmer/services/platform/inbox"
	"github.com/zimmerhq/zimmer/services/platform/outbox"
	"github.com/zimmerhq/zimmer/services/platform/pgdb"
)

// Name is the service's name: its task queue, log field and database suffix.
const Name = "lifecycle"

// MigrationSets is the lifecycle database's schema, in order.
var MigrationSets = []pgdb.MigrationSet{inbox.Migrations, outbox.Migrations, store.Migrations}

// Service is a runnable lifecycle service.
type Service struct {
	*host.Host
	Sessions app.Sessions
	// LineageRelay delivers session events to lineage; nil when no lineage
	// address is configured.
	LineageRelay *outbox.Relay
}

// New assembles the service; Run starts it.
func New(ctx context.Context, cfg config.Config, logger *slog.Logger) (*Service, error) {
	h, err := host.New(ctx, Name, cfg.Config, logger, MigrationSets...)
	if err != nil {
		return nil, err
	}
	repo := store.NewSessions(h.Pool, events.Encode, domain.SystemClock{}, logger)
	svc := &Service{Host: h, Sessions: app.NewSessions(repo, domain.SystemClock{}, cfg.TrashRetention)}
	grpcapi.NewServer(svc.Sessions, app.ExperimentalSettings{Repo: repo}, logger).Register(h.GRPC.Server)

	if cfg.LineageAddr != "" {
		conn, err := grpcclient.Dial(cfg.LineageAddr, firstKey(cfg.APIKeys))
		if err != nil {
			h.Close()
			return nil, err
		}
		svc.LineageRelay = &outbox.Relay{
			Pool:         h.Pool,
			Subscriber:   events.SubscriberLineage,
			Deliver:      clients.LineageDeliverer{Client: lineagev1.NewLineageServiceClient(conn)}.Deliver,
			Logger:       logger,
			PollInterval: cfg.RelayPollInterval,
		}
		h.Go(func(ctx context.Context) error {
			defer conn.Close()
			return svc.LineageRelay.Run(ctx)
		})
	}
	return svc, nil
}

func firstKey(csv string) string {
	k, _, _ := strings.Cut(csv, ",")
	return strings.TrimSpace(k)
}
