package config_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/runner/internal/config"
	"github.com/zimmerhq/zimmer/services/runner/internal/domain"
)

func TestParseAccounts(t *testing.T) {
	t.Parallel()
	accounts, err := config.ParseAccounts([]byte(`{"accounts": [
		{"name": "team-a", "runtime": "claude_code", "config_dir": "/srv/logins/a", "env": {"CLAUDE_CODE_OAUTH_TOKEN": "sk-secret-a"},
		 "quota_targets": [{"window": "5h", "max_turns": 200}, {"window": "168h", "max_turns": 1500}]},
		{"name": "team-b", "runtime": "demo", "config_dir": "/srv/logins/b"}
	]}`))
	require.NoError(t, err)
	require.Len(t, accounts, 2)
	require.Equal(t, domain.Account{Runtime: "claude_code", Name: "team-a", Targets: []domain.QuotaTarget{
		{Window: 5 * time.Hour, MaxTurns: 200}, {Window: 168 * time.Hour, MaxTurns: 1500}}}, accounts[0].Domain())
	require.Equal(t, []string{"CLAUDE_CONFIG_DIR=/srv/logins/a", "CLAUDE_CODE_OAUTH_TOKEN=sk-secret-a"}, accounts[0].Login.Environ())
	require.Equal(t, []string{"ZIMMER_DEMO_CONFIG_DIR=/srv/logins/b"}, accounts[1].Login.Environ())

	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("loaded", "accounts", accounts, "one", accounts[0], "login", accounts[0].Login)
	require.Contains(t, logs.String(), "CLAUDE_CODE_OAUTH_TOKEN")
	require.NotContains(t, logs.String(), "sk-secret-a", "a secret is never logged")
	for _, printed := range []string{fmt.Sprint(accounts), fmt.Sprintf("%+v", accounts), fmt.Sprintf("%#v", accounts[0])} {
		require.NotContains(t, printed, "sk-secret-a", "nor printed")
	}
}

func TestParseAccountsRefusesAndNeverQuotesASecret(t *testing.T) {
	t.Parallel()
	_, err := config.ParseAccounts([]byte(`{"accounts": [
		{"name": "ambient", "runtime": "claude_code", "env": {"ANTHROPIC_API_KEY": "sk-secret-1"}},
		{"name": "x", "runtime": "gemini", "env": {"K": "sk-secret-2"}},
		{"name": "y", "runtime": "codex", "config_dir": "relative"},
		{"name": "z", "runtime": "codex"},
		{"name": "w", "runtime": "codex", "env": {"RUNNER_DATABASE_URL": "sk-secret-3"}, "quota_targets": [{"window": "soon", "max_turns": 0}]},
		{"name": "w", "runtime": "codex", "env": {"OPENAI_API_KEY": "sk-secret-4"}}
	]}`))
	require.Error(t, err)
	for _, want := range []string{`"ambient" names the runtime's own login`, `runtime "gemini"`, "config_dir must be an absolute path",
		"give config_dir or env", "RUNNER_DATABASE_URL is the runner's own configuration", "window \"soon\"", "max_turns must be positive",
		"a second codex account"} {
		require.ErrorContains(t, err, want)
	}
	require.NotContains(t, err.Error(), "sk-secret")

	_, err = config.ParseAccounts([]byte(`{"accounts": [{"name": "a", "runtime": "codex", "password": "sk-secret"}]}`))
	require.ErrorContains(t, err, "not an accounts file")
	require.NotContains(t, err.Error(), "sk-secret")
}

func TestTurnRecordsOutliveTheLongestWindow(t *testing.T) {
	t.Parallel()
	require.Equal(t, 7*24*time.Hour+time.Hour, config.TurnRecordRetention(nil), "a week, the longest window a CLI names")
	accounts, err := config.ParseAccounts([]byte(`{"accounts": [{"name": "a", "runtime": "codex", "env": {"K": "v"},
		"quota_targets": [{"window": "5h", "max_turns": 1}, {"window": "720h", "max_turns": 9}]}]}`))
	require.NoError(t, err)
	require.Equal(t, 721*time.Hour, config.TurnRecordRetention(accounts))
}
