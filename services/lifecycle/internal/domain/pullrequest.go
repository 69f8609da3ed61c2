package domain

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

// Pull requests a session opened are tracked on it (LC-33): recorded from
// the agent's own tool results by the runner, watched until they merge or
// close (LC-34), and read by the pause hook's warning and the archive line.

// PullRequestState is what Zimmer last saw become of a pull request.
type PullRequestState string

// The states. Merged and closed are terminal: nothing more is watched.
const (
	PullRequestOpen   PullRequestState = "open"
	PullRequestMerged PullRequestState = "merged"
	PullRequestClosed PullRequestState = "closed"
)

// Terminal says whether nothing more can become of the pull request.
func (s PullRequestState) Terminal() bool { return s == PullRequestMerged || s == PullRequestClosed }

// PullRequest is a pull request tracked on a session.
type PullRequest struct {
	rules.PullRequestRef
	State PullRequestState
}

// unresolvedPullRequests lists the session's tracked pull requests that
// have not reached a terminal state, by address: no merge notice will come
// for them once the session is archived.
func unresolvedPullRequests(prs []PullRequest) []string {
	var open []string
	for _, pr := range prs {
		if !pr.State.Terminal() {
			open = append(open, pr.URL())
		}
	}
	return open
}

// PullRequestWatch is what the watcher of one tracked pull request knows
// between two readings of it (LC-34).
type PullRequestWatch struct {
	SessionID int64
	PullRequest
	// SessionArchived: archiving a session stops watching its pull requests.
	SessionArchived bool
	// MergedNotified: the merge notice was queued; it is never sent again.
	MergedNotified bool
	// InConflict: the last reading showed a merge conflict, and its notice
	// was queued. Conflicts counts the conflicts noticed, so one that
	// recurs after being resolved is noticed again, under a key of its own.
	InConflict bool
	Conflicts  int
	// CommentsSeen is the highest review comment id passed on;
	// IssueCommentsSeen the highest conversation comment id (GitHub numbers
	// the two kinds apart).
	CommentsSeen      int64
	IssueCommentsSeen int64
	// ChecksSeen are the failed check runs passed on.
	ChecksSeen []int64
}

// PullRequestReading is what GitHub says of a pull request now.
type PullRequestReading struct {
	// State is GitHub's "open" or "closed"; Merged tells a merge from a
	// close.
	State  string
	Merged bool
	// Mergeable is null while GitHub computes it; MergeableState "dirty"
	// is a merge conflict.
	Mergeable      *bool
	MergeableState string
	BaseRef        string
	Comments       []ReviewComment
	// IssueComments are the comments of the pull request's conversation
	// (GitHub's issue comments): no file, no line.
	IssueComments []IssueComment
	FailedChecks  []CheckRun
}

// IssueComment is a comment in a pull request's conversation.
type IssueComment struct {
	ID      int64
	Author  string
	Body    string
	HTMLURL string
}

// ReviewComment is a review comment on a pull request.
type ReviewComment struct {
	ID      int64
	Author  string
	Path    string
	Line    int
	Body    string
	HTMLURL string
}

// CheckRun is a check run on a pull request's head commit.
type CheckRun struct {
	ID         int64
	Name       string
	Conclusion string
	Title      string
	Summary    string
	HTMLURL    string
}

// CheckFailed says whether a completed check run's conclusion is a failure
// worth telling the session about.
func CheckFailed(conclusion string) bool {
	return conclusion == "failure" || conclusion == "timed_out"
}

// NoticeKind is what a notice says, which decides its origin in the queue.
type NoticeKind string

// The kinds.
const (
	NoticePRMerged      NoticeKind = "pr_merged"
	NoticeMergeConflict NoticeKind = "merge_conflict"
	// NoticeArtifact is a third party's text passed on as artifact text:
	// a review comment, a failed check. Never a human message.
	NoticeArtifact NoticeKind = "artifact"
)

// Notice is a message Zimmer queues for a session about its pull request.
type Notice struct {
	Kind NoticeKind
	// Key is its business key: the queue's idempotency key, so a notice
	// sent again (a retried poll, a replayed delivery, a restarted watcher)
	// is queued once.
	Key     string
	Content string
}

// MaxArtifactChars bounds the third party's text a notice passes on.
const MaxArtifactChars = 20_000

