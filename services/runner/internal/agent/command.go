package agent

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Command-template placeholders, replaced inside each argument after the
// template is split, so a value with spaces stays one argument.
const (
	PlaceholderPromptFile       = "{prompt_file}"
	PlaceholderSessionID        = "{session_id}"
	PlaceholderRuntimeSessionID = "{runtime_session_id}"
	PlaceholderWorkdir          = "{workdir}"
	PlaceholderMCPConfig        = "{mcp_config}"
)

// Environment variables the command runtime adds, for scripts (sh -c) that
// should quote the values themselves: "$ZIMMER_PROMPT_FILE".
const (
	EnvPromptFile       = "ZIMMER_PROMPT_FILE"
	EnvMCPConfig        = "ZIMMER_MCP_CONFIG"
	EnvRuntimeSessionID = "ZIMMER_RUNTIME_SESSION_ID"
)

// Command runs any program given as a command line template, e.g.
//
//	my-agent --prompt-file {prompt_file} --session {session_id} --cwd {workdir}
//
// The template is split like a shell would split a simple command (quotes
// and backslashes), but no shell runs it, so nothing in it or in the values
// is expanded; a template that needs a shell says so: sh -c '…'. The prompt
// is written to {prompt_file}, and an MCP configuration (Claude Code's
// format, with the session's credential) to {mcp_config}, both 0600 under
// the session's state directory; the credential is also in ZIMMER_MCP_TOKEN.
// Every output line is transcript text; the exit code ends the turn.
type Command struct {
	words []string
}

// NewCommand parses template; it fails on an empty template and on shell
// syntax (expansions, redirections, pipes, several commands) that only a
// shell could honour.
func NewCommand(template string) (*Command, error) {
	words, err := splitCommand(template)
	if err != nil {
		return nil, fmt.Errorf("parse command template %q: %w", template, err)
	}
	return &Command{words: words}, nil
}

// Name implements Runtime.
func (c *Command) Name() string { return RuntimeCommand }

const (
	commandPromptFile    = "prompt.txt"
	commandMCPConfigFile = "mcp.json"
)

// Prepare implements Runtime.
func (c *Command) Prepare(turn Turn) (Launch, error) {
	if err := checkTurn(turn); err != nil {
		return Launch{}, fmt.Errorf("prepare command turn: %w", err)
	}
	config, err := mcpConfigJSON(turn.MCP)
	if err != nil {
		return Launch{}, fmt.Errorf("prepare command turn: %w", err)
	}
	promptPath := filepath.Join(turn.StateDir, commandPromptFile)
	configPath := filepath.Join(turn.StateDir, commandMCPConfigFile)
	values := strings.NewReplacer(
		PlaceholderPromptFile, promptPath,
		PlaceholderSessionID, fmt.Sprint(turn.SessionID),
		PlaceholderRuntimeSessionID, turn.RuntimeSessionID,
		PlaceholderWorkdir, turn.Workdir,
		PlaceholderMCPConfig, configPath,
	)
	args := make([]string, len(c.words))
	for i, w := range c.words {
		args[i] = values.Replace(w)
	}
	program, err := resolveProgram(args[0], "RUNNER_COMMAND_TEMPLATE")
	if err != nil {
		return Launch{}, fmt.Errorf("prepare command turn: %w", err)
	}
	args[0] = program
	return Launch{
		Args: args,
		Env: append(baseEnv(turn),
			EnvMCPToken+"="+turn.MCP.Token,
			EnvPromptFile+"="+promptPath,
			EnvMCPConfig+"="+configPath,
			EnvRuntimeSessionID+"="+turn.RuntimeSessionID,
		),
		Dir: turn.Workdir,
		Files: []File{
			{Path: promptPath, Contents: []byte(turn.Prompt)},
			{Path: configPath, Contents: config},
		},
	}, nil
}

// ParseLine implements Runtime: every line is text.
func (c *Command) ParseLine(line string) Event { return textEvent(line) }

// splitCommand splits a simple command into its words, removing quotes and
// backslashes as a POSIX shell would, and refuses anything a shell would
// expand or interpret. Nothing else happens: no tilde, brace or glob
// expansion, as no shell will run the words.
func splitCommand(template string) ([]string, error) {
	file, err := syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(strings.NewReader(template), "")
	if err != nil {
		return nil, err
	}
	if len(file.Stmts) != 1 {
		return nil, errors.New("want exactly one command; use sh -c '…' for a script")
	}
	stmt := file.Stmts[0]
	call, ok := stmt.Cmd.(*syntax.CallExpr)
	if !ok || len(stmt.Redirs) > 0 || stmt.Background || stmt.Negated || stmt.Coprocess || len(call.Assigns) > 0 {
		return nil, errors.New("want a plain command line (no pipes, redirections, assignments or &); use sh -c '…' for a script")
	}
	words := make([]string, 0, len(call.Args))
	for _, w := range call.Args {
		var b strings.Builder
		if err := unquote(&b, w.Parts, false); err != nil {
			return nil, err
		}
		words = append(words, b.String())
	}
	return words, nil
}

// unquote writes parts with their quotes removed, refusing any part a shell
// would expand.
func unquote(b *strings.Builder, parts []syntax.WordPart, inDouble bool) error {
	for _, part := range parts {
		switch p := part.(type) {
		case *syntax.Lit:
			unescape(b, p.Value, inDouble)
		case *syntax.SglQuoted: // never $'…': the POSIX parser reads that as "$" and '…', as dash does
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if err := unquote(b, p.Parts, true); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s at column %d would be expanded by a shell, and no shell runs the template; use sh -c '…' (with \"$%s\" and the like) if one should",
				partName(part), part.Pos().Col(), EnvPromptFile)
		}
	}
	return nil
}

// unescape removes backslashes as a shell does: before any character outside
// quotes, before $ ` " \ inside double quotes; a backslash-newline is a line
// continuation either way.
func unescape(b *strings.Builder, s string, inDouble bool) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		next := s[i+1]
		switch {
		case next == '\n':
			i++
		case !inDouble || strings.IndexByte("$`\"\\", next) >= 0:
			b.WriteByte(next)
			i++
		default:
			b.WriteByte(c)
		}
	}
}

func partName(p syntax.WordPart) string {
	switch p.(type) {
	case *syntax.ParamExp:
		return "a parameter expansion"
	case *syntax.CmdSubst:
		return "a command substitution"
	case *syntax.ArithmExp:
		return "an arithmetic expansion"
	case *syntax.ProcSubst:
		return "a process substitution"
	case *syntax.ExtGlob:
		return "a glob"
	default:
		return "shell syntax"
	}
}
