// Package agent holds the agent runtimes a session can run on — claude_code,
// codex, command and demo — each of which turns one turn (a prompt, a
// workdir, the runtime's conversation id, Zimmer's MCP endpoint and the
// session's own credential) into a Launch (command line, environment,
// working directory, stdin and the files to write first) and each line the
// agent prints into a transcript Event. It runs nothing itself: the runner's
// process package starts the Launch, and the turn feeds every stdout line
// to Runtime.ParseLine.
//
// The demo agent and the command runtime get their prompt in a file, which
// keeps stdin free (the demo agent reads elicitation answers there); claude
// gets a short prompt as its last argument and a long one on stdin; codex
// always on stdin.
//
// # Using a Launch
//
//	launch, err := rt.Prepare(turn)
//	err = launch.WriteFiles()  // 0600, under turn.StateDir, never in the clone
//	defer launch.RemoveFiles() // the credential does not outlive the turn on disk
//	p, err := process.Start(process.Command{Path: launch.Args[0], Args: launch.Args,
//		Dir: launch.Dir, Env: launch.Environ(os.Environ()), Stdin: launch.Stdin},
//		process.Options{OnLine: func(l process.Line) { ev := rt.ParseLine(l.Text); … }})
//
// (stderr lines are the caller's: they are not the runtime's protocol.)
//
// Environ drops the runner's own variables (ZIMMER_*, RUNNER_* and the
// other services' prefixes: operator and admin keys, the internal token,
// database URLs) before adding the launch's, so an agent acts only with the
// session credential it is given. The credential is never an argument
// (arguments are world-readable in /proc): claude reads it from its MCP
// configuration file, codex from ZIMMER_MCP_TOKEN, the demo agent and
// command templates from ZIMMER_MCP_TOKEN and the configuration file.
//
// # Turn end
//
// A turn ends with the process; its result line tells how the agent saw it:
// Event.Kind == KindResult with IsError for claude's result line (a subtype
// other than "success" is an error even when is_error is false) and codex's
// turn.completed / turn.failed. A KindElicitation event means the agent is
// blocked on an MCP elicitation. Every runtime's session id (claude's UUID,
// codex's thread id) comes back as Event.RuntimeSessionID; store it and pass
// it as Turn.RuntimeSessionID with Resume on the next turn.
//
// # Switching a session to a real CLI
//
// A session runs on the runtime named by agent_runtime at creation
// ("claude_code", "codex", "command", "demo"); sessions created without one
// run on RUNNER_DEFAULT_RUNTIME (default "demo", the project's own demo agent,
// which needs no account). To run real agents:
//
//   - Claude Code: install the CLI (npm install -g @anthropic-ai/claude-code)
//     and log in or export ANTHROPIC_API_KEY for the runner; it must be on the
//     runner's PATH, or RUNNER_CLAUDE_PATH names it. Create sessions with
//     "agent_runtime": "claude_code", or set RUNNER_DEFAULT_RUNTIME=claude_code.
//     RUNNER_CLAUDE_MODEL picks the model (default: the CLI's);
//     RUNNER_CLAUDE_SKIP_PERMISSIONS=false drops --dangerously-skip-permissions,
//     in which case tools that ask for permission are denied, as nobody is
//     there to answer.
//   - Codex: install the CLI (npm install -g @openai/codex) and log in
//     (codex login) or export OPENAI_API_KEY; on PATH, or RUNNER_CODEX_PATH.
//     "agent_runtime": "codex" or RUNNER_DEFAULT_RUNTIME=codex;
//     RUNNER_CODEX_MODEL picks the model; RUNNER_CODEX_BYPASS_SANDBOX=false
//     runs --full-auto (sandboxed writes in the workdir) instead of
//     --dangerously-bypass-approvals-and-sandbox. Codex keeps its own home
//     (~/.codex, or CODEX_HOME): its login and the recorded sessions resume
//     needs stay there; Zimmer's MCP server is added per turn with -c.
//   - Any other agent: RUNNER_COMMAND_TEMPLATE, e.g.
//     `my-agent --prompt-file {prompt_file} --cwd {workdir}`, and
//     "agent_runtime": "command". Placeholders: {prompt_file},
//     {session_id}, {runtime_session_id}, {workdir}, {mcp_config}; the
//     template is split like a shell command but no shell runs it unless it
//     says sh -c '…' (where the values are in $ZIMMER_PROMPT_FILE,
//     $ZIMMER_SESSION_ID, $ZIMMER_RUNTIME_SESSION_ID, $ZIMMER_WORKDIR,
//     $ZIMMER_MCP_CONFIG).
//   - The demo agent: `go build ./services/runner/cmd/zimmer-demo-agent`;
//     on PATH or RUNNER_DEMO_AGENT_PATH. It needs no account, which is why it
//     is the default.
//
// A session keeps the runtime it was created with: the runtime's conversation
// (claude's session, codex's thread) cannot move to another CLI.
package agent