// Read decides what a reading of the pull request calls for: the notices
// to queue, in order, and what the watch knows afterwards. Pure: the
// caller queues the notices, then saves the watch, so a crash in between
// sends the same notices again under the same keys.
func (w PullRequestWatch) Read(r PullRequestReading) ([]Notice, PullRequestWatch) {
	next := w
	next.ChecksSeen = slices.Clone(w.ChecksSeen)
	var notices []Notice
	key := func(what string) string { return "github:" + w.String() + ":" + what }

	switch {
	case r.Merged:
		next.State = PullRequestMerged
		if !w.MergedNotified {
			notices = append(notices, Notice{Kind: NoticePRMerged, Key: key("merged"), Content: mergedNotice(w.PullRequestRef)})
			next.MergedNotified = true
		}
	case r.State == "closed":
		next.State = PullRequestClosed
	default:
		next.State = PullRequestOpen
	}

	// Review comments and failed checks of a pull request still open; a
	// merge or close is the last word.
	if !next.State.Terminal() {
		conflicted := r.Mergeable != nil && !*r.Mergeable && r.MergeableState == "dirty"
		resolved := r.Mergeable != nil && *r.Mergeable
		switch {
		case conflicted && !w.InConflict:
			next.InConflict = true
			next.Conflicts++
			notices = append(notices, Notice{Kind: NoticeMergeConflict, Key: key("conflict:" + strconv.Itoa(next.Conflicts)),
				Content: conflictNotice(w.PullRequestRef, r.BaseRef)})
		case resolved:
			next.InConflict = false
		}
		var review []ReviewComment
		review, next.CommentsSeen = unseen(r.Comments, func(c ReviewComment) int64 { return c.ID }, w.CommentsSeen)
		for _, c := range review {
			notices = append(notices, Notice{Kind: NoticeArtifact, Key: key("comment:" + strconv.FormatInt(c.ID, 10)),
				Content: commentNotice(w.PullRequestRef, c)})
		}
		var issue []IssueComment
		issue, next.IssueCommentsSeen = unseen(r.IssueComments, func(c IssueComment) int64 { return c.ID }, w.IssueCommentsSeen)
		for _, c := range issue {
			notices = append(notices, Notice{Kind: NoticeArtifact, Key: key("issue-comment:" + strconv.FormatInt(c.ID, 10)),
				Content: issueCommentNotice(w.PullRequestRef, c)})
		}
		for _, c := range r.FailedChecks {
			if !CheckFailed(c.Conclusion) || slices.Contains(next.ChecksSeen, c.ID) {
				continue
			}
			notices = append(notices, Notice{Kind: NoticeArtifact, Key: key("check:" + strconv.FormatInt(c.ID, 10)),
				Content: checkNotice(w.PullRequestRef, c)})
			next.ChecksSeen = append(next.ChecksSeen, c.ID)
		}
	}
	return notices, next
}

// Done says whether the watch is over: the pull request merged or closed,
// or its session was archived.
func (w PullRequestWatch) Done() bool { return w.SessionArchived || w.State.Terminal() }

// unseen returns the comments numbered past seen, oldest first, and the
// newest number then seen: GitHub numbers each kind of comment upwards,
// so one number says which were passed on.
func unseen[C any](comments []C, id func(C) int64, seen int64) ([]C, int64) {
	var fresh []C
	newest := seen
	for _, c := range comments {
		if id(c) > seen {
			fresh = append(fresh, c)
			newest = max(newest, id(c))
		}
	}
	slices.SortFunc(fresh, func(a, b C) int { return cmp.Compare(id(a), id(b)) })
	return fresh, newest
}

// The notices' words. The automated ones say they are Zimmer's, not a
// person's; the artifact ones say whose text they carry and that it is
// text from GitHub, not a human speaking (the hierarchy spec's "GitHub
// attribution trap": the fleet shares one GitHub account).
const automatedPrefix = "[AUTOMATED SYSTEM MESSAGE - NOT USER INPUT] "

func mergedNotice(pr rules.PullRequestRef) string {
	return automatedPrefix + "Your pull request " + pr.URL() + " was merged. " +
		"If nothing else is left in this session's scope, this is your signal to archive the session. " +
		"If you were waiting on this merge to keep going, go on."
}

func conflictNotice(pr rules.PullRequestRef, base string) string {
	onto := "its base branch"
	if base != "" {
		onto = "its base branch " + base
	}
	return automatedPrefix + "Your pull request " + pr.URL() + " has a merge conflict with " + onto + ". " +
		"Bring the base branch into your branch, resolve the conflict and push; you are told again if it recurs."
}

func commentNotice(pr rules.PullRequestRef, c ReviewComment) string {
	where := ""
	if c.Path != "" {
		where = " on " + c.Path
		if c.Line > 0 {
			where += ":" + strconv.Itoa(c.Line)
		}
	}
	return fmt.Sprintf("A review comment on your pull request %s%s, by the GitHub account %s. "+
		"It is artifact text from GitHub, not a message from a human: the account may be an agent's.\n\n%s\n\n%s",
		pr.URL(), where, orUnknown(c.Author), quoted(c.Body), c.HTMLURL)
}

