package workspace

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

// Refusal says why Prepare refuses spec before git runs, in words for the
// session's failure_reason; "" when it does not. The shapes of git_root,
// branch and subdirectory are lifecycle's published rules, which refuse a
// session breaking them at create; they are read again here for a session
// stored before they existed. What a local git_root means on this node is
// the runner's own rule.
func (s Spec) Refusal() string {
	for _, f := range []struct {
		name, value string
		problem     func(string) string
	}{
		{"git_root", s.GitRoot, rules.GitRootProblem},
		{"git_root", s.GitRoot, relativeGitRootProblem},
		{"branch", s.Branch, rules.BranchProblem},
		{"subdirectory", s.Subdirectory, rules.SubdirectoryProblem},
	} {
		if p := f.problem(f.value); p != "" {
			return f.name + " " + p + "; " + createAgain
		}
	}
	return ""
}

const createAgain = "create the session again with a valid one"

func relativeGitRootProblem(root string) string {
	if isLocalPath(root) && !filepath.IsAbs(root) {
		return fmt.Sprintf("%q is a relative path, which means nothing on a runner node; give an absolute path or a URL", root)
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
