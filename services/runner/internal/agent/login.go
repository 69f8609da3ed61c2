package agent

import (
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
)

// Login is one account a runtime's CLI can run under: what its process
// needs in its environment to be logged in as that account. The values
// are secrets (API keys, OAuth tokens): they reach the agent's
// environment and nothing else — never a log line, a workflow's history
// or an API answer (LogValue names the variables only).
type Login struct {
	Runtime string
	Name    string
	// ConfigDir is the account's configuration directory, given to the CLI
	// in its runtime's variable (ConfigDirVar): where Claude Code and
	// Codex keep the login and the conversations it resumes.
	ConfigDir string
	// Env is added to the agent's environment as is.
	Env Secrets
}

// Secrets are environment variables whose values are secret: however a
// Login is printed, logged or encoded, only their names show.
type Secrets map[string]string

// Names lists the variables, sorted.
func (s Secrets) Names() []string {
	names := make([]string, 0, len(s))
	for k := range s {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// String implements fmt.Stringer: the names only.
func (s Secrets) String() string { return "[" + strings.Join(s.Names(), " ") + "]" }

// GoString implements fmt.GoStringer (%#v): the names only.
func (s Secrets) GoString() string { return s.String() }

// LogValue implements slog.LogValuer: the names only.
func (s Secrets) LogValue() slog.Value { return slog.AnyValue(s.Names()) }

// MarshalJSON encodes the names only.
func (s Secrets) MarshalJSON() ([]byte, error) { return json.Marshal(s.Names()) }

// ConfigDirVar is the environment variable a runtime's CLI reads its
// configuration directory from; "" for a runtime without one (command:
// give it Env instead).
func ConfigDirVar(runtime string) string {
	switch runtime {
	case RuntimeClaudeCode:
		return "CLAUDE_CONFIG_DIR"
	case RuntimeCodex:
		return "CODEX_HOME"
	case RuntimeDemo:
		return "ZIMMER_DEMO_CONFIG_DIR"
	}
	return ""
}

// Environ is the login's KEY=VALUE pairs, in a fixed order, for
// Launch.Env: its configuration directory, then Env.
func (l Login) Environ() []string {
	var env []string
	if v := ConfigDirVar(l.Runtime); v != "" && l.ConfigDir != "" {
		env = append(env, v+"="+l.ConfigDir)
	}
	for _, k := range l.Env.Names() {
		env = append(env, k+"="+l.Env[k])
	}
	return env
}

// LogValue names the login and the variables it sets, never their
// values.
func (l Login) LogValue() slog.Value {
	return slog.GroupValue(slog.String("runtime", l.Runtime), slog.String("name", l.Name),
		slog.Bool("config_dir", l.ConfigDir != ""), slog.Any("env", l.Env.Names()))
}
