// Package config reads the lifecycle service's configuration.
package config

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/envcfg"
	"github.com/zimmerhq/zimmer/services/platform/host"
)

// Port is the lifecycle service's default gRPC port.
const Port = 9101

// Config is the lifecycle service's configuration.
type Config struct {
	host.Config
	// RelayPollInterval is LIFECYCLE_RELAY_POLL_INTERVAL: the longest an
	// event waits when a commit notification is missed.
	RelayPollInterval time.Duration
	// TurnRelayConcurrency is LIFECYCLE_TURN_RELAY_CONCURRENCY: how many
	// sessions (triggers) the runner_turns and triggers relays hand over at
	// once, each one's events still in order (default 1: one at a time).
	// Raise it on a cluster whose persistence takes concurrent workflow
	// starts; the dev servers' SQLite file does not (docs/temporal.md).
	TurnRelayConcurrency int
	// TrashRetention is LIFECYCLE_TRASH_RETENTION: how long an archived
	// session stays restorable (the spec's 4 days).
	TrashRetention time.Duration
	// EffectConsumers is LIFECYCLE_EFFECT_CONSUMERS: "subscriber=host:port,…"
	// for each context that consumes lifecycle's events through
	// SessionEventConsumerService: lineage (the session announcements) and
	// the owners of effects (notification, queue, runner). A subscriber not
	// listed keeps its events in the outbox until it is. The default lists
	// lineage at its default address. The triggers subscriber is
	// lifecycle's own, delivered in-process (internal/wake); listing it here
	// is ignored.
	EffectConsumers map[string]string
	// NotificationAddr is LIFECYCLE_NOTIFICATION_ADDR: where alerts about
	// failing effects are raised. Empty: they are logged at error level.
	NotificationAddr string
	// AlertAfterAttempts is LIFECYCLE_ALERT_AFTER_ATTEMPTS: failed deliveries
	// of an alerting effect before it pages.
	AlertAfterAttempts int
	// DeadAfterAttempts is LIFECYCLE_DEAD_AFTER_ATTEMPTS: permanent delivery
	// failures after which an event is parked as dead (a refusal,
	// InvalidArgument, parks it at once; transient failures never do).
	DeadAfterAttempts int
	// OutboxRetention is LIFECYCLE_OUTBOX_RETENTION: how long a delivered
	// event stays in the outbox before the retention schedule deletes it.
	OutboxRetention time.Duration
	// RunnerAddr is LIFECYCLE_RUNNER_ADDR: the runner whose InterruptTurn
	// halts a running session's turn before a pause or an archive commits.
	// "none" (empty here): no runner is asked, where none runs turns.
	RunnerAddr string
	// RunnerTimeout is LIFECYCLE_RUNNER_TIMEOUT: how long a pause or an
	// archive waits for the runner's InterruptTurn (the ladder's graces and
	// the round trips) before a pause answers Unavailable.
	RunnerTimeout time.Duration
	// QueueAddr is LIFECYCLE_QUEUE_ADDR: the queue whose SealQueue guards
	// an archive (ArchiveSession, BulkArchiveSessions). "none" (empty
	// here): archives consult no queue, where none runs.
	QueueAddr string
	// QueueTimeout is LIFECYCLE_QUEUE_TIMEOUT: how long an archive waits
	// for the queue's seal before it answers Unavailable.
	QueueTimeout time.Duration
	// DeliveryRetention is LIFECYCLE_DELIVERY_RETENTION: how long the
	// record of a delivery (DeliverTurn's id) answers its retries before
	// the retention schedule deletes it.
	DeliveryRetention time.Duration
	// StaleSweepInterval is LIFECYCLE_STALE_SWEEP_INTERVAL: how often the
	// lifecycle-stale-sessions schedule archives stale sessions.
	StaleSweepInterval time.Duration
	// StaleAfter is LIFECYCLE_STALE_AFTER: how long a session stays
	// untouched before that sweep archives it (the spec's 7 days).
	StaleAfter time.Duration
	// ElicitationSweepInterval is LIFECYCLE_ELICITATION_SWEEP_INTERVAL: how
	// often the lifecycle-expired-elicitations schedule runs (the spec's 5
	// minutes).
	ElicitationSweepInterval time.Duration
	// ElicitationExpiry is LIFECYCLE_ELICITATION_EXPIRY: how long a block
	// on an elicitation stays before that sweep takes it as stranded.
	ElicitationExpiry time.Duration
	// HeartbeatSweepInterval is LIFECYCLE_HEARTBEAT_SWEEP_INTERVAL: how
	// often the lifecycle-heartbeat schedule looks for sessions due a
	// heartbeat (the spec's 30 s).
	HeartbeatSweepInterval time.Duration
	// GitHub is how the sessions' pull requests are read (LC-34).
	GitHub GitHub
	// TurnSlots is LIFECYCLE_TURN_SLOTS: the fleet-wide limit of
	// concurrently running turns, until an admin sets another at run time
	// (PATCH /api/v1/admin/turn_slots). nil (unset or empty): unlimited.
	TurnSlots *int
	// SpotSweepInterval is LIFECYCLE_SPOT_SWEEP_INTERVAL: how often the
	// lifecycle-spot-queue schedule runs the spot scheduler's backstop pass
	// (a freed slot runs one at once).
	SpotSweepInterval time.Duration
}

