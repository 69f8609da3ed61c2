package rules

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// GitHub pull requests a session opens are tracked on it (lifecycle owns
// them, LC-33). This is the one pattern of a pull request's address, as
// GitHub prints it (`gh pr create`'s stdout, the API's html_url):
// https://github.com/<owner>/<repo>/pull/<number>. The runner finds the
// addresses in a tool's result with it; lifecycle parses what it records
// with it.
var pullRequestURL = regexp.MustCompile(`https://github\.com/([A-Za-z0-9][A-Za-z0-9-]{0,38})/([A-Za-z0-9._-]{1,100})/pull/([1-9][0-9]{0,9})\b`)

// MaxPullRequestNumber bounds a pull request's number (GitHub's are int32).
const MaxPullRequestNumber = 1<<31 - 1

// PullRequestRef names one pull request.
type PullRequestRef struct {
	Owner  string
	Repo   string
	Number int
}

// Repository is "owner/repo".
func (r PullRequestRef) Repository() string { return r.Owner + "/" + r.Repo }

// URL is the pull request's address on github.com.
func (r PullRequestRef) URL() string {
	return "https://github.com/" + r.Repository() + "/pull/" + strconv.Itoa(r.Number)
}

// String is "owner/repo#number", GitHub's own short form.
func (r PullRequestRef) String() string { return r.Repository() + "#" + strconv.Itoa(r.Number) }

// ParsePullRequestURL reads a pull request's address, and nothing else:
// surrounding space is allowed, any other text is not.
func ParsePullRequestURL(s string) (PullRequestRef, error) {
	s = strings.TrimSpace(s)
	m := pullRequestURL.FindStringSubmatchIndex(s)
	if m == nil || m[0] != 0 || m[1] != len(s) {
		return PullRequestRef{}, fmt.Errorf("%q is not a GitHub pull request address (https://github.com/<owner>/<repo>/pull/<number>)", clipForError(s))
	}
	return refOf(s, m)
}

// PullRequestURLLines reads the lines of text that are a pull request's
// address and nothing else (`gh pr create` prints the new pull request's
// address alone on its last line); an address inside a sentence is not
// one. Each pull request once, in order.
func PullRequestURLLines(text string) []PullRequestRef {
	var out []PullRequestRef
	seen := map[PullRequestRef]bool{}
	for _, line := range strings.Split(text, "\n") {
		ref, err := ParsePullRequestURL(line)
		if err != nil || seen[ref] {
			continue
		}
		seen[ref] = true
		out = append(out, ref)
	}
	return out
}

func refOf(s string, m []int) (PullRequestRef, error) {
	n, err := strconv.Atoi(s[m[6]:m[7]])
	if err != nil || n > MaxPullRequestNumber {
		return PullRequestRef{}, fmt.Errorf("pull request number %q is out of range (1–%d)", s[m[6]:m[7]], MaxPullRequestNumber)
	}
	return PullRequestRef{Owner: s[m[2]:m[3]], Repo: s[m[4]:m[5]], Number: n}, nil
}

func clipForError(s string) string {
	const limit = 200
	if r := []rune(s); len(r) > limit {
		return string(r[:limit]) + "…"
	}
	return s
}
