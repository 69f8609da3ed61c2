package domain

import (
	"encoding/json"
	"regexp"
	"strings"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

// A session's pull requests are the ones its agent's own tools opened
// (RN-34): a call that creates one, and the address its result reports.
// An address the agent merely writes, or one a tool merely read, records
// nothing: the spec's GithubPrUrlHook "only records a PR it can see the
// session open".

// prCreatingCommand matches a shell command that opens a pull request:
// `gh pr create`, or a POST to the pulls API through `gh api` or curl.
var prCreatingCommand = regexp.MustCompile(`\bgh\s+pr\s+create\b|\bgh\s+api\b[^\n|;&]*\brepos/[^/\s]+/[^/\s]+/pulls\b|\bcurl\b[^\n|;&]*api\.github\.com/repos/[^/\s]+/[^/\s]+/pulls\b`)

// CreatesPullRequest says whether a tool call (its name and JSON input)
// opens a pull request: a shell tool running such a command (Claude Code's
// Bash, Codex's shell, whose command is a string or an argv), or a GitHub
// MCP server's create_pull_request tool.
func CreatesPullRequest(tool string, input []byte) bool {
	if strings.HasSuffix(tool, "create_pull_request") {
		return true
	}
	var in struct {
		Command json.RawMessage `json:"command"`
		Cmd     json.RawMessage `json:"cmd"`
	}
	if json.Unmarshal(input, &in) != nil {
		return false
	}
	for _, raw := range []json.RawMessage{in.Command, in.Cmd} {
		if cmd := commandText(raw); cmd != "" && prCreatingCommand.MatchString(cmd) {
			return true
		}
	}
	return false
}

// commandText is a command given as a string or as an argv.
func commandText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var argv []string
	if json.Unmarshal(raw, &argv) == nil {
		return strings.Join(argv, " ")
	}
	return ""
}

// CreatedPullRequests reads the pull requests a creating call's result
// reports: the API's answer (a JSON object whose html_url is the new pull
// request), or `gh pr create`'s output, whose line holding nothing but an
// address is the new pull request. An address inside other text is not
// one: it may name a pull request the command only mentions.
func CreatedPullRequests(result string) []rules.PullRequestRef {
	var answer struct {
		HTMLURL string `json:"html_url"`
	}
	if json.Unmarshal([]byte(strings.TrimSpace(result)), &answer) == nil {
		if ref, err := rules.ParsePullRequestURL(answer.HTMLURL); err == nil {
			return []rules.PullRequestRef{ref}
		}
		return nil
	}
	return rules.PullRequestURLLines(result)
}

// PullRequestCalls follows one turn's tool calls and results, in transcript
// order, and says which pull requests the turn's tools opened.
type PullRequestCalls struct {
	creating map[string]bool
}

// Called notes a tool call.
func (p *PullRequestCalls) Called(id, tool string, input []byte) {
	if id == "" || !CreatesPullRequest(tool, input) {
		return
	}
	if p.creating == nil {
		p.creating = map[string]bool{}
	}
	p.creating[id] = true
}

// Returned reads a tool result: the pull requests it reports, when it
// answers a creating call and did not fail.
func (p *PullRequestCalls) Returned(toolUseID, text string, isError bool) []rules.PullRequestRef {
	if !p.creating[toolUseID] {
		return nil
	}
	delete(p.creating, toolUseID)
	if isError {
		return nil
	}
	return CreatedPullRequests(text)
}