// GitHub configures the watches of the sessions' pull requests. Without a
// token nothing is polled: pull requests are still recorded and shown.
type GitHub struct {
	// Token is GITHUB_TOKEN: a token that may read the repositories' pull
	// requests, review comments and check runs. Never logged.
	Token string
	// App is a GitHub App's installation, instead of Token: its
	// installation token is minted and renewed from the App's key.
	App GitHubApp
	// APIURL is GITHUB_API_URL: the REST API's root (default
	// https://api.github.com; a GitHub Enterprise Server's
	// https://HOST/api/v3).
	APIURL string
	// PollInterval is GITHUB_POLL_INTERVAL: how long a watch waits between
	// two readings of its pull request when no webhook delivery asks
	// sooner (the spec's 30 s).
	PollInterval time.Duration
	// Timeout is GITHUB_TIMEOUT: how long one API request may take.
	Timeout time.Duration
}

// Enabled says whether pull requests are watched.
func (g GitHub) Enabled() bool { return g.Token != "" || g.App.Configured() }

// GitHubApp is a GitHub App installation's credentials.
type GitHubApp struct {
	// ID is GITHUB_APP_ID, InstallationID GITHUB_APP_INSTALLATION_ID.
	ID             string
	InstallationID int64
	// PrivateKeyPEM is read from GITHUB_APP_PRIVATE_KEY_FILE (the .pem
	// GitHub gives out). Never logged.
	PrivateKeyPEM []byte
}

// Configured says whether the App's credentials are given.
func (a GitHubApp) Configured() bool { return a.ID != "" }

