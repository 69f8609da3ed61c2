// Package config reads the notification service's configuration:
// NOTIFICATION_GRPC_ADDR, NOTIFICATION_DATABASE_URL, NOTIFICATION_LOG_LEVEL,
// NOTIFICATION_ALERT_DEDUP_WINDOW, NOTIFICATION_LIFECYCLE_ADDR,
// NOTIFICATION_NEEDS_INPUT_DEBOUNCE, NOTIFICATION_QUEUE_ADDR,
// NOTIFICATION_LINEAGE_ADDR, NOTIFICATION_CONSOLE_URL, SLACK_BOT_TOKEN,
// SLACK_API_URL, the sinks' variables (see sink.Config) and the shared
// TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE and ZIMMER_API_KEYS (see
// host.LoadConfig).
package config

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/zimmerhq/zimmer/services/notification/internal/sink"
	"github.com/zimmerhq/zimmer/services/platform/envcfg"
	"github.com/zimmerhq/zimmer/services/platform/grpcclient"
	"github.com/zimmerhq/zimmer/services/platform/host"
)

// Port is the notification service's default gRPC port on 127.0.0.1.
const Port = 9105

// Config is the notification service's configuration.
type Config struct {
	host.Config
	// AlertDedupWindow is NOTIFICATION_ALERT_DEDUP_WINDOW: how long an
	// opened alert absorbs repeats of its dedup key instead of paging again.
	AlertDedupWindow time.Duration
	// Sinks are where pushes and pages go (NOTIFICATION_SINKS,
	// ZIMMER_ALERT_SINKS and each sink's settings).
	Sinks sink.Config
	// LifecycleAddr is NOTIFICATION_LIFECYCLE_ADDR: the lifecycle service a
	// needs-input debounce asks, when it ends, whether the session still
	// waits from its pause (default 127.0.0.1:9101).
	LifecycleAddr string
	// NeedsInputDebounce is NOTIFICATION_NEEDS_INPUT_DEBOUNCE: how long a
	// pause waits for a later one before its push goes out (default 60s,
	// the spec's NEEDS_INPUT_DEBOUNCE).
	NeedsInputDebounce time.Duration
	// QueueAddr and LineageAddr are NOTIFICATION_QUEUE_ADDR (default
	// 127.0.0.1:9103) and NOTIFICATION_LINEAGE_ADDR (127.0.0.1:9102): where
	// a Slack message's follow-up is queued and its human message recorded.
	QueueAddr   string
	LineageAddr string
	// ConsoleURL is NOTIFICATION_CONSOLE_URL: the operator console as people
	// reach it (default http://127.0.0.1:8080/console/), for the session
	// links posted in Slack threads.
	ConsoleURL string
	// SlackBotToken is SLACK_BOT_TOKEN (xoxb-…): with it, a Slack-started
	// session's thread gets its link, its needs_input and failure pushes,
	// and recorded messages their permalinks. A credential: never logged.
	SlackBotToken string
	// SlackAPIURL is SLACK_API_URL: Slack's Web API (default
	// https://slack.com/api/; tests point it at a fake).
	SlackAPIURL string
	// WorkerName, when set, names the Temporal task queue
	// (zimmer-<WorkerName>) the worker polls and the pushes and pages start
	// on, instead of the service's name. Not read from the environment:
	// tests give each service their own, so parallel tests sharing one
	// Temporal server never run each other's activities.
	WorkerName string
	// BeforeStart, when set, is called before each page or push workflow
	// is started, with its id; an error fails that start. Not read from the
	// environment: tests fail a start, to see the re-drive make up for it.
	BeforeStart func(workflowID string) error
}

// Load reads and validates the configuration from getenv.
func Load(ctx context.Context, getenv func(string) string) (Config, error) {
	base, err := host.LoadConfig(ctx, getenv, "notification", Port)
	if err != nil {
		return Config{}, err
	}
	var env struct {
		AlertDedupWindow   time.Duration `env:"NOTIFICATION_ALERT_DEDUP_WINDOW, default=15m"`
		LifecycleAddr      string        `env:"NOTIFICATION_LIFECYCLE_ADDR, default=127.0.0.1:9101"`
		NeedsInputDebounce time.Duration `env:"NOTIFICATION_NEEDS_INPUT_DEBOUNCE, default=60s"`
		QueueAddr          string        `env:"NOTIFICATION_QUEUE_ADDR, default=127.0.0.1:9103"`
		LineageAddr        string        `env:"NOTIFICATION_LINEAGE_ADDR, default=127.0.0.1:9102"`
		ConsoleURL         string        `env:"NOTIFICATION_CONSOLE_URL, default=http://127.0.0.1:8080/console/"`
		SlackBotToken      string        `env:"SLACK_BOT_TOKEN"`
		SlackAPIURL        string        `env:"SLACK_API_URL, default=https://slack.com/api/"`
	}
	if err := envcfg.Load(ctx, getenv, &env); err != nil {
		return Config{}, err
	}
	if env.AlertDedupWindow <= 0 {
		return Config{}, fmt.Errorf("NOTIFICATION_ALERT_DEDUP_WINDOW must be positive, got %s", env.AlertDedupWindow)
	}
	if env.NeedsInputDebounce <= 0 {
		return Config{}, fmt.Errorf("NOTIFICATION_NEEDS_INPUT_DEBOUNCE must be positive, got %s", env.NeedsInputDebounce)
	}
	for name, addr := range map[string]string{
		"NOTIFICATION_LIFECYCLE_ADDR": env.LifecycleAddr, "NOTIFICATION_QUEUE_ADDR": env.QueueAddr, "NOTIFICATION_LINEAGE_ADDR": env.LineageAddr,
	} {
		if _, err := grpcclient.ParseTarget(addr); err != nil {
			return Config{}, fmt.Errorf("%s %w", name, err)
		}
	}
	for name, raw := range map[string]string{"NOTIFICATION_CONSOLE_URL": env.ConsoleURL, "SLACK_API_URL": env.SlackAPIURL} {
		if u, err := url.Parse(raw); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return Config{}, fmt.Errorf("%s %q: want an http(s) URL", name, raw)
		}
	}
	sinks, err := sink.LoadConfig(ctx, getenv)
	if err != nil {
		return Config{}, err
	}
	return Config{
		Config:             base,
		AlertDedupWindow:   env.AlertDedupWindow,
		Sinks:              sinks,
		LifecycleAddr:      env.LifecycleAddr,
		NeedsInputDebounce: env.NeedsInputDebounce,
		QueueAddr:          env.QueueAddr,
		LineageAddr:        env.LineageAddr,
		ConsoleURL:         strings.TrimSuffix(env.ConsoleURL, "/") + "/",
		SlackBotToken:      env.SlackBotToken,
		SlackAPIURL:        strings.TrimSuffix(env.SlackAPIURL, "/") + "/",
	}, nil
}

// LogValue keeps secrets out of logs.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Any("host", c.Config),
		slog.Duration("alert_dedup_window", c.AlertDedupWindow),
		slog.Any("sinks", c.Sinks),
		slog.String("lifecycle_addr", c.LifecycleAddr),
		slog.Duration("needs_input_debounce", c.NeedsInputDebounce),
		slog.String("queue_addr", c.QueueAddr),
		slog.String("lineage_addr", c.LineageAddr),
		slog.String("console_url", c.ConsoleURL),
		slog.Bool("slack_bot_token_set", c.SlackBotToken != ""),
		slog.String("slack_api_url", c.SlackAPIURL),
	)
}
