package agent_test

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/runner/internal/agent"
)

const (
	testToken       = "zsc_test_session_credential_0123456789"
	testMCPURL      = "http://127.0.0.1:18080/mcp"
	testRuntimeUUID = "6f1c2a4e-8b3d-4c5e-9f70-1a2b3c4d5e6f"
	operatorKey     = "zk_operator_key_must_not_leak"
)

// testBundle is one test's clone and state directory.
type testBundle struct {
	workdir  string
	stateDir string
	record   string
}

func setup(t *testing.T) testBundle {
	t.Helper()
	root := t.TempDir()
	b := testBundle{
		workdir:  filepath.Join(root, "clone", "app"),
		stateDir: filepath.Join(root, "state", "sessions", "42"),
		record:   filepath.Join(root, "record.txt"),
	}
	require.NoError(t, os.MkdirAll(b.workdir, 0o755))
	return b
}

func (b testBundle) turn(prompt string) agent.Turn {
	return agent.Turn{
		SessionID:        42,
		RuntimeSessionID: testRuntimeUUID,
		Prompt:           prompt,
		Workdir:          b.workdir,
		StateDir:         b.stateDir,
		MCP:              agent.MCPEndpoint{URL: testMCPURL, Token: testToken},
	}
}

// recorded reads what a fake binary recorded: its arguments and its stdin.
func (b testBundle) recorded(t *testing.T) (args []string, stdin string) {
	t.Helper()
	data, err := os.ReadFile(b.record)
	require.NoError(t, err)
	head, stdin, found := strings.Cut(string(data), "--stdin--\n")
	require.True(t, found, "the fake did not get to read its stdin; recorded:\n%s", data)
	return strings.Split(strings.TrimSuffix(head, "\n"), "\n"), stdin
}

// fake is the path of a fake CLI in testdata.
func fake(t *testing.T, name string) string {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("testdata", name))
	require.NoError(t, err)
	return path
}

// runResult is what running a launch gave.
type runResult struct {
	events   []agent.Event
	stderr   string
	exitCode int
}

// run writes the launch's files, runs it as the runner would (its
// environment built from a runner environment holding an operator key and a
// database URL) and parses every stdout line with rt.
func run(t *testing.T, rt agent.Runtime, l agent.Launch, env ...string) runResult {
	t.Helper()
	require.NoError(t, l.WriteFiles())
	base := append(os.Environ(),
		"ZIMMER_API_KEYS="+operatorKey,
		"ZIMMER_ADMIN_API_KEYS="+operatorKey,
		"ZIMMER_INTERNAL_TOKEN="+operatorKey,
		"RUNNER_DATABASE_URL=postgres://runner:secret@127.0.0.1/runner",
	)
	cmd := exec.CommandContext(t.Context(), l.Args[0], l.Args[1:]...)
	cmd.Env = l.Environ(append(base, env...))
	cmd.Dir = l.Dir
	cmd.Stdin = bytes.NewReader(l.Stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := runResult{stderr: stderr.String()}
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		res.exitCode = exitErr.ExitCode()
	default:
		require.NoError(t, err)
	}
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		res.events = append(res.events, rt.ParseLine(sc.Text()))
	}
	require.NoError(t, sc.Err())
	return res
}

// kinds lists the events' kinds.
func kinds(events []agent.Event) []agent.Kind {
	out := make([]agent.Kind, len(events))
	for i, e := range events {
		out[i] = e.Kind
	}
	return out
}

// readLines reads a testdata transcript.
func readLines(t testing.TB, name string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}
