// Package config reads the gateway's configuration from the environment.
package config

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/zimmerhq/zimmer/gateway/internal/console"
	"github.com/zimmerhq/zimmer/gateway/internal/testboundary"
	"github.com/zimmerhq/zimmer/services/platform/apikey"
	"github.com/zimmerhq/zimmer/services/platform/debughttp"
	"github.com/zimmerhq/zimmer/services/platform/envcfg"
	"github.com/zimmerhq/zimmer/services/platform/grpcclient"
	"github.com/zimmerhq/zimmer/services/platform/metrics"
)

// Config is the gateway's configuration.
type Config struct {
	// HTTPAddr is GATEWAY_HTTP_ADDR: where REST, MCP, /healthz and
	// /openapi.json are served.
	HTTPAddr string `env:"GATEWAY_HTTP_ADDR, default=127.0.0.1:8080"`
	// DebugAddr is GATEWAY_DEBUG_ADDR: a loopback address serving
	// net/http/pprof on a listener of its own, never on HTTPAddr
	// (debughttp.ParseAddr); empty, none is opened.
	DebugAddr string `env:"GATEWAY_DEBUG_ADDR"`
	// MetricsAddr is GATEWAY_METRICS_ADDR: where Prometheus scrapes the
	// gateway's metrics, on a listener of its own (metrics.ParseAddr);
	// empty, none are kept.
	MetricsAddr string `env:"GATEWAY_METRICS_ADDR"`
	// LogLevel is GATEWAY_LOG_LEVEL: debug, info, warn or error.
	LogLevel string `env:"GATEWAY_LOG_LEVEL, default=info"`

	// The services' gRPC addresses (GATEWAY_<SERVICE>_ADDR).
	LifecycleAddr    string `env:"GATEWAY_LIFECYCLE_ADDR, default=127.0.0.1:9101"`
	LineageAddr      string `env:"GATEWAY_LINEAGE_ADDR, default=127.0.0.1:9102"`
	QueueAddr        string `env:"GATEWAY_QUEUE_ADDR, default=127.0.0.1:9103"`
	RunnerAddr       string `env:"GATEWAY_RUNNER_ADDR, default=127.0.0.1:9104"`
	NotificationAddr string `env:"GATEWAY_NOTIFICATION_ADDR, default=127.0.0.1:9105"`

	// APIKeys is ZIMMER_API_KEYS: comma-separated operator keys, the public
	// API. AdminAPIKeys is ZIMMER_ADMIN_API_KEYS: admin keys, also the
	// admin methods (transition, hard delete, session credentials). With
	// neither set the gateway is open (development only).
	APIKeys      string `env:"ZIMMER_API_KEYS"`
	AdminAPIKeys string `env:"ZIMMER_ADMIN_API_KEYS"`
	// InternalToken is ZIMMER_INTERNAL_TOKEN: the services' identity, which
	// the gateway presents on every call, forwarding its client's
	// principal. Never accepted from an HTTP client.
	InternalToken string `env:"ZIMMER_INTERNAL_TOKEN"`

	// MCPSessionTTL is GATEWAY_MCP_SESSION_TTL: an MCP session ends after
	// this long without a request, and its client must initialize again.
	MCPSessionTTL time.Duration `env:"GATEWAY_MCP_SESSION_TTL, default=1h"`
	// MCPMaxSessions is GATEWAY_MCP_MAX_SESSIONS: at most this many MCP
	// sessions are open; opening one more ends the one idle longest.
	MCPMaxSessions int `env:"GATEWAY_MCP_MAX_SESSIONS, default=1000"`

	// SupervisorUser and SupervisorPassword are ZIMMER_SUPERVISOR_USER and
	// ZIMMER_SUPERVISOR_PASSWORD: the HTTP Basic credentials of the
	// operator-only /supervisor surface (the users roster), separate from
	// the fleet keys. Unset, the surface answers 503.
	SupervisorUser     string `env:"ZIMMER_SUPERVISOR_USER"`
	SupervisorPassword string `env:"ZIMMER_SUPERVISOR_PASSWORD"`

	// AdminUser is ZIMMER_ADMIN_USER: the roster key of the one human the
	// console (/console/) speaks for, and the user name they sign in
	// with. Lineage reads the same variable, with the same default, to
	// attribute what the console records.
	AdminUser string `env:"ZIMMER_ADMIN_USER, default=tadasant"`
	// ConsolePasswordHash is ZIMMER_CONSOLE_PASSWORD_HASH: the bcrypt hash
	// of the console's password. Unset, the console answers 503.
	ConsolePasswordHash string `env:"ZIMMER_CONSOLE_PASSWORD_HASH"`

	// TestBoundaryToken is GATEWAY_TEST_BOUNDARY_TOKEN: it enables the
	// test-only human boundary (package testboundary) and is the token it
	// demands. Only a gateway built with the testboundary tag accepts it.
	TestBoundaryToken string `env:"GATEWAY_TEST_BOUNDARY_TOKEN"`

	// SlackSigningSecret is SLACK_SIGNING_SECRET, the Slack app's signing
	// secret: with it, POST /slack/events verifies and accepts Slack's
	// events; without it, the route does not exist (404). Never logged.
	SlackSigningSecret string `env:"SLACK_SIGNING_SECRET"`

	// GitHubWebhookSecret is GITHUB_WEBHOOK_SECRET, the GitHub webhook's
	// secret: with it, POST /github/webhook verifies deliveries and has the
	// watches of the pull requests they name read them now; without it,
	// the route does not exist (404) and the watches poll. Never logged.
	GitHubWebhookSecret string `env:"GITHUB_WEBHOOK_SECRET"`
}