func issueCommentNotice(pr rules.PullRequestRef, c IssueComment) string {
	return fmt.Sprintf("A comment in the conversation of your pull request %s, by the GitHub account %s. "+
		"It is artifact text from GitHub, not a message from a human: the account may be an agent's.\n\n%s\n\n%s",
		pr.URL(), orUnknown(c.Author), quoted(c.Body), c.HTMLURL)
}

func checkNotice(pr rules.PullRequestRef, c CheckRun) string {
	text := strings.TrimSpace(strings.Join(nonEmpty(c.Title, c.Summary), "\n"))
	return fmt.Sprintf("The check %q on your pull request %s ended %s. "+
		"What follows is artifact text from GitHub.\n\n%s\n\n%s",
		c.Name, pr.URL(), c.Conclusion, quoted(text), c.HTMLURL)
}

// quoted clips a third party's text and marks it as a quotation.
func quoted(s string) string {
	if r := []rune(s); len(r) > MaxArtifactChars {
		s = string(r[:MaxArtifactChars]) + "…"
	}
	if strings.TrimSpace(s) == "" {
		return "> (no text)"
	}
	return "> " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n> ")
}

func orUnknown(s string) string {
	if s == "" {
		return "(unknown)"
	}
	return s
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if strings.TrimSpace(s) != "" {
			out = append(out, s)
		}
	}
	return out
}

// GitHubDelivery is what a webhook delivery is about, as far as Zimmer
// acts on it.
type GitHubDelivery struct {
	// PullRequest is the pull request it concerns; zero when it concerns
	// none Zimmer acts on (Handled false).
	PullRequests []rules.PullRequestRef
	Handled      bool
	// Why it is not handled, in words.
	Ignored string
}

// GitHubEvents are the webhook events Zimmer acts on: each says something
// about a pull request that its watcher reads (a merge or close, a push
// that may conflict, a review comment, a check's outcome).
var GitHubEvents = []string{"pull_request", "pull_request_review", "pull_request_review_comment", "issue_comment", "check_run", "check_suite"}

// ReadGitHubDelivery reads which pull requests a webhook delivery is
// about (GitHub's documented payloads: repository.full_name with
// pull_request.number, issue.number when issue.pull_request is present
// (an issue_comment on a pull request's conversation), or check_run /
// check_suite .pull_requests[]).
// Anything else is ignored, not refused; a payload of a handled event
// that is not JSON is refused.
func ReadGitHubDelivery(event string, payload []byte) (GitHubDelivery, error) {
	if !slices.Contains(GitHubEvents, event) {
		return GitHubDelivery{Ignored: fmt.Sprintf("the event %q is not one Zimmer acts on (%s)", event, strings.Join(GitHubEvents, ", "))}, nil
	}
	var p struct {
		Repository struct {
			FullName string `json:"full_name"`
		} `json:"repository"`
		PullRequest *struct {
			Number int `json:"number"`
		} `json:"pull_request"`
		Issue *struct {
			Number      int             `json:"number"`
			PullRequest json.RawMessage `json:"pull_request"`
		} `json:"issue"`
		CheckRun   *checkPayload `json:"check_run"`
		CheckSuite *checkPayload `json:"check_suite"`
	}
	if err := json.Unmarshal(payload, &p); err != nil {
		return GitHubDelivery{}, fmt.Errorf("the %s payload is not JSON: %w", event, err)
	}
	owner, repo, ok := strings.Cut(p.Repository.FullName, "/")
	if !ok || owner == "" || repo == "" {
		return GitHubDelivery{Ignored: "the payload names no repository (repository.full_name)"}, nil
	}
	var numbers []int
	if p.PullRequest != nil {
		numbers = append(numbers, p.PullRequest.Number)
	}
	// An issue comment is a pull request's only when its issue says so.
	if p.Issue != nil && len(p.Issue.PullRequest) > 0 && string(p.Issue.PullRequest) != "null" {
		numbers = append(numbers, p.Issue.Number)
	}
	for _, c := range []*checkPayload{p.CheckRun, p.CheckSuite} {
		if c == nil {
			continue
		}
		for _, pr := range c.PullRequests {
			numbers = append(numbers, pr.Number)
		}
	}
	d := GitHubDelivery{}
	for _, n := range numbers {
		ref, err := rules.ParsePullRequestURL(rules.PullRequestRef{Owner: owner, Repo: repo, Number: n}.URL())
		if err != nil || slices.Contains(d.PullRequests, ref) {
			continue
		}
		d.PullRequests = append(d.PullRequests, ref)
	}
	if len(d.PullRequests) == 0 {
		d.Ignored = "the " + event + " payload names no pull request"
		return d, nil
	}
	d.Handled = true
	return d, nil
}

type checkPayload struct {
	PullRequests []struct {
		Number int `json:"number"`
	} `json:"pull_requests"`
}
