package workspace

import (
	"fmt"
	"path/filepath"
	"strings"
	"unicode"
)

// Refusal says why Prepare refuses spec before git runs, in words for the
// session's failure_reason; "" when it does not. Lifecycle stores these
// fields as text; only the runner knows what git and the disk make of them.
func (s Spec) Refusal() string {
	if r := gitRootRefusal(s.GitRoot); r != "" {
		return r
	}
	if r := branchRefusal(s.Branch); r != "" {
		return r
	}
	return subdirectoryRefusal(s.Subdirectory)
}

const createAgain = "create the session again with a valid one"

func gitRootRefusal(root string) string {
	switch {
	case strings.TrimSpace(root) == "":
		return "git_root is empty: there is no repository to clone; " + createAgain
	case root != strings.TrimSpace(root):
		return fmt.Sprintf("git_root %q has leading or trailing spaces; %s", root, createAgain)
	case strings.HasPrefix(root, "-"):
		return fmt.Sprintf("git_root %q starts with '-', which git would read as an option; %s", root, createAgain)
	case hasControl(root):
		return fmt.Sprintf("git_root %q contains a control character; %s", root, createAgain)
	case isLocalPath(root) && !filepath.IsAbs(root):
		return fmt.Sprintf("git_root %q is a relative path, which means nothing on a runner node; "+
			"give an absolute path or a URL; %s", root, createAgain)
	}
	return ""
}

// isLocalPath follows git's reading of a clone source: a URL has "://", an
// scp-like address a ':' before any '/', anything else is a path.
func isLocalPath(root string) bool {
	if strings.Contains(root, "://") {
		return false
	}
	colon, slash := strings.IndexByte(root, ':'), strings.IndexByte(root, '/')
	return colon <= 0 || (slash >= 0 && slash < colon)
}

func branchRefusal(branch string) string {
	switch {
	case branch == "":
		return ""
	case strings.HasPrefix(branch, "-"):
		return fmt.Sprintf("branch %q starts with '-', which no branch name can; %s", branch, createAgain)
	case strings.IndexFunc(branch, unicode.IsSpace) >= 0 || hasControl(branch):
		return fmt.Sprintf("branch %q contains a space or control character, which no branch name can; %s", branch, createAgain)
	}
	return ""
}

func subdirectoryRefusal(sub string) string {
	switch {
	case sub == "":
		return ""
	case hasControl(sub):
		return fmt.Sprintf("subdirectory %q contains a control character; %s", sub, createAgain)
	case strings.HasPrefix(sub, "/") || filepath.IsAbs(sub):
		return fmt.Sprintf("subdirectory %q is an absolute path; it must be a path inside the repository, "+
			"like services/api; %s", sub, createAgain)
	case !filepath.IsLocal(filepath.FromSlash(sub)):
		return fmt.Sprintf("subdirectory %q leads out of the repository; it must be a path inside it, "+
			"like services/api; %s", sub, createAgain)
	case strings.SplitN(filepath.ToSlash(filepath.Clean(sub)), "/", 2)[0] == ".git":
		return fmt.Sprintf("subdirectory %q is inside .git, git's own data, not the repository's files; %s", sub, createAgain)
	}
	return ""
}

func hasControl(s string) bool { return strings.IndexFunc(s, unicode.IsControl) >= 0 }
