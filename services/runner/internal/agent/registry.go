package agent

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Config is the runner's agent configuration, read from the environment by
// the runner's config package (the tags are go-envconfig's).
type Config struct {
	// DefaultRuntime runs sessions created without an agent_runtime.
	DefaultRuntime string `env:"RUNNER_DEFAULT_RUNTIME, default=demo"`

	ClaudePath            string `env:"RUNNER_CLAUDE_PATH, default=claude"`
	ClaudeModel           string `env:"RUNNER_CLAUDE_MODEL"`
	ClaudeSkipPermissions bool   `env:"RUNNER_CLAUDE_SKIP_PERMISSIONS, default=true"`

	CodexPath          string `env:"RUNNER_CODEX_PATH, default=codex"`
	CodexModel         string `env:"RUNNER_CODEX_MODEL"`
	CodexBypassSandbox bool   `env:"RUNNER_CODEX_BYPASS_SANDBOX, default=true"`

	// CommandTemplate is the command runtime's command line; without one
	// that runtime refuses to run.
	CommandTemplate string `env:"RUNNER_COMMAND_TEMPLATE"`

	DemoAgentPath string `env:"RUNNER_DEMO_AGENT_PATH, default=zimmer-demo-agent"`
}

// Registry finds a session's runtime by its agent_runtime.
type Registry struct {
	runtimes map[string]Runtime
	def      string
}

// NewRegistry holds runtimes and names the default; it fails on a duplicate
// name or a default that is not among them.
func NewRegistry(defaultRuntime string, runtimes ...Runtime) (*Registry, error) {
	r := &Registry{runtimes: make(map[string]Runtime, len(runtimes)), def: defaultRuntime}
	for _, rt := range runtimes {
		if _, dup := r.runtimes[rt.Name()]; dup {
			return nil, fmt.Errorf("agent runtime %q registered twice", rt.Name())
		}
		r.runtimes[rt.Name()] = rt
	}
	if _, ok := r.runtimes[defaultRuntime]; !ok {
		return nil, &UnknownRuntimeError{Name: defaultRuntime, Known: r.Names()}
	}
	return r, nil
}

// NewConfiguredRegistry builds the four runtimes from cfg. A malformed
// command template fails here, at start-up; a missing one leaves the command
// runtime out (and so fails only when it is the default).
func NewConfiguredRegistry(cfg Config) (*Registry, error) {
	runtimes := []Runtime{
		NewClaudeCode(ClaudeCodeOptions{Path: cfg.ClaudePath, Model: cfg.ClaudeModel, SkipPermissions: cfg.ClaudeSkipPermissions}),
		NewCodex(CodexOptions{Path: cfg.CodexPath, Model: cfg.CodexModel, BypassSandbox: cfg.CodexBypassSandbox}),
		NewDemo(DemoOptions{Path: cfg.DemoAgentPath}),
	}
	if strings.TrimSpace(cfg.CommandTemplate) != "" {
		cmd, err := NewCommand(cfg.CommandTemplate)
		if err != nil {
			return nil, fmt.Errorf("RUNNER_COMMAND_TEMPLATE: %w", err)
		}
		runtimes = append(runtimes, cmd)
	}
	reg, err := NewRegistry(cfg.DefaultRuntime, runtimes...)
	if err != nil {
		return nil, fmt.Errorf("RUNNER_DEFAULT_RUNTIME: %w", err)
	}
	return reg, nil
}

// Lookup returns the runtime named name, or the default for "".
func (r *Registry) Lookup(name string) (Runtime, error) {
	if name == "" {
		name = r.def
	}
	rt, ok := r.runtimes[name]
	if !ok {
		return nil, &UnknownRuntimeError{Name: name, Known: r.Names()}
	}
	return rt, nil
}

// Default is the default runtime's name.
func (r *Registry) Default() string { return r.def }

// Names lists the registered runtimes, sorted.
func (r *Registry) Names() []string {
	return slices.Sorted(maps.Keys(r.runtimes))
}

// UnknownRuntimeError is an agent_runtime no runtime answers to.
type UnknownRuntimeError struct {
	Name  string
	Known []string
}

func (e *UnknownRuntimeError) Error() string {
	msg := fmt.Sprintf("unknown agent runtime %q (known: %s)", e.Name, strings.Join(e.Known, ", "))
	if e.Name == RuntimeCommand && !slices.Contains(e.Known, RuntimeCommand) {
		msg += "; the command runtime needs RUNNER_COMMAND_TEMPLATE"
	}
	return msg
}
