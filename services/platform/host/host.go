// Package host is the composition every service shares: configuration, the
// Postgres pool and its migrations, the gRPC server, the Temporal worker and
// background loops, started together and stopped together.
package host

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zimmerhq/zimmer/services/platform/apikey"
	"github.com/zimmerhq/zimmer/services/platform/debughttp"
	"github.com/zimmerhq/zimmer/services/platform/envcfg"
	"github.com/zimmerhq/zimmer/services/platform/grpcclient"
	"github.com/zimmerhq/zimmer/services/platform/grpcserver"
	"github.com/zimmerhq/zimmer/services/platform/metrics"
	"github.com/zimmerhq/zimmer/services/platform/pgdb"
	"github.com/zimmerhq/zimmer/services/platform/temporalx"
	"github.com/zimmerhq/zimmer/services/platform/tracing"
)

// Config is what every service reads from its environment.
type Config struct {
	// GRPCAddr is <SVC>_GRPC_ADDR; "127.0.0.1:0" picks a free port.
	GRPCAddr string
	// DatabaseURL is <SVC>_DATABASE_URL: the service's own database.
	DatabaseURL string
	// LogLevel is <SVC>_LOG_LEVEL.
	LogLevel string
	// TemporalAddress is TEMPORAL_ADDRESS; empty runs no worker (component
	// tests), which the environment cannot ask for: make run needs one.
	TemporalAddress   string
	TemporalNamespace string
	// APIKeys is ZIMMER_API_KEYS: operator keys, the public API.
	APIKeys string
	// AdminAPIKeys is ZIMMER_ADMIN_API_KEYS: admin keys, the public and the
	// admin methods (docs/security.md).
	AdminAPIKeys string
	// InternalToken is ZIMMER_INTERNAL_TOKEN: the service identity this
	// service presents on its calls to the others and accepts on their
	// calls to it. Never given to a client.
	InternalToken string
	// DebugAddr is <SVC>_DEBUG_ADDR: a loopback address serving
	// net/http/pprof (debughttp.ParseAddr); empty, none is opened.
	DebugAddr string
	// MetricsAddr is <SVC>_METRICS_ADDR: where Prometheus scrapes the
	// service's metrics (metrics.ParseAddr); empty, none are kept.
	MetricsAddr string
	// ShutdownGrace bounds a graceful stop.
	ShutdownGrace time.Duration
}

// LoadConfig reads service's configuration (prefix <SERVICE>_), defaulting
// to the local stack of `make run`: gRPC on 127.0.0.1:<port>, database
// zimmer_<service> on the local cluster, Temporal on 127.0.0.1:7233.
func LoadConfig(ctx context.Context, getenv func(string) string, service string, port int) (Config, error) {
	prefix := strings.ToUpper(service) + "_"
	var env struct {
		GRPCAddr          string `env:"GRPC_ADDR"`
		DatabaseURL       string `env:"DATABASE_URL"`
		LogLevel          string `env:"LOG_LEVEL, default=info"`
		TemporalAddress   string `env:"TEMPORAL_ADDRESS, default=127.0.0.1:7233"`
		TemporalNamespace string `env:"TEMPORAL_NAMESPACE, default=default"`
		APIKeys           string `env:"ZIMMER_API_KEYS"`
		AdminAPIKeys      string `env:"ZIMMER_ADMIN_API_KEYS"`
		InternalToken     string `env:"ZIMMER_INTERNAL_TOKEN"`
		DebugAddr         string `env:"DEBUG_ADDR"`
		MetricsAddr       string `env:"METRICS_ADDR"`
	}
	prefixed := func(k string) string {
		switch k {
		case "TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "ZIMMER_API_KEYS", "ZIMMER_ADMIN_API_KEYS", "ZIMMER_INTERNAL_TOKEN":
			return getenv(k)
		}
		return getenv(prefix + k)
	}
	if err := envcfg.Load(ctx, prefixed, &env); err != nil {
		return Config{}, err
	}
	debugAddr, err := debughttp.ParseAddr(prefix+"DEBUG_ADDR", env.DebugAddr)
	if err != nil {
		return Config{}, err
	}
	metricsAddr, err := metrics.ParseAddr(prefix+"METRICS_ADDR", env.MetricsAddr)
	if err != nil {
		return Config{}, err
	}
	cfg := Config{
		DebugAddr:         debugAddr,
		MetricsAddr:       metricsAddr,
		GRPCAddr:          env.GRPCAddr,
		DatabaseURL:       env.DatabaseURL,
		LogLevel:          env.LogLevel,
		TemporalAddress:   env.TemporalAddress,
		TemporalNamespace: env.TemporalNamespace,
		APIKeys:           env.APIKeys,
		AdminAPIKeys:      env.AdminAPIKeys,
		InternalToken:     env.InternalToken,
		ShutdownGrace:     10 * time.Second,
	}
	if cfg.GRPCAddr == "" {
		cfg.GRPCAddr = fmt.Sprintf("127.0.0.1:%d", port)
	}
	if cfg.DatabaseURL == "" {
		cfg.DatabaseURL = fmt.Sprintf("postgres://postgres@127.0.0.1:5432/zimmer_%s?sslmode=disable", service)
	}
	return cfg, cfg.Validate()
}

