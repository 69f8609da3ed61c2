// Package config reads the runner service's configuration:
// RUNNER_GRPC_ADDR, RUNNER_DATABASE_URL, RUNNER_LOG_LEVEL and the shared
// TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE and ZIMMER_API_KEYS (see
// host.LoadConfig), plus the runner's own RUNNER_NODE,
// RUNNER_WORKSPACES_DIR, the services it calls (RUNNER_LIFECYCLE_ADDR,
// RUNNER_QUEUE_ADDR, RUNNER_LINEAGE_ADDR) and its turns' settings.
package config

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/zimmerhq/zimmer/services/platform/envcfg"
	"github.com/zimmerhq/zimmer/services/platform/host"
	"github.com/zimmerhq/zimmer/services/runner/internal/agent"
	"github.com/zimmerhq/zimmer/services/runner/internal/process"
)

// Port is the runner service's default gRPC port on 127.0.0.1.
const Port = 9104

// Config is the runner service's configuration.
type Config struct {
	host.Config
	// Node is RUNNER_NODE (default: the hostname): this runner's name among
	// the runner nodes. A session's clone lives on one node, its turns run
	// on that node's task queue (zimmer-runner-<node>) and its workspace row
	// names the node, so the name must stay the same across restarts.
	Node string
	// WorkspacesDir is RUNNER_WORKSPACES_DIR, absolute: where the sessions'
	// clones live, one directory per session. Default:
	// $ZIMMER_DATA_DIR/workspaces (the data folder of `make run`), else
	// $XDG_DATA_HOME/zimmer/workspaces, else
	// ~/.local/share/zimmer/workspaces. Data, not cache: a clone can hold
	// the only copy of a session's uncommitted work.
	WorkspacesDir string
	// LifecycleAddr is RUNNER_LIFECYCLE_ADDR: the lifecycle service the
	// turns report to (default 127.0.0.1:9101).
	LifecycleAddr string
	// QueueAddr is RUNNER_QUEUE_ADDR: the queue service a turn's clean exit
	// asks for the next queued message (DeliverNextMessage; default
	// 127.0.0.1:9103). "none" (empty here): no queue is asked and every
	// clean exit pauses.
	QueueAddr string
	// LineageAddr is RUNNER_LINEAGE_ADDR: the lineage service that renders
	// each turn's <session-notes>, <session-hierarchy> and <human-messages>
	// blocks (default 127.0.0.1:9102). "none" (empty here): turns carry
	// their text alone, no goal and no blocks — a test rig's setting,
	// never a deployment's.
	LineageAddr string
	// MCPURL is RUNNER_MCP_URL: the gateway's MCP endpoint the agents call
	// with their session credential (default http://127.0.0.1:8080/mcp).
	MCPURL string
	// Agents configures the runtimes (RUNNER_DEFAULT_RUNTIME, RUNNER_CLAUDE_*,
	// RUNNER_CODEX_*, RUNNER_COMMAND_TEMPLATE, RUNNER_DEMO_AGENT_PATH).
	Agents agent.Config
	// Ladder is the termination ladder's graces: RUNNER_SIGTERM_GRACE (3s),
	// RUNNER_SIGKILL_GRACE (1s), RUNNER_SWEEP_GRACE (1s).
	Ladder process.Ladder
	// TranscriptRetention is RUNNER_TRANSCRIPT_RETENTION (720h): how long a
	// finished turn's transcript is kept before the runner-transcripts-
	// retention schedule deletes it.
	TranscriptRetention time.Duration
	// NodeDeadAfter is how long a node may leave a lost turn's StopTurn
	// unserved before the session's workflow declares it dead.
	NodeDeadAfter time.Duration
	// OrphanSweepInterval is RUNNER_ORPHAN_SWEEP_INTERVAL (5m), how often
	// runner-orphaned-sessions runs; OrphanGrace is RUNNER_ORPHAN_GRACE
	// (2m), how long a session must have been settled to be looked at.
	OrphanSweepInterval, OrphanGrace time.Duration
	// ZombieReapInterval is RUNNER_ZOMBIE_REAP_INTERVAL (5m), how often
	// runner-zombie-reaper-<node> runs.
	ZombieReapInterval time.Duration
	// Clones configures the clone's life after archive (clones.go).
	Clones Clones
	// StatusSummaries is RUNNER_STATUS_SUMMARIES (true): whether a pause
	// or failure that added transcript forks the session to write its
	// status summary (package summary). Each fork is a turn of the
	// session's runtime, so a model call: false turns them off.
	StatusSummaries bool

	// Inference is RUNNER_INFERENCE: who infers a paused session's title
	// and category — "session" (default: the session's own runtime in
	// one-shot mode; none for the command runtime), "off", or a runtime's
	// name to ask that one for every session (e.g. "demo").
	Inference string

	// TurnSlots is RUNNER_TURN_SLOTS: this node's own limit of
	// concurrently running turns, within the fleet's (LIFECYCLE_TURN_SLOTS,
	// LC-36); the node tells lifecycle when it starts (LC-38). nil (unset or
	// empty): the fleet's limit alone.
	TurnSlots *int
	// Accounts are the runtimes' login pools, from RUNNER_ACCOUNTS_FILE
	// (accounts.go); none configured for a runtime, its ambient login is
	// its one account.
	Accounts []Account
}

