// Command zimmer-demo-agent is the project's demo agent: the default runtime
// of `make run` and the workhorse of the tests. It behaves like a headless
// coding-agent CLI — it reads a prompt, prints a stream-json transcript on
// stdout and exits — but what it does is scripted by directives in the
// prompt, so any turn ending can be produced from outside:
//
//	zimmer-demo-agent [--prompt-file FILE] [--session-id ID] [--resume]
//
// The prompt comes from --prompt-file; without it, from stdin until EOF.
// A file keeps stdin free for elicitation answers, and is how the runner
// calls it. ZIMMER_MCP_URL and ZIMMER_MCP_TOKEN locate Zimmer's MCP and
// carry the session's own credential.
//
// Directives, one per line, run in order:
//
//	@demo say <text>                  an assistant message
//	@demo sleep <duration>            e.g. 60s, 500ms
//	@demo exit <code>                 stop here with that status (0–255)
//	@demo signal <SIGKILL|SIGSEGV|…>  die by that signal (no core file)
//	@demo ignore-sigterm              from now on SIGTERM does nothing
//	@demo spawn-grandchild <duration> a process in the agent's group that
//	                                  sleeps that long and outlives the agent
//	                                  unless killed (inherits ignore-sigterm);
//	                                  its pid is printed
//	@demo mcp <tool> [<json-args>]    call a tool on Zimmer's MCP and print
//	                                  the call and its result (an error is
//	                                  printed, not fatal)
//	@demo pr-create <pull request URL> a Bash tool call running `gh pr create`
//	                                  and its result, the new pull request's
//	                                  URL on stdout, as gh prints it
//	@demo elicit <duration> [text]    report an elicitation and wait that
//	                                  long for its answer on stdin
//	@demo quota-wall <duration>       the login's quota runs out until that
//	                                  long from now: print Claude Code's
//	                                  usage-limit wall and exit 1; each such
//	                                  line hits it once per conversation
//	                                  (delivered again after the reset, it
//	                                  is passed over)
//
// The login is ZIMMER_DEMO_CONFIG_DIR (a pool's account sets it; else the
// user's config directory): while it rests after a wall, every turn under
// it hits the wall before doing anything, as the CLI does.
//
// Other lines are echoed as assistant text, consecutive ones as one
// message. A prompt with nothing to say gets a short greeting. A malformed
// directive fails the turn before anything runs (exit 2), so a scenario's
// typo is not silently a different scenario.
//
// A status-summary fork's prompt (the runner's domain.SummaryPrompt) is not
// a script: the agent summarises the transcript it is shown,
// deterministically (the lines read, the position, the last thing the agent
// said), and obeys nothing quoted in it; a transcript that says "demo: fail
// the status summary" makes the summary fail (exit 1).
//
// Output, one JSON object per line, modelled on Claude Code's
// `--output-format stream-json --verbose`:
//
//	{"type":"system","subtype":"init","session_id":"…","model":"zimmer-demo","mcp_servers":[…],…}
//	{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"…"}],…},"session_id":"…"}
//	{"type":"assistant","message":{…"content":[{"type":"tool_use","id":"toolu_demo_2","name":"mcp__zimmer__get_session","input":{…}}]},…}
//	{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_demo_2","content":[…],"is_error":false}]},…}
//	{"type":"elicitation","id":"elicit_demo_3","text":"…","requested_schema":{…},"timeout_ms":60000,"session_id":"…"}
//	{"type":"system","subtype":"elicitation_result","id":"elicit_demo_3","action":"accept|decline|cancel|timeout","content":{…},…}
//	{"type":"system","subtype":"grandchild","pid":1234,"session_id":"…"}
//	{"type":"result","subtype":"success","is_error":false,"result":"…","num_turns":1,"session_id":"…",
//	 "total_cost_usd":0.0125,"usage":{"input_tokens":1000,"output_tokens":100,"cache_read_input_tokens":500,"cache_creation_input_tokens":50}}
//
// The result's usage is the same on every turn (turnUsage), so tests can
// assert what the runner records of a runtime's report.
//
// exit with a non-zero code prints an error result (subtype
// error_during_execution) and a line on stderr first; signal prints nothing
// more, like a crash.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/google/uuid"

	"github.com/zimmerhq/zimmer/services/runner/internal/domain"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv))
}

// run is the whole agent; it returns the exit status. There is no signal
// handling on purpose: an agent dies of the signals it gets, which is what
// the runner has to cope with.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	fs := flag.NewFlagSet("zimmer-demo-agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	promptFile := fs.String("prompt-file", "", "read the prompt from this file instead of stdin")
	sessionID := fs.String("session-id", "", "the conversation's id (default: a new UUID)")
	resume := fs.Bool("resume", false, "continue the conversation --session-id names")
	gcSleep := fs.Duration("grandchild-sleep", 0, "internal: run as a spawned grandchild for this long")
	gcIgnore := fs.Bool("grandchild-ignore-sigterm", false, "internal: the grandchild ignores SIGTERM")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *gcSleep > 0 {
		return grandchild(*gcSleep, *gcIgnore)
	}
	if fs.NArg() > 0 {
		_, _ = fmt.Fprintf(stderr, "zimmer-demo-agent: unexpected arguments %q; the prompt comes from --prompt-file or stdin\n", fs.Args())
		return 2
	}

	answers := stdin
	var prompt []byte
	var err error
	if *promptFile != "" {
		prompt, err = os.ReadFile(*promptFile)
	} else {
		prompt, err = io.ReadAll(stdin)
		answers = nil // consumed by the prompt
	}
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "zimmer-demo-agent: read prompt: %v\n", err)
		return 2
	}
	var steps []step
	if req, ok := domain.ParseSummaryPrompt(string(prompt)); ok {
		steps = summarySteps(req)
	} else if steps, err = parseScript(string(prompt)); err != nil {
		_, _ = fmt.Fprintf(stderr, "zimmer-demo-agent: %v\n", err)
		return 2
	}

	if *sessionID == "" {
		*sessionID = uuid.NewString()
	}
	out := &transcript{w: stdout, sessionID: *sessionID}
	mcpc := &mcpCaller{url: getenv("ZIMMER_MCP_URL"), token: getenv("ZIMMER_MCP_TOKEN")}
	defer mcpc.close()
	cwd, _ := os.Getwd()
	init := initLine{Type: "system", Subtype: "init", Cwd: cwd, SessionID: *sessionID, Tools: []string{},
		MCPServers: []mcpServer{}, Model: demoModel, PermissionMode: "bypassPermissions", APIKeySource: "none",
		Resumed: *resume}
	if mcpc.url != "" {
		// Connected lazily, at the first mcp directive.
		init.MCPServers = append(init.MCPServers, mcpServer{Name: "zimmer", Status: "pending"})
	}
	if err := out.write(init); err != nil {
		_, _ = fmt.Fprintf(stderr, "zimmer-demo-agent: %v\n", err)
		return 1
	}
	a := &agent{out: out, stderr: stderr, mcp: mcpc, stdin: answers, start: time.Now(), login: newLogin(getenv)}
	return a.run(ctx, steps)
}
