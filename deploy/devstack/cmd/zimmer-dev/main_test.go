package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"github.com/zimmerhq/zimmer/deploy/devstack"
)

func testEnv(vars map[string]string) *env {
	return &env{getenv: func(k string) string { return vars[k] }, out: &bytes.Buffer{}, root: "/repo", dataDir: "/repo/.data"}
}

func TestServiceEnvCallerWins(t *testing.T) {
	t.Parallel()
	e := testEnv(map[string]string{
		"LINEAGE_GRPC_ADDR":      "127.0.0.1:9202",
		"LIFECYCLE_DATABASE_URL": "postgres://elsewhere/db",
		"LIFECYCLE_METRICS_ADDR": "127.0.0.1:9301",
	})
	addrs := e.grpcAddrs()
	require.Equal(t, "127.0.0.1:9202", addrs["lineage"])
	require.Equal(t, "127.0.0.1:9101", addrs["lifecycle"])

	common := map[string]string{"TEMPORAL_ADDRESS": "127.0.0.1:7233"}
	got := e.serviceEnv(services[0], "postgres://local/zimmer_lifecycle", addrs, common)
	require.Equal(t, map[string]string{
		"LIFECYCLE_DATABASE_URL":      "postgres://elsewhere/db",
		"LIFECYCLE_METRICS_ADDR":      "127.0.0.1:9301",
		"LIFECYCLE_GRPC_ADDR":         "127.0.0.1:9101",
		"LIFECYCLE_EFFECT_CONSUMERS":  "lineage=127.0.0.1:9202,runner_turns=127.0.0.1:9104,queue=127.0.0.1:9103,notification=127.0.0.1:9105,runner=127.0.0.1:9104",
		"LIFECYCLE_NOTIFICATION_ADDR": "127.0.0.1:9105",
		"LIFECYCLE_RUNNER_ADDR":       "127.0.0.1:9104",
		"LIFECYCLE_QUEUE_ADDR":        "127.0.0.1:9103",
		"TEMPORAL_ADDRESS":            "127.0.0.1:7233",
	}, got)

	runner := e.serviceEnv(services[3], "postgres://local/zimmer_runner", addrs, common)
	require.Equal(t, "demo", runner["RUNNER_DEFAULT_RUNTIME"])
	require.Equal(t, filepath.Join(e.root, "bin", "zimmer-demo-agent"), runner["RUNNER_DEMO_AGENT_PATH"])
	require.Equal(t, filepath.Join(e.dataDir, "workspaces"), runner["RUNNER_WORKSPACES_DIR"])
	require.Equal(t, "127.0.0.1:9101", runner["RUNNER_LIFECYCLE_ADDR"])
	require.Equal(t, "http://127.0.0.1:8080/mcp", runner["RUNNER_MCP_URL"])
	require.Equal(t, "127.0.0.1:9103", runner["RUNNER_QUEUE_ADDR"])
	require.Equal(t, "127.0.0.1:9202", runner["RUNNER_LINEAGE_ADDR"])

	queue := e.serviceEnv(services[2], "postgres://local/zimmer_queue", addrs, common)
	require.Equal(t, "127.0.0.1:9101", queue["QUEUE_LIFECYCLE_ADDR"])
	require.Equal(t, "127.0.0.1:9104", queue["QUEUE_RUNNER_ADDR"])
	require.Equal(t, "127.0.0.1:9202", queue["QUEUE_LINEAGE_ADDR"], "the caller's lineage address")
	require.Equal(t, "127.0.0.1:9105", queue["QUEUE_NOTIFICATION_ADDR"])

	notification := e.serviceEnv(services[4], "postgres://local/zimmer_notification", addrs, common)
	require.Equal(t, "127.0.0.1:9101", notification["NOTIFICATION_LIFECYCLE_ADDR"], "the debounce asks lifecycle")
	require.Equal(t, "127.0.0.1:9103", notification["NOTIFICATION_QUEUE_ADDR"], "a Slack thread's follow-up goes through the queue")
	require.Equal(t, "127.0.0.1:9202", notification["NOTIFICATION_LINEAGE_ADDR"], "a Slack message is recorded in lineage")
	require.Equal(t, "http://127.0.0.1:8080/console/", notification["NOTIFICATION_CONSOLE_URL"], "the links posted in Slack threads")

	gw := e.gatewayEnv(addrs, ":8080", common, "$2a$10$hash")
	require.Equal(t, ":8080", gw["GATEWAY_HTTP_ADDR"])
	require.Equal(t, "$2a$10$hash", gw["ZIMMER_CONSOLE_PASSWORD_HASH"], "the console's password, as a hash only")
	require.Equal(t, "127.0.0.1:9202", gw["GATEWAY_LINEAGE_ADDR"])
	require.Equal(t, "127.0.0.1:9105", gw["GATEWAY_NOTIFICATION_ADDR"])
}