// Service is one backend the gateway dials.
type Service struct {
	Name string
	Addr string
}

// Load reads the configuration through getenv and validates it.
func Load(ctx context.Context, getenv func(string) string) (Config, error) {
	var c Config
	if err := envcfg.Load(ctx, getenv, &c); err != nil {
		return Config{}, err
	}
	debugAddr, err := debughttp.ParseAddr("GATEWAY_DEBUG_ADDR", c.DebugAddr)
	if err != nil {
		return Config{}, err
	}
	c.DebugAddr = debugAddr
	if c.MetricsAddr, err = metrics.ParseAddr("GATEWAY_METRICS_ADDR", c.MetricsAddr); err != nil {
		return Config{}, err
	}
	return c, c.Validate()
}

// Services lists the backends in a stable order.
func (c Config) Services() []Service {
	return []Service{
		{"lifecycle", c.LifecycleAddr},
		{"lineage", c.LineageAddr},
		{"queue", c.QueueAddr},
		{"runner", c.RunnerAddr},
		{"notification", c.NotificationAddr},
	}
}

// Validate fails fast on values that cannot work.
func (c Config) Validate() error {
	if _, _, err := net.SplitHostPort(c.HTTPAddr); err != nil {
		return fmt.Errorf("GATEWAY_HTTP_ADDR %q: want host:port, e.g. 127.0.0.1:8080", c.HTTPAddr)
	}
	if c.MCPSessionTTL < time.Second {
		return fmt.Errorf("GATEWAY_MCP_SESSION_TTL %s: want a duration of at least 1s, e.g. 1h", c.MCPSessionTTL)
	}
	if c.MCPMaxSessions < 1 {
		return fmt.Errorf("GATEWAY_MCP_MAX_SESSIONS %d: want at least 1, e.g. 1000", c.MCPMaxSessions)
	}
	if (c.SupervisorUser == "") != (c.SupervisorPassword == "") {
		return fmt.Errorf("ZIMMER_SUPERVISOR_USER and ZIMMER_SUPERVISOR_PASSWORD: set both, or neither to disable /supervisor")
	}
	if err := testboundary.Validate(c.TestBoundaryToken); err != nil {
		return err
	}
	if err := console.ValidatePasswordHash(c.ConsolePasswordHash); err != nil {
		return err
	}
	for _, s := range c.Services() {
		if _, err := grpcclient.ParseTarget(s.Addr); err != nil {
			return fmt.Errorf("GATEWAY_%s_ADDR %w", strings.ToUpper(s.Name), err)
		}
	}
	return nil
}

// LogValue keeps the keys out of logs.
func (c Config) LogValue() slog.Value {
	attrs := []slog.Attr{
		slog.String("http_addr", c.HTTPAddr),
		slog.String("log_level", c.LogLevel),
		slog.String("debug_addr", c.DebugAddr),
		slog.String("metrics_addr", c.MetricsAddr),
	}
	for _, s := range c.Services() {
		attrs = append(attrs, slog.String(s.Name+"_addr", s.Addr))
	}
	attrs = append(attrs, slog.Duration("mcp_session_ttl", c.MCPSessionTTL), slog.Int("mcp_max_sessions", c.MCPMaxSessions))
	attrs = append(attrs, slog.Bool("api_keys_set", apikey.Parse(c.APIKeys).Enabled()),
		slog.Bool("admin_api_keys_set", apikey.Parse(c.AdminAPIKeys).Enabled()),
		slog.Bool("internal_token_set", c.InternalToken != ""))
	attrs = append(attrs, slog.Bool("supervisor_enabled", c.SupervisorUser != "" && c.SupervisorPassword != ""),
		slog.Bool("test_boundary_enabled", c.TestBoundaryToken != ""),
		slog.String("admin_user", c.AdminUser), slog.Bool("console_enabled", c.ConsolePasswordHash != ""),
		slog.Bool("slack_events_enabled", c.SlackSigningSecret != ""),
		slog.Bool("github_webhook_enabled", c.GitHubWebhookSecret != ""))
	return slog.GroupValue(attrs...)
}
