package domain_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

func trackedPR(n int, state domain.PullRequestState) domain.PullRequest {
	return domain.PullRequest{PullRequestRef: rules.PullRequestRef{Owner: "acme", Repo: "app", Number: n}, State: state}
}

func ptrBool(b bool) *bool { return &b }

func keys(ns []domain.Notice) []string {
	out := []string{}
	for _, n := range ns {
		out = append(out, string(n.Kind)+" "+n.Key)
	}
	return out
}

// A recorded PR silences the pause hook's warning (its goal check and its
// once-per-session dedup are the pause's own test's).
func TestARecordedPullRequestSilencesTheWarning(t *testing.T) {
	t.Parallel()
	s := session(domain.StatusRunning)
	s.Goal = "open a pull request and wait for it to merge"
	s.PullRequests = []domain.PullRequest{trackedPR(7, domain.PullRequestOpen)}
	out, err := domain.Apply(s, domain.Command{Event: domain.EventPause}, env())
	require.NoError(t, err)
	for _, l := range out.Timeline {
		require.NotContains(t, l.Message, "no PR URL")
	}
	require.False(t, out.Session.Markers.PRURLWarned)
}

// The watcher's decisions, reading after reading: a merge is noticed
// once; a conflict once per episode; each new review comment and failed
// check once, as artifact text; nothing after the merge.
func TestAWatchNoticesEachChangeOnce(t *testing.T) {
	t.Parallel()
	w := domain.PullRequestWatch{SessionID: 3, PullRequest: trackedPR(7, domain.PullRequestOpen)}
	read := func(r domain.PullRequestReading) []string {
		t.Helper()
		ns, next := w.Read(r)
		w = next
		return keys(ns)
	}
	open := domain.PullRequestReading{State: "open", Mergeable: ptrBool(true), MergeableState: "clean"}
	require.Empty(t, read(open))
	require.Empty(t, read(domain.PullRequestReading{State: "open"}), "mergeable still being computed")

	conflict := domain.PullRequestReading{State: "open", Mergeable: ptrBool(false), MergeableState: "dirty", BaseRef: "main"}
	require.Equal(t, []string{"merge_conflict github:acme/app#7:conflict:1"}, read(conflict))
	require.Empty(t, read(conflict), "the same conflict is noticed once")
	require.Empty(t, read(domain.PullRequestReading{State: "open"}), "unknown is not resolved")
	require.Empty(t, read(open))
	require.Equal(t, []string{"merge_conflict github:acme/app#7:conflict:2"}, read(conflict), "a conflict that recurs is noticed again")

	commented := open
	commented.Comments = []domain.ReviewComment{{ID: 12, Author: "tadasant", Body: "nit: rename this", Path: "a.go", Line: 3}, {ID: 10, Body: "first"}}
	commented.FailedChecks = []domain.CheckRun{{ID: 99, Name: "test", Conclusion: "failure"}, {ID: 98, Name: "lint", Conclusion: "success"}}
	require.Equal(t, []string{"artifact github:acme/app#7:comment:10", "artifact github:acme/app#7:comment:12", "artifact github:acme/app#7:check:99"},
		read(commented))
	require.Empty(t, read(commented), "comments and checks are passed on once")

	// The conversation's comments are numbered apart from the review
	// comments: an id below CommentsSeen is still new.
	talked := commented
	talked.IssueComments = []domain.IssueComment{{ID: 5, Author: "tadasant", Body: "LGTM once CI is green"}, {ID: 3, Body: "why?"}}
	require.Equal(t, []string{"artifact github:acme/app#7:issue-comment:3", "artifact github:acme/app#7:issue-comment:5"}, read(talked))
	require.Empty(t, read(talked), "a conversation comment is passed on once")

	merged := domain.PullRequestReading{State: "closed", Merged: true, Comments: []domain.ReviewComment{{ID: 13}}}
	require.Equal(t, []string{"pr_merged github:acme/app#7:merged"}, read(merged))
	require.True(t, w.Done())
	require.Equal(t, domain.PullRequestMerged, w.State)
	require.Empty(t, read(merged), "the merge is noticed once")
}

