package rules

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// What a session's clone is made from and what runs in it: the shape of
// git_root, branch, subdirectory and agent_runtime. Lifecycle refuses a
// session that breaks one at create, naming the field; the runner reads
// the same rules before git runs, for a session stored before they existed.
// Each problem function answers "" when the value is acceptable, else why
// not, in words that follow the field's name ("git_root " + problem).

// The agent runtimes a session may name in agent_runtime; "" is the
// runner's default (RUNNER_DEFAULT_RUNTIME).
const (
	RuntimeClaudeCode = "claude_code"
	RuntimeCodex      = "codex"
	RuntimeCommand    = "command"
	RuntimeDemo       = "demo"
)

// AgentRuntimes lists the runtime names, sorted.
func AgentRuntimes() []string {
	return []string{RuntimeClaudeCode, RuntimeCodex, RuntimeCommand, RuntimeDemo}
}

// AgentRuntimeProblem says what is wrong with agent_runtime.
func AgentRuntimeProblem(name string) string {
	if name == "" || slices.Contains(AgentRuntimes(), name) {
		return ""
	}
	return fmt.Sprintf("%s is not an agent runtime; use one of %s, or omit it for the runner's default",
		quote(name), strings.Join(AgentRuntimes(), ", "))
}

// GitRootProblem says what is wrong with git_root: a URL, an scp-like
// address (host:path) or a path on the runner node — nothing that git would
// read as an option, and no transport that runs a command. What a path
// means (relative, or inside Zimmer's own data folders) only the runner
// node can say; it refuses those before git runs.
func GitRootProblem(root string) string {
	switch {
	case strings.TrimSpace(root) == "":
		return "is empty: there is no repository to clone"
	case root != strings.TrimSpace(root):
		return fmt.Sprintf("%s has leading or trailing spaces", quote(root))
	case strings.HasPrefix(root, "-"):
		return fmt.Sprintf("%s starts with '-', which git would read as an option; give a URL or an absolute path", quote(root))
	case hasControl(root):
		return fmt.Sprintf("%s contains a control character", quote(root))
	case strings.HasPrefix(root, "ext::") || strings.HasPrefix(root, "fd::"):
		return fmt.Sprintf("%s uses git's ext:: or fd:: transport, which runs a command or reads a descriptor; give a URL or an absolute path", quote(root))
	}
	return ""
}

// BranchProblem says what is wrong with branch: "" is the repository's
// default branch, anything else must be a name git accepts for a branch or
// a tag (git check-ref-format --branch).
func BranchProblem(branch string) string {
	bad := func(why string) string {
		return fmt.Sprintf("%s %s, which no git branch or tag name can; give a name like main or release/1.2", quote(branch), why)
	}
	switch {
	case branch == "":
		return ""
	case strings.HasPrefix(branch, "-"):
		return bad("starts with '-'")
	case branch == "@":
		return bad("is '@'")
	case strings.IndexFunc(branch, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return bad("contains a space or control character")
	case strings.ContainsAny(branch, "~^:?*[\\"):
		return bad(`contains one of ~ ^ : ? * [ \`)
	case strings.Contains(branch, ".."):
		return bad("contains '..'")
	case strings.Contains(branch, "@{"):
		return bad("contains '@{'")
	case strings.HasPrefix(branch, "/") || strings.HasSuffix(branch, "/") || strings.Contains(branch, "//"):
		return bad("has an empty path component (a leading, trailing or doubled '/')")
	case strings.HasSuffix(branch, "."):
		return bad("ends with '.'")
	}
	for _, part := range strings.Split(branch, "/") {
		switch {
		case strings.HasPrefix(part, "."):
			return bad("has a path component starting with '.'")
		case strings.HasSuffix(part, ".lock"):
			return bad("has a path component ending in .lock")
		}
	}
	return ""
}

// SubdirectoryProblem says what is wrong with subdirectory: "" is the
// repository's root, anything else a relative path that stays inside the
// clone, outside git's own .git.
func SubdirectoryProblem(sub string) string {
	const like = "; it must be a path inside the repository, like services/api"
	switch {
	case sub == "":
		return ""
	case hasControl(sub):
		return fmt.Sprintf("%s contains a control character", quote(sub))
	case strings.HasPrefix(sub, "/") || strings.HasPrefix(sub, `\`):
		return fmt.Sprintf("%s is an absolute path%s", quote(sub), like)
	case strings.Contains(sub, `\`):
		return fmt.Sprintf("%s contains a backslash; separate its parts with '/'%s", quote(sub), like)
	}
	clean := path.Clean(sub)
	switch {
	case clean == ".." || strings.HasPrefix(clean, "../"):
		return fmt.Sprintf("%s leads out of the repository%s", quote(sub), like)
	case clean == ".git" || strings.HasPrefix(clean, ".git/"):
		return fmt.Sprintf("%s is inside .git, git's own data, not the repository's files%s", quote(sub), like)
	}
	return ""
}

func hasControl(s string) bool { return strings.IndexFunc(s, unicode.IsControl) >= 0 }

// quote shows a caller's value in a reason, cut to 100 characters.
func quote(s string) string {
	if r := []rune(s); len(r) > 100 {
		s = string(r[:100]) + PreviewEllipsis
	}
	return strconv.QuoteToASCII(s)
}