func TestCompactLogLine(t *testing.T) {
	t.Parallel()
	got := compactLogLine([]byte(`{"time":"2026-01-01T00:00:00Z","level":"INFO","msg":"rpc","method":"/x.v1.S/Get","code":"OK"}`))
	require.Equal(t, "INFO  rpc code=OK method=/x.v1.S/Get", got)
	require.Equal(t, "panic: boom", compactLogLine([]byte("panic: boom")))
}

func TestDialable(t *testing.T) {
	t.Parallel()
	require.Equal(t, "127.0.0.1:8080", dialable(":8080"))
	require.Equal(t, "127.0.0.1:8080", dialable("0.0.0.0:8080"))
	require.Equal(t, "10.0.0.1:8080", dialable("10.0.0.1:8080"))
}

func TestPrintBox(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	printBox(&b, [][2]string{{"REST", "http://127.0.0.1:8080/api/v1"}, {"API key", "k"}})
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, lines, 4)
	for _, l := range lines[1:] {
		require.Equal(t, len([]rune(lines[0])), len([]rune(l)), "all box lines have the same width")
	}
}

func TestCrashLine(t *testing.T) {
	t.Parallel()
	exit2 := exec.Command("sh", "-c", "exit 2").Run()
	require.Equal(t, "lineage exited (exit status 2); restarting in 1s (restart 2)",
		crashLine(devstack.Crash{Name: "lineage", Pid: 42, Err: exit2, Restart: 2, Delay: time.Second}))
	require.Equal(t, "gateway exited (exit status 0); restarting in 250ms (restart 1)",
		crashLine(devstack.Crash{Name: "gateway", Pid: 42, Restart: 1, Delay: 250 * time.Millisecond}))
	require.Equal(t, "queue could not be started (no binary); restarting in 500ms (restart 2)",
		crashLine(devstack.Crash{Name: "queue", Err: errors.New("no binary"), Restart: 2, Delay: 500 * time.Millisecond}))
	require.Equal(t, "runner exited (exit status 2); not restarting: it keeps crashing (more than 5 restarts within 1m0s)",
		crashLine(devstack.Crash{Name: "runner", Pid: 42, Err: exit2, Restart: 5, GiveUp: true}))
}

func TestDeadLetterWatchPrintsChangesThatAreNotZero(t *testing.T) {
	t.Parallel()
	w := newDeadLetterWatch()
	const url = "postgres://x/zimmer_lifecycle"
	require.Empty(t, w.observe("lifecycle", url, 0, nil), "none: nothing to say")
	line := w.observe("lifecycle", url, 3, nil)
	require.Contains(t, line, "lifecycle: 3 outbox messages could not be delivered (dead letters); see outbox_messages.last_error")
	require.Contains(t, line, "psql '"+url+"'")
	require.Empty(t, w.observe("lifecycle", url, 3, nil), "unchanged: said already")
	require.Contains(t, w.observe("lineage", url, 1, nil), "lineage: 1 outbox message could not", "counted per service")
	require.Contains(t, w.observe("lifecycle", url, 4, nil), "lifecycle: 4 outbox messages")
	require.Empty(t, w.observe("lifecycle", url, 0, nil), "cleared: nothing to say")
	require.Contains(t, w.observe("lifecycle", url, 4, nil), "lifecycle: 4", "back after being cleared")

	boom := errors.New("connect: refused")
	require.Equal(t, "queue: cannot count dead letters: connect: refused", w.observe("queue", url, 0, boom))
	require.Empty(t, w.observe("queue", url, 0, boom), "the same error once")
}

