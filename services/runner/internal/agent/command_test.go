package agent_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/runner/internal/agent"
)

func TestCommandTemplateSplitting(t *testing.T) {
	t.Parallel()
	b := setup(t)
	echo, err := exec.LookPath("echo")
	require.NoError(t, err)

	cases := []struct {
		template string
		want     []string
	}{
		{`echo {prompt_file}`, []string{echo, filepath.Join(b.stateDir, "prompt.txt")}},
		{`echo --session {session_id} --cwd={workdir}`, []string{echo, "--session", "42", "--cwd=" + b.workdir}},
		{`echo 'single $quoted {workdir}' "double {session_id}"`, []string{echo, "single $quoted " + b.workdir, "double 42"}},
		{`echo a\ b "c\"d" 'e''f'`, []string{echo, "a b", `c"d`, "ef"}},
		{`echo * ~ ~/bin {a,b} {unknown}`, []string{echo, "*", "~", "~/bin", "{a,b}", "{unknown}"}},
		{`echo $'a\tb'`, []string{echo, `$a\tb`}},
		{`echo "back\slash" "\$x" "\\" \$y`, []string{echo, `back\slash`, "$x", `\`, "$y"}},
		{"  echo\t{runtime_session_id}  {mcp_config} ", []string{echo, testRuntimeUUID, filepath.Join(b.stateDir, "mcp.json")}},
		{`sh -c 'my-agent < "$ZIMMER_PROMPT_FILE" | tee out'`, nil}, // checked below: sh is resolved
	}
	for _, tc := range cases {
		rt, err := agent.NewCommand(tc.template)
		require.NoError(t, err, tc.template)
		l, err := rt.Prepare(b.turn("hi"))
		require.NoError(t, err, tc.template)
		if tc.want == nil {
			require.Equal(t, []string{"-c", `my-agent < "$ZIMMER_PROMPT_FILE" | tee out`}, l.Args[1:], tc.template)
			require.Equal(t, "sh", filepath.Base(l.Args[0]))
			continue
		}
		require.Equal(t, tc.want, l.Args, tc.template)
	}
}

func TestCommandTemplateKeepsValuesWhole(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	turn := agent.Turn{
		SessionID: 7,
		Prompt:    "hi",
		Workdir:   filepath.Join(root, "a clone; rm -rf $HOME"),
		StateDir:  filepath.Join(root, "state dir"),
		MCP:       agent.MCPEndpoint{URL: testMCPURL, Token: testToken},
	}
	require.NoError(t, os.MkdirAll(turn.Workdir, 0o755))
	rt, err := agent.NewCommand(`echo --cwd {workdir} {prompt_file}`)
	require.NoError(t, err)
	l, err := rt.Prepare(turn)
	require.NoError(t, err)
	require.Equal(t, []string{"--cwd", turn.Workdir, filepath.Join(turn.StateDir, "prompt.txt")}, l.Args[1:])
}

func TestCommandTemplateRefusesShellSyntax(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		``:                          "want exactly one command",
		`   `:                       "want exactly one command",
		`agent; rm -rf /`:           "want exactly one command",
		`agent && other`:            "plain command line",
		`agent | tee log`:           "plain command line",
		`agent > out.txt`:           "plain command line",
		`agent &`:                   "plain command line",
		`FOO=1 agent`:               "plain command line",
		`agent $HOME`:               "a parameter expansion",
		`agent "$ZIMMER_MCP_TOKEN"`: "a parameter expansion",
		`agent $(cat secret)`:       "a command substitution",
		"agent `id`":                "a command substitution",
		`agent $((1+2))`:            "an arithmetic expansion",
		`agent 'unterminated`:       "reached EOF",
		`(agent)`:                   "plain command line",
	}
	for template, want := range cases {
		_, err := agent.NewCommand(template)
		require.ErrorContains(t, err, want, template)
	}
}

func TestCommandRunsAndKeepsLinesAsText(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// The script is the agent: it reads its prompt file and MCP configuration,
	// prints text, and proves the credential is in its environment but not
	// in its arguments.
	script := filepath.Join(t.TempDir(), "agent.sh")
	require.NoError(t, os.WriteFile(script, []byte(`#!/bin/sh
echo "prompt: $(cat "$1")"
echo "session $2 in $(pwd)"
grep -q "Bearer $ZIMMER_MCP_TOKEN" "$3" && echo "config has my credential"
tr '\0' '\n' </proc/$$/cmdline | grep -qF -- "$ZIMMER_MCP_TOKEN" && echo "credential on my command line"
[ -z "${ZIMMER_API_KEYS+x}" ] && echo "no operator keys"
echo '{"type":"result","subtype":"success"}'
exit 3
`), 0o755))
	rt, err := agent.NewCommand(script + ` {prompt_file} {session_id} {mcp_config}`)
	require.NoError(t, err)
	l, err := rt.Prepare(b.turn("Fix the \"bug\".\nThen stop."))
	require.NoError(t, err)

	res := run(t, rt, l)
	require.Equal(t, 3, res.exitCode, res.stderr)
	var texts []string
	for _, ev := range res.events {
		require.Equal(t, agent.KindText, ev.Kind, "command output is text, whatever it looks like")
		require.Equal(t, ev.Raw, ev.Text)
		texts = append(texts, ev.Text)
	}
	require.Equal(t, []string{
		`prompt: Fix the "bug".`,
		"Then stop.",
		"session 42 in " + b.workdir,
		"config has my credential",
		"no operator keys",
		`{"type":"result","subtype":"success"}`,
	}, texts)

	info, err := os.Stat(filepath.Join(b.stateDir, "prompt.txt"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	for _, a := range l.Args {
		require.NotContains(t, a, testToken)
	}
	require.Contains(t, l.Env, "ZIMMER_MCP_TOKEN="+testToken)
	require.Contains(t, l.Env, "ZIMMER_PROMPT_FILE="+filepath.Join(b.stateDir, "prompt.txt"))

	_, err = agent.NewCommand("zimmer-no-such-agent {prompt_file}")
	require.NoError(t, err, "the program is looked up when a turn runs")
	missing, _ := agent.NewCommand("zimmer-no-such-agent {prompt_file}")
	_, err = missing.Prepare(b.turn("hi"))
	require.ErrorContains(t, err, "RUNNER_COMMAND_TEMPLATE")
	require.False(t, strings.Contains(err.Error(), testToken))
}