// The notices' words: automated notices say they are Zimmer's; a comment
// is artifact text that names its account and never claims a human.
func TestNoticeWords(t *testing.T) {
	t.Parallel()
	w := domain.PullRequestWatch{SessionID: 3, PullRequest: trackedPR(7, domain.PullRequestOpen)}
	ns, _ := w.Read(domain.PullRequestReading{State: "open", Comments: []domain.ReviewComment{{ID: 1, Author: "tadasant", Body: "line one\nline two"}}})
	require.Len(t, ns, 1)
	require.Contains(t, ns[0].Content, "artifact text from GitHub, not a message from a human")
	require.Contains(t, ns[0].Content, "> line one\n> line two")
	ns, _ = w.Read(domain.PullRequestReading{State: "open", IssueComments: []domain.IssueComment{{ID: 4, Author: "tadasant", Body: "ship it", HTMLURL: "u"}}})
	require.Len(t, ns, 1)
	require.Equal(t, domain.NoticeArtifact, ns[0].Kind, "a caller's message, never a human's")
	require.Contains(t, ns[0].Content, "A comment in the conversation of your pull request https://github.com/acme/app/pull/7, by the GitHub account tadasant.")
	require.Contains(t, ns[0].Content, "artifact text from GitHub, not a message from a human")
	require.Contains(t, ns[0].Content, "> ship it")
	ns, _ = w.Read(domain.PullRequestReading{State: "closed", Merged: true})
	require.Contains(t, ns[0].Content, "[AUTOMATED SYSTEM MESSAGE - NOT USER INPUT] Your pull request https://github.com/acme/app/pull/7 was merged.")
	require.Contains(t, ns[0].Content, "signal to archive")
}

func TestReadGitHubDelivery(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		event, payload string
		want           []int
		ignored        string
	}{
		{"pull_request", `{"action":"closed","number":7,"pull_request":{"number":7,"merged":true},"repository":{"full_name":"acme/app"}}`, []int{7}, ""},
		{"pull_request_review_comment", `{"action":"created","pull_request":{"number":8},"repository":{"full_name":"acme/app"}}`, []int{8}, ""},
		{"issue_comment", `{"action":"created","issue":{"number":7,"pull_request":{"url":"u"}},"comment":{"id":1},"repository":{"full_name":"acme/app"}}`, []int{7}, ""},
		{"issue_comment", `{"action":"created","issue":{"number":6},"comment":{"id":1},"repository":{"full_name":"acme/app"}}`, nil, "names no pull request"},
		{"check_run", `{"action":"completed","check_run":{"pull_requests":[{"number":7},{"number":9},{"number":7}]},"repository":{"full_name":"acme/app"}}`, []int{7, 9}, ""},
		{"check_suite", `{"check_suite":{"pull_requests":[]},"repository":{"full_name":"acme/app"}}`, nil, "names no pull request"},
		{"push", `{"ref":"refs/heads/main","repository":{"full_name":"acme/app"}}`, nil, "not one Zimmer acts on"},
		{"issues", `not json`, nil, "not one Zimmer acts on"},
		{"pull_request", `{"pull_request":{"number":7}}`, nil, "names no repository"},
		{"pull_request", `{"pull_request":{"number":-1},"repository":{"full_name":"acme/app"}}`, nil, "names no pull request"},
	} {
		d, err := domain.ReadGitHubDelivery(tc.event, []byte(tc.payload))
		require.NoError(t, err, tc.payload)
		var got []int
		for _, pr := range d.PullRequests {
			require.Equal(t, "acme/app", pr.Repository())
			got = append(got, pr.Number)
		}
		require.Equal(t, tc.want, got, tc.payload)
		require.Equal(t, tc.want != nil, d.Handled, tc.payload)
		if tc.ignored != "" {
			require.Contains(t, d.Ignored, tc.ignored)
		}
	}
	_, err := domain.ReadGitHubDelivery("pull_request", []byte("{"))
	require.ErrorContains(t, err, "not JSON")
}

// FuzzReadGitHubDelivery: a delivery never panics, and a handled one
// names only pull requests whose address parses back to themselves.
func FuzzReadGitHubDelivery(f *testing.F) {
	f.Add("pull_request", []byte(`{"pull_request":{"number":7},"repository":{"full_name":"acme/app"}}`))
	f.Add("check_run", []byte(`{"check_run":{"pull_requests":[{"number":1}]},"repository":{"full_name":"a/b/c"}}`))
	f.Add("pull_request", []byte(`{"pull_request":{"number":99999999999},"repository":{"full_name":"-x/y"}}`))
	f.Fuzz(func(t *testing.T, event string, payload []byte) {
		d, err := domain.ReadGitHubDelivery(event, payload)
		if err != nil {
			return
		}
		require.Equal(t, d.Handled, len(d.PullRequests) > 0)
		for _, pr := range d.PullRequests {
			back, err := rules.ParsePullRequestURL(pr.URL())
			require.NoError(t, err)
			require.Equal(t, pr, back)
		}
	})
}