// Load reads LIFECYCLE_* and the shared variables.
func Load(ctx context.Context, getenv func(string) string) (Config, error) {
	base, err := host.LoadConfig(ctx, getenv, "lifecycle", Port)
	if err != nil {
		return Config{}, err
	}
	var env struct {
		RelayPollInterval time.Duration `env:"LIFECYCLE_RELAY_POLL_INTERVAL, default=1s"`
		TurnRelayConc     int           `env:"LIFECYCLE_TURN_RELAY_CONCURRENCY, default=1"`
		TrashRetention    time.Duration `env:"LIFECYCLE_TRASH_RETENTION, default=96h"`
		EffectConsumers   string        `env:"LIFECYCLE_EFFECT_CONSUMERS, default=lineage=127.0.0.1:9102"`
		NotificationAddr  string        `env:"LIFECYCLE_NOTIFICATION_ADDR, default=127.0.0.1:9105"`
		AlertAfter        int           `env:"LIFECYCLE_ALERT_AFTER_ATTEMPTS, default=3"`
		DeadAfter         int           `env:"LIFECYCLE_DEAD_AFTER_ATTEMPTS, default=20"`
		OutboxRetention   time.Duration `env:"LIFECYCLE_OUTBOX_RETENTION, default=24h"`
		RunnerAddr        string        `env:"LIFECYCLE_RUNNER_ADDR, default=127.0.0.1:9104"`
		RunnerTimeout     time.Duration `env:"LIFECYCLE_RUNNER_TIMEOUT, default=20s"`
		QueueAddr         string        `env:"LIFECYCLE_QUEUE_ADDR, default=127.0.0.1:9103"`
		QueueTimeout      time.Duration `env:"LIFECYCLE_QUEUE_TIMEOUT, default=10s"`
		DeliveryRetention time.Duration `env:"LIFECYCLE_DELIVERY_RETENTION, default=168h"`
		StaleInterval     time.Duration `env:"LIFECYCLE_STALE_SWEEP_INTERVAL, default=1h"`
		StaleAfter        time.Duration `env:"LIFECYCLE_STALE_AFTER, default=168h"`
		ElicitInterval    time.Duration `env:"LIFECYCLE_ELICITATION_SWEEP_INTERVAL, default=5m"`
		ElicitExpiry      time.Duration `env:"LIFECYCLE_ELICITATION_EXPIRY, default=1h"`
		HeartbeatInterval time.Duration `env:"LIFECYCLE_HEARTBEAT_SWEEP_INTERVAL, default=30s"`
		GitHubToken       string        `env:"GITHUB_TOKEN"`
		GitHubAPIURL      string        `env:"GITHUB_API_URL, default=https://api.github.com"`
		GitHubPoll        time.Duration `env:"GITHUB_POLL_INTERVAL, default=30s"`
		GitHubTimeout     time.Duration `env:"GITHUB_TIMEOUT, default=20s"`
		GitHubAppID       string        `env:"GITHUB_APP_ID"`
		GitHubAppInstall  int64         `env:"GITHUB_APP_INSTALLATION_ID"`
		GitHubAppKeyFile  string        `env:"GITHUB_APP_PRIVATE_KEY_FILE"`
		TurnSlots         string        `env:"LIFECYCLE_TURN_SLOTS"`
		SpotInterval      time.Duration `env:"LIFECYCLE_SPOT_SWEEP_INTERVAL, default=30s"`
	}
	if err := envcfg.Load(ctx, getenv, &env); err != nil {
		return Config{}, err
	}
	if env.TrashRetention <= 0 {
		return Config{}, fmt.Errorf("LIFECYCLE_TRASH_RETENTION must be positive, got %s", env.TrashRetention)
	}
	consumers, err := parseConsumers(env.EffectConsumers)
	if err != nil {
		return Config{}, err
	}
	if env.AlertAfter < 1 {
		return Config{}, fmt.Errorf("LIFECYCLE_ALERT_AFTER_ATTEMPTS must be 1 or more, got %d", env.AlertAfter)
	}
	if env.TurnRelayConc < 1 {
		return Config{}, fmt.Errorf("LIFECYCLE_TURN_RELAY_CONCURRENCY must be 1 or more, got %d", env.TurnRelayConc)
	}
	if env.DeadAfter < 1 {
		return Config{}, fmt.Errorf("LIFECYCLE_DEAD_AFTER_ATTEMPTS must be 1 or more, got %d", env.DeadAfter)
	}
	if env.OutboxRetention <= 0 {
		return Config{}, fmt.Errorf("LIFECYCLE_OUTBOX_RETENTION must be positive, got %s", env.OutboxRetention)
	}
	if env.RunnerAddr == "none" {
		env.RunnerAddr = ""
	}
	if env.RunnerTimeout <= 0 {
		return Config{}, fmt.Errorf("LIFECYCLE_RUNNER_TIMEOUT must be positive, got %s", env.RunnerTimeout)
	}
	if env.QueueAddr == "none" {
		env.QueueAddr = ""
	}
	if env.QueueTimeout <= 0 {
		return Config{}, fmt.Errorf("LIFECYCLE_QUEUE_TIMEOUT must be positive, got %s", env.QueueTimeout)
	}
	if env.DeliveryRetention <= 0 {
		return Config{}, fmt.Errorf("LIFECYCLE_DELIVERY_RETENTION must be positive, got %s", env.DeliveryRetention)
	}
	if env.StaleInterval <= 0 {
		return Config{}, fmt.Errorf("LIFECYCLE_STALE_SWEEP_INTERVAL must be positive, got %s", env.StaleInterval)
	}
	if env.StaleAfter <= 0 {
		return Config{}, fmt.Errorf("LIFECYCLE_STALE_AFTER must be positive, got %s", env.StaleAfter)
	}
	if env.ElicitInterval <= 0 {
		return Config{}, fmt.Errorf("LIFECYCLE_ELICITATION_SWEEP_INTERVAL must be positive, got %s", env.ElicitInterval)
	}
	if env.ElicitExpiry <= 0 {
		return Config{}, fmt.Errorf("LIFECYCLE_ELICITATION_EXPIRY must be positive, got %s", env.ElicitExpiry)
	}
	if env.HeartbeatInterval <= 0 {
		return Config{}, fmt.Errorf("LIFECYCLE_HEARTBEAT_SWEEP_INTERVAL must be positive, got %s", env.HeartbeatInterval)
	}
	if env.GitHubPoll <= 0 {
		return Config{}, fmt.Errorf("GITHUB_POLL_INTERVAL must be positive, got %s", env.GitHubPoll)
	}
	if env.GitHubTimeout <= 0 {
		return Config{}, fmt.Errorf("GITHUB_TIMEOUT must be positive, got %s", env.GitHubTimeout)
	}
	if u, err := url.Parse(env.GitHubAPIURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Config{}, fmt.Errorf("GITHUB_API_URL must be an http(s) URL like https://api.github.com, got %q", env.GitHubAPIURL)
	}
	app, err := loadGitHubApp(env.GitHubToken, env.GitHubAppID, env.GitHubAppInstall, env.GitHubAppKeyFile)
	if err != nil {
		return Config{}, err
	}
	if env.SpotInterval <= 0 {
		return Config{}, fmt.Errorf("LIFECYCLE_SPOT_SWEEP_INTERVAL must be positive, got %s", env.SpotInterval)
	}
	slots, err := parseTurnSlots(env.TurnSlots)
	if err != nil {
		return Config{}, err
	}
	return Config{
		GitHub:               GitHub{Token: env.GitHubToken, App: app, APIURL: env.GitHubAPIURL, PollInterval: env.GitHubPoll, Timeout: env.GitHubTimeout},
		Config:               base,
		RelayPollInterval:    env.RelayPollInterval,
		TurnRelayConcurrency: env.TurnRelayConc,
		TrashRetention:       env.TrashRetention,
		EffectConsumers:      consumers,
		NotificationAddr:     env.NotificationAddr,
		AlertAfterAttempts:   env.AlertAfter,
		DeadAfterAttempts:    env.DeadAfter,
		OutboxRetention:      env.OutboxRetention,
		RunnerAddr:           env.RunnerAddr,
		RunnerTimeout:        env.RunnerTimeout,
		QueueAddr:            env.QueueAddr,
		QueueTimeout:         env.QueueTimeout,
		DeliveryRetention:    env.DeliveryRetention,
		StaleSweepInterval:   env.StaleInterval,
		StaleAfter:           env.StaleAfter,

		ElicitationSweepInterval: env.ElicitInterval,
		ElicitationExpiry:        env.ElicitExpiry,
		HeartbeatSweepInterval:   env.HeartbeatInterval,
		TurnSlots:                slots,
		SpotSweepInterval:        env.SpotInterval,
	}, nil
}

