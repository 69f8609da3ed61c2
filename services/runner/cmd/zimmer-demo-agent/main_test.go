package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/zimmerhq/zimmer/services/runner/internal/process"
)

// agentBinary is the demo agent, built once for the package's tests: they
// run the real binary, as the runner does.
var agentBinary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "zimmer-demo-agent-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	agentBinary = filepath.Join(dir, "zimmer-demo-agent")
	build := exec.Command("go", "build", "-o", agentBinary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build the demo agent:", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// agentRun is one agent process and its transcript.
type agentRun struct {
	p    *process.Process
	mu   sync.Mutex
	objs []map[string]any
	raw  []string
	seen chan map[string]any
}

type runOpts struct {
	env    []string
	stdin  []byte // with a prompt file: elicitation answers
	noFile bool   // the prompt goes on stdin instead of --prompt-file
	args   []string
}

func testLadder() process.Ladder {
	return process.Ladder{TermGrace: 500 * time.Millisecond, KillGrace: 500 * time.Millisecond,
		SweepGrace: 300 * time.Millisecond, Poll: 20 * time.Millisecond}
}

func startAgent(t *testing.T, prompt string, o runOpts) *agentRun {
	t.Helper()
	args := append([]string{agentBinary}, o.args...)
	stdin := o.stdin
	if o.noFile {
		stdin = []byte(prompt)
	} else {
		file := filepath.Join(t.TempDir(), "prompt.txt")
		require.NoError(t, os.WriteFile(file, []byte(prompt), 0o600))
		args = append(args, "--prompt-file", file)
	}
	r := &agentRun{seen: make(chan map[string]any, 256)}
	onLine := func(l process.Line) {
		if l.Stream != process.Stdout {
			return
		}
		var obj map[string]any
		if err := json.Unmarshal([]byte(l.Text), &obj); err != nil {
			obj = map[string]any{"unparsed": l.Text}
		}
		r.mu.Lock()
		r.objs = append(r.objs, obj)
		r.raw = append(r.raw, l.Text)
		r.mu.Unlock()
		r.seen <- obj
	}
	p, err := process.Start(process.Command{Path: agentBinary, Args: args, Env: append(os.Environ(), o.env...), Stdin: stdin},
		process.Options{OnLine: onLine, Ladder: testLadder()})
	require.NoError(t, err)
	r.p = p
	t.Cleanup(func() {
		_ = unix.Kill(-p.Pid(), syscall.SIGKILL)
		_, _ = p.Wait(context.Background())
	})
	return r
}

func (r *agentRun) wait(t *testing.T) process.Exit {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	e, err := r.p.Wait(ctx)
	require.NoError(t, err)
	return e
}

// waitFor returns the first transcript line for which match is true.
func (r *agentRun) waitFor(t *testing.T, match func(map[string]any) bool) map[string]any {
	t.Helper()
	timeout := time.After(15 * time.Second)
	for {
		select {
		case obj := <-r.seen:
			if match(obj) {
				return obj
			}
		case <-timeout:
			t.Fatal("the expected transcript line never came")
		}
	}
}

func (r *agentRun) lines() []map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]map[string]any(nil), r.objs...)
}

func isType(typ, subtype string) func(map[string]any) bool {
	return func(o map[string]any) bool {
		return o["type"] == typ && (subtype == "" || o["subtype"] == subtype)
	}
}

func saying(text string) func(map[string]any) bool {
	return func(o map[string]any) bool { return o["type"] == "assistant" && assistantText(o) == text }
}

// assistantText is the text of an assistant line's text blocks.
func assistantText(o map[string]any) string {
	var parts []string
	for _, b := range contentOf(o) {
		if b["type"] == "text" {
			parts = append(parts, b["text"].(string))
		}
	}
	return strings.Join(parts, "\n")
}

func contentOf(o map[string]any) []map[string]any {
	msg, _ := o["message"].(map[string]any)
	blocks, _ := msg["content"].([]any)
	out := make([]map[string]any, 0, len(blocks))
	for _, b := range blocks {
		out = append(out, b.(map[string]any))
	}
	return out
}