// Validate fails fast on values that cannot work.
func (c Config) Validate() error {
	if _, _, err := net.SplitHostPort(c.GRPCAddr); err != nil {
		return fmt.Errorf("gRPC address %q: want host:port", c.GRPCAddr)
	}
	if u, err := url.Parse(c.DatabaseURL); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return fmt.Errorf("database URL: want postgres://user@host:port/db")
	}
	return nil
}

// LogValue keeps secrets out of logs.
func (c Config) LogValue() slog.Value {
	dbURL := c.DatabaseURL
	if u, err := url.Parse(c.DatabaseURL); err == nil {
		dbURL = u.Redacted()
	}
	return slog.GroupValue(
		slog.String("grpc_addr", c.GRPCAddr),
		slog.String("database_url", dbURL),
		slog.String("temporal_address", c.TemporalAddress),
		slog.String("temporal_namespace", c.TemporalNamespace),
		slog.Bool("api_keys_set", c.APIKeys != ""),
		slog.Bool("admin_api_keys_set", c.AdminAPIKeys != ""),
		slog.Bool("internal_token_set", c.InternalToken != ""),
		slog.String("debug_addr", c.DebugAddr),
		slog.String("metrics_addr", c.MetricsAddr),
	)
}

// Host holds a running service's shared parts.
type Host struct {
	Name     string
	Config   Config
	Logger   *slog.Logger
	Pool     *pgxpool.Pool
	GRPC     *grpcserver.Server
	Temporal client.Client // nil without a Temporal address
	Worker   worker.Worker // nil without a Temporal address

	listener net.Listener
	debug    *debughttp.Server
	metrics  *metrics.Exporter
	tracing  *tracing.Provider
	probe    *pgdb.Probe
	loops    []func(context.Context) error
	conns    []*grpc.ClientConn
}