// loadGitHubApp reads the App's credentials: all three or none, and not
// with GITHUB_TOKEN as well (which one would be used is then a guess).
func loadGitHubApp(token, id string, installation int64, keyFile string) (GitHubApp, error) {
	if id == "" && installation == 0 && keyFile == "" {
		return GitHubApp{}, nil
	}
	switch {
	case token != "":
		return GitHubApp{}, errors.New("GITHUB_TOKEN and GITHUB_APP_* are both set: give a token, or a GitHub App's id, installation id and key file, not both")
	case id == "" || installation <= 0 || keyFile == "":
		return GitHubApp{}, errors.New("a GitHub App needs GITHUB_APP_ID, GITHUB_APP_INSTALLATION_ID (a positive number) and GITHUB_APP_PRIVATE_KEY_FILE, all three")
	}
	key, err := os.ReadFile(keyFile) //nolint:gosec // the operator's own configured path
	if err != nil {
		return GitHubApp{}, fmt.Errorf("read GITHUB_APP_PRIVATE_KEY_FILE: %w", err)
	}
	return GitHubApp{ID: id, InstallationID: installation, PrivateKeyPEM: key}, nil
}

// parseTurnSlots reads LIFECYCLE_TURN_SLOTS: empty is unlimited.
func parseTurnSlots(v string) (*int, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > domain.MaxTurnSlots {
		return nil, fmt.Errorf("LIFECYCLE_TURN_SLOTS must be a whole number from 0 to %d (or empty for unlimited), got %q", domain.MaxTurnSlots, v)
	}
	return &n, nil
}

