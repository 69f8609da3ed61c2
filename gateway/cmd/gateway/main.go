// Command gateway is Zimmer's edge: REST (/api/v1), MCP (/mcp), /healthz and
// /openapi.json on one HTTP server, in front of the services' gRPC APIs.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sync/errgroup"

	"github.com/zimmerhq/zimmer/gateway/internal/config"
	"github.com/zimmerhq/zimmer/gateway/internal/server"
	"github.com/zimmerhq/zimmer/services/platform/debughttp"
	"github.com/zimmerhq/zimmer/services/platform/metrics"
	"github.com/zimmerhq/zimmer/services/platform/slogx"
	"github.com/zimmerhq/zimmer/services/platform/tracing"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		os.Exit(1)
	}
}

// run is main with its dependencies passed in: it serves until ctx is done.
func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	if len(args) > 0 {
		return fmt.Errorf("unexpected arguments %q; usage: gateway (configured by GATEWAY_*, ZIMMER_API_KEYS, ZIMMER_ADMIN_API_KEYS and ZIMMER_INTERNAL_TOKEN)", args)
	}
	cfg, err := config.Load(ctx, getenv)
	if err != nil {
		return err
	}
	logger, err := slogx.New(stdout, "gateway", cfg.LogLevel)
	if err != nil {
		return err
	}
	// Before the server, whose HTTP handler and gRPC clients report
	// through the provider this installs.
	exporter, err := metrics.Start("gateway", cfg.MetricsAddr, logger)
	if err != nil {
		return err
	}
	defer exporter.Close()
	// Spans too: the HTTP handler's and the gRPC clients', which continue
	// as each service's.
	tracer, err := tracing.Start(ctx, "gateway", getenv, logger)
	if err != nil {
		return err
	}
	defer tracer.Close()
	srv, err := server.New(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer srv.Close()
	lis, err := server.Listen(cfg.HTTPAddr)
	if err != nil {
		return err
	}
	g, ctx := errgroup.WithContext(ctx)
	if cfg.DebugAddr != "" {
		debug, err := debughttp.Listen(cfg.DebugAddr, logger)
		if err != nil {
			_ = lis.Close()
			return err
		}
		g.Go(func() error { return debug.Serve(ctx) })
	}
	if exporter != nil {
		g.Go(func() error { return exporter.Serve(ctx) })
	}
	g.Go(func() error { return srv.Serve(ctx, lis) })
	return g.Wait()
}