// New opens the database, applies migrations, listens for gRPC and, when
// Temporal is configured, connects and prepares the worker. Register the
// service's gRPC server, workflows and loops on the result, then Run it.
func New(ctx context.Context, name string, cfg Config, logger *slog.Logger, migrations ...pgdb.MigrationSet) (_ *Host, err error) {
	if cfg.ShutdownGrace <= 0 {
		cfg.ShutdownGrace = 10 * time.Second
	}
	h := &Host{Name: name, Config: cfg, Logger: logger}
	defer func() {
		if err != nil {
			h.Close()
		}
	}()
	if err := pgdb.Migrate(ctx, cfg.DatabaseURL, migrations...); err != nil {
		return nil, err
	}
	if h.Pool, err = pgdb.Open(ctx, cfg.DatabaseURL); err != nil {
		return nil, err
	}
	if h.listener, err = grpcserver.Listen(cfg.GRPCAddr); err != nil {
		return nil, err
	}
	if cfg.DebugAddr != "" {
		if h.debug, err = debughttp.Listen(cfg.DebugAddr, logger); err != nil {
			return nil, err
		}
	}
	// Before the gRPC server and the Temporal client, whose instruments
	// report through the provider this installs.
	if h.metrics, err = metrics.Start(name, cfg.MetricsAddr, logger); err != nil {
		return nil, err
	}
	// Likewise for spans: the gRPC stats handlers and the Temporal
	// interceptor use the global provider.
	if h.tracing, err = tracing.Start(ctx, name, os.Getenv, logger); err != nil {
		return nil, err
	}
	h.GRPC = grpcserver.New(logger, cfg.Auth())
	// Every call needs the database: without it the service is not
	// serving, whatever else still runs.
	if h.probe, err = pgdb.NewProbe(cfg.DatabaseURL); err != nil {
		return nil, err
	}
	h.GRPC.AddProbe(grpcserver.Probe{Name: "database", Check: h.probe.Check})
	if cfg.InternalToken == "" {
		logger.Warn("ZIMMER_INTERNAL_TOKEN is empty: no caller can prove it is a Zimmer service, so this service's " +
			"internal methods refuse everyone and its calls to other services' internal methods are refused")
	}
	if cfg.TemporalAddress != "" {
		traced, terr := h.tracing.TemporalInterceptor()
		if terr != nil {
			return nil, terr
		}
		if h.Temporal, err = temporalx.Dial(ctx, cfg.TemporalAddress, cfg.TemporalNamespace, logger,
			temporalx.WithMetrics(h.metrics.TemporalHandler(logger)), temporalx.WithInterceptor(traced)); err != nil {
			return nil, err
		}
		h.Worker = temporalx.NewWorker(h.Temporal, name)
	}
	logger.Info("service ready to run", "config", cfg)
	return h, nil
}

// Auth is who the service's gRPC server lets in.
func (c Config) Auth() grpcserver.Auth {
	return grpcserver.Auth{
		Operators:     apikey.Parse(c.APIKeys),
		Admins:        apikey.Parse(c.AdminAPIKeys),
		InternalToken: c.InternalToken,
	}
}

// Dial connects to another Zimmer service at addr as this service (its name
// and ZIMMER_INTERNAL_TOKEN on every call). The connection closes with the
// host.
func (h *Host) Dial(addr string) (*grpc.ClientConn, error) {
	conn, err := grpcclient.Dial(addr, grpcclient.AsService(h.Name, h.Config.InternalToken))
	if err != nil {
		return nil, err
	}
	h.conns = append(h.conns, conn)
	return conn, nil
}

// MetricsAddr is where the metrics are served ("" when they are off).
func (h *Host) MetricsAddr() string { return h.metrics.Addr() }

// Addr is the address the gRPC server listens on.
func (h *Host) Addr() string { return h.listener.Addr().String() }

// Go adds a background loop that runs for the life of the service; its error
// (other than at shutdown) stops the service.
func (h *Host) Go(loop func(context.Context) error) { h.loops = append(h.loops, loop) }

// Run serves until ctx is done or a part fails, then stops every part.
func (h *Host) Run(ctx context.Context) error {
	g, ctx := errgroup.WithContext(ctx)
	if h.Worker != nil {
		if err := h.Worker.Start(); err != nil {
			return fmt.Errorf("start Temporal worker on %s: %w", temporalx.TaskQueue(h.Name), err)
		}
		g.Go(func() error {
			<-ctx.Done()
			h.Worker.Stop()
			return nil
		})
	}
	for _, loop := range h.loops {
		g.Go(func() error { return loop(ctx) })
	}
	if h.debug != nil {
		g.Go(func() error { return h.debug.Serve(ctx) })
	}
	if h.metrics != nil {
		g.Go(func() error { return h.metrics.Serve(ctx) })
	}
	g.Go(func() error { return h.GRPC.Serve(ctx, h.listener, h.Config.ShutdownGrace) })
	return g.Wait()
}

// Close releases the pool and the Temporal client. Call it after Run returns
// (or when New's caller gives up before running).
func (h *Host) Close() {
	for _, c := range h.conns {
		_ = c.Close()
	}
	h.conns = nil
	if h.Temporal != nil {
		h.Temporal.Close()
	}
	if h.Pool != nil {
		h.Pool.Close()
	}
	if h.probe != nil {
		h.probe.Close()
	}
	if h.listener != nil {
		_ = h.listener.Close()
	}
	if h.debug != nil {
		h.debug.Close()
	}
	h.metrics.Close()
	h.tracing.Close()
}