func parseConsumers(csv string) (map[string]string, error) {
	out := map[string]string{}
	for _, pair := range strings.Split(csv, ",") {
		if pair = strings.TrimSpace(pair); pair == "" {
			continue
		}
		owner, addr, ok := strings.Cut(pair, "=")
		if !ok || owner == "" || addr == "" {
			return nil, fmt.Errorf("LIFECYCLE_EFFECT_CONSUMERS: %q is not subscriber=host:port", pair)
		}
		out[strings.TrimSpace(owner)] = strings.TrimSpace(addr)
	}
	return out, nil
}

// LogValue keeps secrets out of logs.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Any("host", c.Config),
		slog.Duration("relay_poll_interval", c.RelayPollInterval),
		slog.Int("turn_relay_concurrency", c.TurnRelayConcurrency),
		slog.Duration("trash_retention", c.TrashRetention),
		slog.Any("effect_consumers", c.EffectConsumers),
		slog.String("notification_addr", c.NotificationAddr),
		slog.Int("dead_after_attempts", c.DeadAfterAttempts),
		slog.Duration("outbox_retention", c.OutboxRetention),
		slog.String("runner_addr", c.RunnerAddr),
		slog.Duration("runner_timeout", c.RunnerTimeout),
		slog.String("queue_addr", c.QueueAddr),
		slog.Duration("queue_timeout", c.QueueTimeout),
		slog.Duration("delivery_retention", c.DeliveryRetention),
		slog.Duration("stale_sweep_interval", c.StaleSweepInterval),
		slog.Duration("stale_after", c.StaleAfter),
		slog.Duration("elicitation_sweep_interval", c.ElicitationSweepInterval),
		slog.Duration("elicitation_expiry", c.ElicitationExpiry),
		slog.Duration("heartbeat_sweep_interval", c.HeartbeatSweepInterval),
		// The token's presence, never the token.
		slog.Bool("github_pull_requests_watched", c.GitHub.Enabled()),
		slog.String("github_app_id", c.GitHub.App.ID),
		slog.String("github_api_url", c.GitHub.APIURL),
		slog.Duration("github_poll_interval", c.GitHub.PollInterval),
	)
}