// nodeName is what a node may be called: it becomes part of a Temporal task
// queue name and of log lines, so plain hostname characters only.
var nodeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// Load reads and validates the configuration from getenv.
func Load(ctx context.Context, getenv func(string) string) (Config, error) {
	base, err := host.LoadConfig(ctx, getenv, "runner", Port)
	if err != nil {
		return Config{}, err
	}
	var env struct {
		Node          string        `env:"RUNNER_NODE"`
		WorkspacesDir string        `env:"RUNNER_WORKSPACES_DIR"`
		LifecycleAddr string        `env:"RUNNER_LIFECYCLE_ADDR, default=127.0.0.1:9101"`
		QueueAddr     string        `env:"RUNNER_QUEUE_ADDR, default=127.0.0.1:9103"`
		LineageAddr   string        `env:"RUNNER_LINEAGE_ADDR, default=127.0.0.1:9102"`
		MCPURL        string        `env:"RUNNER_MCP_URL, default=http://127.0.0.1:8080/mcp"`
		TermGrace     time.Duration `env:"RUNNER_SIGTERM_GRACE, default=3s"`
		KillGrace     time.Duration `env:"RUNNER_SIGKILL_GRACE, default=1s"`
		SweepGrace    time.Duration `env:"RUNNER_SWEEP_GRACE, default=1s"`
		// NodeDeadAfter: a node that leaves a lost turn's StopTurn unserved
		// this long is declared dead and its session failed (naming it).
		NodeDeadAfter time.Duration `env:"RUNNER_NODE_DEAD_AFTER, default=5m"`
		OrphanSweep   time.Duration `env:"RUNNER_ORPHAN_SWEEP_INTERVAL, default=5m"`
		OrphanGrace   time.Duration `env:"RUNNER_ORPHAN_GRACE, default=2m"`
		ZombieReap    time.Duration `env:"RUNNER_ZOMBIE_REAP_INTERVAL, default=5m"`
		Transcripts   time.Duration `env:"RUNNER_TRANSCRIPT_RETENTION, default=720h"`
		Summaries     bool          `env:"RUNNER_STATUS_SUMMARIES, default=true"`
		Inference     string        `env:"RUNNER_INFERENCE, default=session"`
		AccountsFile  string        `env:"RUNNER_ACCOUNTS_FILE"`
		TurnSlots     string        `env:"RUNNER_TURN_SLOTS"`
		Agents        agent.Config
	}
	if err := envcfg.Load(ctx, getenv, &env); err != nil {
		return Config{}, err
	}
	if env.QueueAddr == "none" {
		env.QueueAddr = ""
	}
	if env.LineageAddr == "none" {
		env.LineageAddr = ""
	}
	cfg := Config{
		Config: base, Node: env.Node, WorkspacesDir: env.WorkspacesDir,
		LifecycleAddr: env.LifecycleAddr, QueueAddr: env.QueueAddr, LineageAddr: env.LineageAddr, MCPURL: env.MCPURL, Agents: env.Agents,
		Ladder:              process.Ladder{TermGrace: env.TermGrace, KillGrace: env.KillGrace, SweepGrace: env.SweepGrace},
		TranscriptRetention: env.Transcripts, NodeDeadAfter: env.NodeDeadAfter,
		OrphanSweepInterval: env.OrphanSweep, OrphanGrace: env.OrphanGrace, ZombieReapInterval: env.ZombieReap,
		StatusSummaries: env.Summaries,
		Inference:       env.Inference,
	}
	for name, d := range map[string]time.Duration{"RUNNER_ORPHAN_SWEEP_INTERVAL": cfg.OrphanSweepInterval,
		"RUNNER_ORPHAN_GRACE": cfg.OrphanGrace, "RUNNER_ZOMBIE_REAP_INTERVAL": cfg.ZombieReapInterval} {
		if d <= 0 {
			return Config{}, fmt.Errorf("%s must be positive, got %s", name, d)
		}
	}
	if cfg.NodeDeadAfter <= 0 {
		return Config{}, fmt.Errorf("RUNNER_NODE_DEAD_AFTER must be positive, got %s", cfg.NodeDeadAfter)
	}
	if cfg.TranscriptRetention <= 0 {
		return Config{}, fmt.Errorf("RUNNER_TRANSCRIPT_RETENTION must be positive, got %s", cfg.TranscriptRetention)
	}
	if cfg.Node == "" {
		if cfg.Node, err = os.Hostname(); err != nil {
			return Config{}, fmt.Errorf("RUNNER_NODE is unset and the hostname cannot be read: %w", err)
		}
	}
	if !nodeName.MatchString(cfg.Node) {
		return Config{}, fmt.Errorf("RUNNER_NODE %q: want 1 to 63 letters, digits, '.', '_' or '-', starting with a letter or digit", cfg.Node)
	}
	if cfg.WorkspacesDir == "" {
		if cfg.WorkspacesDir, err = defaultWorkspacesDir(getenv); err != nil {
			return Config{}, err
		}
	}
	if cfg.WorkspacesDir, err = filepath.Abs(cfg.WorkspacesDir); err != nil {
		return Config{}, fmt.Errorf("RUNNER_WORKSPACES_DIR %q: %w", cfg.WorkspacesDir, err)
	}
	if cfg.Clones, err = loadClones(ctx, getenv, cfg.WorkspacesDir); err != nil {
		return Config{}, err
	}
	if cfg.Accounts, err = LoadAccounts(env.AccountsFile); err != nil {
		return Config{}, err
	}
	if cfg.TurnSlots, err = parseNodeTurnSlots(env.TurnSlots); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// MaxNodeTurnSlots bounds RUNNER_TURN_SLOTS, as lifecycle bounds the
// fleet's limit.
const MaxNodeTurnSlots = 100_000

// parseNodeTurnSlots reads RUNNER_TURN_SLOTS: empty is no limit of the
// node's own.
func parseNodeTurnSlots(v string) (*int, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > MaxNodeTurnSlots {
		return nil, fmt.Errorf("RUNNER_TURN_SLOTS must be a whole number from 0 to %d (or empty: no limit of this node's own), got %q",
			MaxNodeTurnSlots, v)
	}
	return &n, nil
}

func defaultWorkspacesDir(getenv func(string) string) (string, error) {
	switch {
	case getenv("ZIMMER_DATA_DIR") != "":
		return filepath.Join(getenv("ZIMMER_DATA_DIR"), "workspaces"), nil
	case getenv("XDG_DATA_HOME") != "":
		return filepath.Join(getenv("XDG_DATA_HOME"), "zimmer", "workspaces"), nil
	case getenv("HOME") != "":
		return filepath.Join(getenv("HOME"), ".local", "share", "zimmer", "workspaces"), nil
	}
	// The process's own home: getenv may be a narrow view of it.
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("RUNNER_WORKSPACES_DIR is unset and neither ZIMMER_DATA_DIR, XDG_DATA_HOME nor a home "+
			"directory says where the data folder is: %w", err)
	}
	return filepath.Join(home, ".local", "share", "zimmer", "workspaces"), nil
}

// LogValue keeps secrets out of logs.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Any("host", c.Config),
		slog.String("node", c.Node),
		slog.String("workspaces_dir", c.WorkspacesDir),
		slog.String("preservation_dir", c.Clones.PreservationDir),
		slog.String("lifecycle_addr", c.LifecycleAddr),
		slog.String("queue_addr", c.QueueAddr),
		slog.String("lineage_addr", c.LineageAddr),
		slog.String("mcp_url", c.MCPURL),
		slog.String("default_runtime", c.Agents.DefaultRuntime),
		slog.String("inference", c.Inference),
		slog.Any("accounts", c.Accounts),
	)
}