// texts lists what the agent said.
func texts(objs []map[string]any) []string {
	var out []string
	for _, o := range objs {
		if o["type"] == "assistant" {
			if s := assistantText(o); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

func last(objs []map[string]any) map[string]any { return objs[len(objs)-1] }

func TestSayEchoAndResult(t *testing.T) {
	t.Parallel()
	r := startAgent(t, "Please fix the bug.\nThanks!\n\n@demo say On it.\nDone here.", runOpts{args: []string{"--session-id", "s-1"}})
	e := r.wait(t)
	require.Equal(t, 0, e.Code)
	objs := r.lines()

	first := objs[0]
	require.Equal(t, "system", first["type"])
	require.Equal(t, "init", first["subtype"])
	require.Equal(t, "s-1", first["session_id"])
	require.Equal(t, "zimmer-demo", first["model"])

	require.Equal(t, []string{"Please fix the bug.\nThanks!", "On it.", "Done here."}, texts(objs))
	for _, o := range objs {
		require.Equal(t, "s-1", o["session_id"], "every line names the session")
	}
	res := last(objs)
	require.Equal(t, "result", res["type"])
	require.Equal(t, "success", res["subtype"])
	require.Equal(t, false, res["is_error"])
	require.Equal(t, "Done here.", res["result"])
	require.Equal(t, 0.0125, res["total_cost_usd"], "the usage is the same every turn, for tests to assert")
	require.Equal(t, map[string]any{"input_tokens": 1000.0, "output_tokens": 100.0, "cache_read_input_tokens": 500.0, "cache_creation_input_tokens": 50.0},
		res["usage"])
}

func TestWithoutDirectivesItGreetsAndExitsZero(t *testing.T) {
	t.Parallel()
	r := startAgent(t, "", runOpts{})
	e := r.wait(t)
	require.Equal(t, 0, e.Code)
	objs := r.lines()
	require.Len(t, objs, 3)
	require.Equal(t, []string{"Hello from the Zimmer demo agent. Nothing to do."}, texts(objs))
	require.Equal(t, "success", last(objs)["subtype"])
	_, err := uuidFrom(objs[0]["session_id"])
	require.NoError(t, err, "a new session gets a UUID")
}

func uuidFrom(v any) (string, error) {
	s, _ := v.(string)
	if len(s) != 36 || strings.Count(s, "-") != 4 {
		return "", fmt.Errorf("%q is not a UUID", s)
	}
	return s, nil
}

func TestPromptFromStdin(t *testing.T) {
	t.Parallel()
	r := startAgent(t, "@demo say from stdin", runOpts{noFile: true, args: []string{"--session-id", "s-2", "--resume"}})
	require.Equal(t, 0, r.wait(t).Code)
	objs := r.lines()
	require.Equal(t, true, objs[0]["resumed"])
	require.Equal(t, []string{"from stdin"}, texts(objs))
}

func TestSleep(t *testing.T) {
	t.Parallel()
	start := time.Now()
	r := startAgent(t, "@demo sleep 400ms\n@demo say awake", runOpts{})
	require.Equal(t, 0, r.wait(t).Code)
	require.GreaterOrEqual(t, time.Since(start), 400*time.Millisecond)
	require.Equal(t, []string{"awake"}, texts(r.lines()))
}

func TestExit(t *testing.T) {
	t.Parallel()
	t.Run("non-zero", func(t *testing.T) {
		t.Parallel()
		r := startAgent(t, "@demo say trying\n@demo exit 3\n@demo say never", runOpts{})
		e := r.wait(t)
		require.Equal(t, 3, e.Code)
		require.Equal(t, []string{"zimmer-demo-agent: exiting with status 3 as the prompt directed"}, e.StderrTail)
		objs := r.lines()
		require.Equal(t, []string{"trying"}, texts(objs))
		res := last(objs)
		require.Equal(t, "error_during_execution", res["subtype"])
		require.Equal(t, true, res["is_error"])
	})
	t.Run("zero stops early", func(t *testing.T) {
		t.Parallel()
		r := startAgent(t, "@demo say one\n@demo exit 0\n@demo say never", runOpts{})
		e := r.wait(t)
		require.Equal(t, 0, e.Code)
		require.Empty(t, e.StderrTail)
		objs := r.lines()
		require.Equal(t, []string{"one"}, texts(objs))
		require.Equal(t, "success", last(objs)["subtype"])
	})
}

func TestMalformedPromptFailsBeforeRunning(t *testing.T) {
	t.Parallel()
	r := startAgent(t, "@demo say hi\n@demo sleep soon", runOpts{})
	e := r.wait(t)
	require.Equal(t, 2, e.Code)
	require.Empty(t, r.lines(), "nothing ran")
	require.Len(t, e.StderrTail, 1)
	require.Contains(t, e.StderrTail[0], `prompt line 2 "@demo sleep soon"`)
}

func TestSignalDeath(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGSEGV, syscall.SIGTERM, syscall.SIGABRT} {
		t.Run(unix.SignalName(sig), func(t *testing.T) {
			t.Parallel()
			r := startAgent(t, fmt.Sprintf("@demo say about to die\n@demo signal %s", unix.SignalName(sig)), runOpts{})
			e := r.wait(t)
			require.Equal(t, sig, e.Signal, e.String())
			require.False(t, e.SignalSentByUs)
			require.False(t, e.CoreDumped, "no core file for a scripted crash")
			objs := r.lines()
			require.Equal(t, "assistant", last(objs)["type"], "a crash prints no result")
		})
	}
}

func TestIgnoreSigterm(t *testing.T) {
	t.Parallel()
	r := startAgent(t, "@demo ignore-sigterm\n@demo say ready\n@demo sleep 30s", runOpts{})
	r.waitFor(t, saying("ready"))
	require.NoError(t, unix.Kill(r.p.Pid(), syscall.SIGTERM))
	select {
	case <-r.p.Done():
		t.Fatal("the agent died of a SIGTERM it ignores")
	case <-time.After(300 * time.Millisecond):
	}

	term, err := r.p.Terminate(context.Background())
	require.NoError(t, err)
	require.Equal(t, process.RungKill, term.Rung)
	e := r.wait(t)
	require.Equal(t, syscall.SIGKILL, e.Signal)
	require.True(t, e.SignalSentByUs)
}

// grandchildPid waits for the grandchild line and checks the process is in
// the agent's process group.
func grandchildPid(t *testing.T, r *agentRun) int {
	t.Helper()
	line := r.waitFor(t, isType("system", "grandchild"))
	pid := int(line["pid"].(float64))
	require.True(t, alive(pid))
	pgid, err := unix.Getpgid(pid)
	require.NoError(t, err)
	require.Equal(t, r.p.Pid(), pgid, "the grandchild is in the agent's process group")
	return pid
}

func TestSpawnGrandchildOutlivesTheAgent(t *testing.T) {
	t.Parallel()
	r := startAgent(t, "@demo spawn-grandchild 30s\n@demo say bye", runOpts{})
	gc := grandchildPid(t, r)
	e := r.wait(t)
	require.Equal(t, 0, e.Code)
	require.False(t, e.OutputCut, "the grandchild does not hold the agent's pipes")
	require.True(t, alive(gc), "the grandchild outlived the agent")

	// Terminating the ended turn still clears its group.
	term, err := r.p.Terminate(context.Background())
	require.NoError(t, err)
	require.Equal(t, process.RungAlreadyEnded, term.Rung)
	requireGone(t, r.p.Pid(), gc)
}

func TestTerminateIgnoreSigtermAndGrandchildLeavesNothingAlive(t *testing.T) {
	t.Parallel()
	r := startAgent(t, "@demo ignore-sigterm\n@demo spawn-grandchild 60s\n@demo say ready\n@demo sleep 60s", runOpts{})
	gc := grandchildPid(t, r)
	r.waitFor(t, saying("ready"))

	start := time.Now()
	term, err := r.p.Terminate(context.Background())
	require.NoError(t, err)
	ladder := testLadder()
	require.Equal(t, process.RungKill, term.Rung)
	require.Less(t, time.Since(start), ladder.TermGrace+ladder.KillGrace+ladder.SweepGrace+time.Second, "within the graces")
	requireGone(t, r.p.Pid(), r.p.Pid(), gc)
	e := r.wait(t)
	require.Equal(t, syscall.SIGKILL, e.Signal)
	require.True(t, e.SignalSentByUs)
}

func TestElicit(t *testing.T) {
	t.Parallel()
	t.Run("answered on stdin", func(t *testing.T) {
		t.Parallel()
		start := time.Now()
		r := startAgent(t, "@demo elicit 20s Deploy now?\n@demo say deploying", runOpts{stdin: []byte("yes, go\n")})
		require.Equal(t, 0, r.wait(t).Code)
		require.Less(t, time.Since(start), 10*time.Second, "the answer ended the wait")
		objs := r.lines()
		el := objs[1]
		require.Equal(t, "elicitation", el["type"])
		require.Equal(t, "Deploy now?", el["text"])
		require.EqualValues(t, 20000, el["timeout_ms"])
		require.NotEmpty(t, el["id"])
		res := objs[2]
		require.Equal(t, "system", res["type"])
		require.Equal(t, "elicitation_result", res["subtype"])
		require.Equal(t, el["id"], res["id"])
		require.Equal(t, "accept", res["action"])
		require.Equal(t, map[string]any{"answer": "yes, go"}, res["content"])
		require.Equal(t, []string{"deploying"}, texts(objs))
	})
	t.Run("declined", func(t *testing.T) {
		t.Parallel()
		r := startAgent(t, "@demo elicit 20s", runOpts{stdin: []byte(`{"action":"decline"}` + "\n")})
		require.Equal(t, 0, r.wait(t).Code)
		require.Equal(t, "decline", r.lines()[2]["action"])
	})
	t.Run("an answer to another elicitation is ignored", func(t *testing.T) {
		t.Parallel()
		stdin := `{"id":"elicit_demo_0","action":"accept","content":{"answer":"late"}}` + "\n" +
			`{"id":"elicit_demo_1","action":"cancel"}` + "\n"
		r := startAgent(t, "@demo elicit 20s", runOpts{stdin: []byte(stdin)})
		require.Equal(t, 0, r.wait(t).Code)
		objs := r.lines()
		require.Equal(t, "elicit_demo_1", objs[1]["id"], "the runner's answers name this id")
		require.Equal(t, "cancel", objs[2]["action"], "the late answer to another question was not taken")
	})
	t.Run("no answer: waits the duration", func(t *testing.T) {
		t.Parallel()
		start := time.Now()
		r := startAgent(t, "@demo elicit 400ms", runOpts{}) // stdin is /dev/null: EOF at once
		require.Equal(t, 0, r.wait(t).Code)
		require.GreaterOrEqual(t, time.Since(start), 400*time.Millisecond)
		require.Equal(t, "timeout", r.lines()[2]["action"])
	})
	t.Run("blocked agent ends at SIGTERM", func(t *testing.T) {
		t.Parallel()
		r := startAgent(t, "@demo elicit 60s", runOpts{})
		r.waitFor(t, isType("elicitation", ""))
		term, err := r.p.Terminate(context.Background())
		require.NoError(t, err)
		require.Equal(t, process.RungTerm, term.Rung)
		require.Equal(t, syscall.SIGTERM, r.wait(t).Signal)
	})
}

const testToken = "zsc_demo_test_token"

// startMCPServer runs an in-process MCP server that admits only testToken and
// records the Authorization headers it saw.
func startMCPServer(t *testing.T) (url string, headers func() []string) {
	t.Helper()
	srv := server.NewMCPServer("zimmer-test", "1", server.WithToolCapabilities(false))
	srv.AddTool(mcp.NewTool("echo", mcp.WithString("text")),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("echo: " + req.GetString("text", "")), nil
		})
	srv.AddTool(mcp.NewTool("refuse"),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultError("not allowed for this session"), nil
		})
	h := server.NewStreamableHTTPServer(srv)
	var mu sync.Mutex
	var seen []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+testToken {
			http.Error(w, "unknown credential", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp", func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

// toolCalls pairs each tool_use with its tool_result.
type toolCall struct {
	name    string
	input   map[string]any
	content any
	isError bool
}

func toolCalls(t *testing.T, objs []map[string]any) []toolCall {
	t.Helper()
	var calls []toolCall
	byID := map[string]int{}
	for _, o := range objs {
		for _, b := range contentOf(o) {
			switch b["type"] {
			case "tool_use":
				byID[b["id"].(string)] = len(calls)
				calls = append(calls, toolCall{name: b["name"].(string), input: b["input"].(map[string]any)})
			case "tool_result":
				i, ok := byID[b["tool_use_id"].(string)]
				require.True(t, ok, "a result answers a call")
				calls[i].content, calls[i].isError = b["content"], b["is_error"].(bool)
			}
		}
	}
	return calls
}

func TestMCP(t *testing.T) {
	t.Parallel()
	t.Run("calls with the session's credential", func(t *testing.T) {
		t.Parallel()
		url, headers := startMCPServer(t)
		r := startAgent(t, `@demo mcp echo {"text":"hi"}`+"\n@demo mcp refuse\n@demo say done",
			runOpts{env: []string{"ZIMMER_MCP_URL=" + url, "ZIMMER_MCP_TOKEN=" + testToken}})
		require.Equal(t, 0, r.wait(t).Code)
		objs := r.lines()
		require.Equal(t, []any{map[string]any{"name": "zimmer", "status": "pending"}}, objs[0]["mcp_servers"])

		calls := toolCalls(t, objs)
		require.Len(t, calls, 2)
		require.Equal(t, "mcp__zimmer__echo", calls[0].name)
		require.Equal(t, map[string]any{"text": "hi"}, calls[0].input)
		require.False(t, calls[0].isError)
		require.Equal(t, []any{map[string]any{"type": "text", "text": "echo: hi"}}, calls[0].content)
		require.Equal(t, "mcp__zimmer__refuse", calls[1].name)
		require.True(t, calls[1].isError)
		require.Equal(t, []any{map[string]any{"type": "text", "text": "not allowed for this session"}}, calls[1].content)

		seen := headers()
		require.NotEmpty(t, seen)
		for _, h := range seen {
			require.Equal(t, "Bearer "+testToken, h, "every request carries the session's credential")
		}
		require.Equal(t, "done", last(objs)["result"])
	})
	t.Run("a refused credential is printed, not fatal", func(t *testing.T) {
		t.Parallel()
		url, _ := startMCPServer(t)
		r := startAgent(t, "@demo mcp echo\n@demo say still here",
			runOpts{env: []string{"ZIMMER_MCP_URL=" + url, "ZIMMER_MCP_TOKEN=zsc_wrong"}})
		require.Equal(t, 0, r.wait(t).Code)
		objs := r.lines()
		calls := toolCalls(t, objs)
		require.Len(t, calls, 1)
		require.True(t, calls[0].isError)
		require.Contains(t, calls[0].content, "MCP error: ")
		require.Equal(t, []string{"still here"}, texts(objs))
	})
	t.Run("no MCP configured", func(t *testing.T) {
		t.Parallel()
		r := startAgent(t, "@demo mcp echo", runOpts{env: []string{"ZIMMER_MCP_URL="}})
		require.Equal(t, 0, r.wait(t).Code)
		objs := r.lines()
		require.Equal(t, []any{}, objs[0]["mcp_servers"])
		calls := toolCalls(t, objs)
		require.Equal(t, "MCP error: ZIMMER_MCP_URL is not set", calls[0].content)
	})
}

// alive reads /proc: a zombie has ended, only its reap is pending (orphans
// are reaped by init, lazily in some containers).
func alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
	return f[0] != "Z" && f[0] != "X"
}

// requireGone checks /proc: none of pids and no process of group pgid is
// alive. A SIGKILLed process runs no more user code, but leaves /proc only
// once the kernel has scheduled its exit, so that is given a moment.
func requireGone(t *testing.T, pgid int, pids ...int) {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, pid := range pids {
			if alive(pid) {
				return false
			}
		}
		return len(groupMembers(pgid)) == 0
	}, 500*time.Millisecond, 5*time.Millisecond, "a process of group %d survived", pgid)
}

func groupMembers(pgid int) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !alive(pid) {
			continue
		}
		if g, err := unix.Getpgid(pid); err == nil && g == pgid {
			pids = append(pids, pid)
		}
	}
	return pids
}
