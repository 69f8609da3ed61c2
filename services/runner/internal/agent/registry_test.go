package agent_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/platform/envcfg"
	"github.com/zimmerhq/zimmer/services/runner/internal/agent"
)

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	var cfg agent.Config
	require.NoError(t, envcfg.Load(t.Context(), getenv(nil), &cfg))
	require.Equal(t, agent.Config{
		DefaultRuntime:        "demo",
		ClaudePath:            "claude",
		ClaudeSkipPermissions: true,
		CodexPath:             "codex",
		CodexBypassSandbox:    true,
		DemoAgentPath:         "zimmer-demo-agent",
	}, cfg)

	cfg = agent.Config{}
	require.NoError(t, envcfg.Load(t.Context(), getenv(map[string]string{
		"RUNNER_DEFAULT_RUNTIME":         "claude_code",
		"RUNNER_CLAUDE_PATH":             "/opt/claude/bin/claude",
		"RUNNER_CLAUDE_MODEL":            "opus",
		"RUNNER_CLAUDE_SKIP_PERMISSIONS": "false",
		"RUNNER_CODEX_BYPASS_SANDBOX":    "false",
		"RUNNER_COMMAND_TEMPLATE":        "agent {prompt_file}",
	}), &cfg))
	require.Equal(t, "claude_code", cfg.DefaultRuntime)
	require.Equal(t, "/opt/claude/bin/claude", cfg.ClaudePath)
	require.Equal(t, "opus", cfg.ClaudeModel)
	require.False(t, cfg.ClaudeSkipPermissions)
	require.False(t, cfg.CodexBypassSandbox)
	require.Equal(t, "agent {prompt_file}", cfg.CommandTemplate)
}

func getenv(vars map[string]string) func(string) string {
	return func(key string) string { return vars[key] }
}

func TestConfiguredRegistry(t *testing.T) {
	t.Parallel()
	cfg := agent.Config{DefaultRuntime: "demo", ClaudePath: "claude", CodexPath: "codex", DemoAgentPath: "zimmer-demo-agent"}

	reg, err := agent.NewConfiguredRegistry(cfg)
	require.NoError(t, err)
	require.Equal(t, []string{"claude_code", "codex", "demo"}, reg.Names())
	require.Equal(t, "demo", reg.Default())
	rt, err := reg.Lookup("")
	require.NoError(t, err)
	require.Equal(t, "demo", rt.Name())
	for _, name := range reg.Names() {
		rt, err := reg.Lookup(name)
		require.NoError(t, err)
		require.Equal(t, name, rt.Name())
	}

	_, err = reg.Lookup("command")
	var unknown *agent.UnknownRuntimeError
	require.ErrorAs(t, err, &unknown)
	require.Equal(t, `unknown agent runtime "command" (known: claude_code, codex, demo); the command runtime needs RUNNER_COMMAND_TEMPLATE`, err.Error())
	_, err = reg.Lookup("gemini")
	require.EqualError(t, err, `unknown agent runtime "gemini" (known: claude_code, codex, demo)`)

	cfg.CommandTemplate = "agent {prompt_file}"
	cfg.DefaultRuntime = "command"
	reg, err = agent.NewConfiguredRegistry(cfg)
	require.NoError(t, err)
	rt, err = reg.Lookup("")
	require.NoError(t, err)
	require.Equal(t, "command", rt.Name())

	cfg.CommandTemplate = "agent $HOME"
	_, err = agent.NewConfiguredRegistry(cfg)
	require.ErrorContains(t, err, "RUNNER_COMMAND_TEMPLATE")

	cfg.CommandTemplate = ""
	_, err = agent.NewConfiguredRegistry(cfg)
	require.ErrorContains(t, err, "RUNNER_DEFAULT_RUNTIME")
	require.ErrorContains(t, err, "needs RUNNER_COMMAND_TEMPLATE")

	cfg.DefaultRuntime = "claude"
	_, err = agent.NewConfiguredRegistry(cfg)
	require.ErrorAs(t, err, &unknown)
	require.Equal(t, "claude", unknown.Name)
}

func TestRegistryRefusesDuplicates(t *testing.T) {
	t.Parallel()
	_, err := agent.NewRegistry("codex", agent.NewCodex(agent.CodexOptions{}), agent.NewCodex(agent.CodexOptions{}))
	require.EqualError(t, err, `agent runtime "codex" registered twice`)
}

func TestEnvironScrubsTheRunnersSecrets(t *testing.T) {
	t.Parallel()
	l := agent.Launch{Env: []string{"ZIMMER_SESSION_ID=42", "ZIMMER_MCP_TOKEN=" + testToken}}
	got := l.Environ([]string{
		"PATH=/usr/bin",
		"HOME=/home/runner",
		"ANTHROPIC_API_KEY=sk-ant-kept",
		"ZIMMER_API_KEYS=" + operatorKey,
		"ZIMMER_ADMIN_API_KEYS=" + operatorKey,
		"ZIMMER_INTERNAL_TOKEN=" + operatorKey,
		"ZIMMER_MCP_TOKEN=a-stale-one",
		"RUNNER_DATABASE_URL=postgres://secret",
		"LIFECYCLE_DATABASE_URL=postgres://secret",
		"GATEWAY_ADDR=127.0.0.1:8080",
		"MALFORMED",
	})
	require.Equal(t, []string{
		"PATH=/usr/bin",
		"HOME=/home/runner",
		"ANTHROPIC_API_KEY=sk-ant-kept",
		"MALFORMED",
		"ZIMMER_SESSION_ID=42",
		"ZIMMER_MCP_TOKEN=" + testToken,
	}, got)
}

func TestWriteFilesFailsLoudly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	blocker := filepath.Join(dir, "not-a-dir")
	require.NoError(t, os.WriteFile(blocker, nil, 0o600))
	l := agent.Launch{Files: []agent.File{{Path: filepath.Join(blocker, "mcp.json"), Contents: []byte("{}")}}}
	require.ErrorContains(t, l.WriteFiles(), "create directory "+blocker)

	// The directory it creates is the runner's alone.
	l = agent.Launch{Files: []agent.File{{Path: filepath.Join(dir, "state", "42", "mcp.json"), Contents: []byte("{}")}}}
	require.NoError(t, l.WriteFiles())
	info, err := os.Stat(filepath.Join(dir, "state", "42"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), info.Mode().Perm())
	entries, err := os.ReadDir(filepath.Join(dir, "state", "42"))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file is left behind")
}