// make run generates the API key and the internal token once into the data
// folder, owner-only; the key is both an operator and an admin key, the
// token is never printed, and what the caller sets wins.
func TestRunGeneratesTheKeyAndTheInternalTokenOnce(t *testing.T) {
	t.Parallel()
	e := testEnv(nil)
	e.dataDir = t.TempDir()
	operator, admin, err := e.apiKeys()
	require.NoError(t, err)
	require.Len(t, operator, 64)
	require.Equal(t, operator, admin, "the key make run prints opens the admin methods too")
	token, err := e.internalToken()
	require.NoError(t, err)
	require.Len(t, token, 64)
	require.NotEqual(t, operator, token)
	for _, name := range []string{"api-key", "internal-token"} {
		fi, err := os.Stat(filepath.Join(e.dataDir, name))
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), name)
	}
	printed := e.out.(*bytes.Buffer).String()
	require.NotContains(t, printed, token, "the internal token is never printed")
	require.Contains(t, printed, "generated internal token in ")

	again, _, err := e.apiKeys()
	require.NoError(t, err)
	require.Equal(t, operator, again, "generated once")
	tokenAgain, err := e.internalToken()
	require.NoError(t, err)
	require.Equal(t, token, tokenAgain, "generated once")

	set := testEnv(map[string]string{"ZIMMER_API_KEYS": "op1,op2", "ZIMMER_INTERNAL_TOKEN": "mine"})
	set.dataDir = t.TempDir()
	operator, admin, err = set.apiKeys()
	require.NoError(t, err)
	require.Equal(t, "op1,op2", operator)
	require.Empty(t, admin, "a caller's operator keys are not made admin keys")
	token, err = set.internalToken()
	require.NoError(t, err)
	require.Equal(t, "mine", token)
	require.NoFileExists(t, filepath.Join(set.dataDir, "internal-token"))
}

func TestConsolePasswordIsGeneratedOnceAndPrinted(t *testing.T) {
	t.Parallel()
	e := testEnv(nil)
	e.dataDir = t.TempDir()
	hash, signIn, err := e.consoleLogin()
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(e.dataDir, "console-password"))
	require.NoError(t, err)
	password := strings.TrimSpace(string(b))
	require.NoError(t, bcrypt.CompareHashAndPassword([]byte(hash), []byte(password)))
	require.Equal(t, "user tadasant, password "+password, signIn, "printed beside the URLs")
	fi, err := os.Stat(filepath.Join(e.dataDir, "console-password"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	_, again, err := e.consoleLogin()
	require.NoError(t, err)
	require.Equal(t, signIn, again, "generated once")

	set := testEnv(map[string]string{"ZIMMER_CONSOLE_PASSWORD_HASH": "$2a$10$mine", "ZIMMER_ADMIN_USER": "julie"})
	set.dataDir = t.TempDir()
	hash, signIn, err = set.consoleLogin()
	require.NoError(t, err)
	require.Equal(t, "$2a$10$mine", hash)
	require.Equal(t, "julie / the password of your ZIMMER_CONSOLE_PASSWORD_HASH", signIn)
	require.NoFileExists(t, filepath.Join(set.dataDir, "console-password"))
}

func TestMakeTestRequiresTheBrowserItFoundAndSaysLoudlyWhenItFoundNone(t *testing.T) {
	t.Parallel()
	browser := filepath.Join(t.TempDir(), "chromium")
	require.NoError(t, os.WriteFile(browser, []byte("#!/bin/sh\n"), 0o755))

	vars, skipped, err := testEnv(map[string]string{"PATH": filepath.Dir(browser)}).browserForTests()
	require.NoError(t, err)
	require.Empty(t, skipped)
	require.Equal(t, map[string]string{devstack.BrowserEnv: browser, devstack.RequireBrowserEnv: "1"}, vars,
		"given a browser, the browser tests may not skip")

	vars, skipped, err = testEnv(map[string]string{"PATH": t.TempDir()}).browserForTests()
	require.NoError(t, err, "without a browser make test still runs")
	require.Nil(t, vars)
	require.Contains(t, skipped, "SKIPPED")
	require.Contains(t, skipped, devstack.BrowserInstall, "and says how to get one")
	var summary bytes.Buffer
	require.Empty(t, printSummary(&summary, []moduleResult{{rel: "e2e", elapsed: time.Second}}, skipped))
	require.Contains(t, summary.String(), "ok    e2e")
	require.Contains(t, summary.String(), "!!! "+skipped, "the summary says it loudly")

	_, _, err = testEnv(map[string]string{"PATH": t.TempDir(), devstack.RequireBrowserEnv: "1"}).browserForTests()
	require.ErrorIs(t, err, devstack.ErrNoBrowser, "CI: a missing browser stops the run")
	_, _, err = testEnv(map[string]string{devstack.BrowserEnv: filepath.Join(t.TempDir(), "nothing")}).browserForTests()
	require.Error(t, err, "a browser named but missing is never a skip")
}
