package domain_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/runner/internal/domain"
)

func TestCreatesPullRequest(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		tool, input string
		want        bool
	}{
		{"Bash", `{"command":"gh pr create --fill --base main"}`, true},
		{"Bash", `{"command":"git push -u origin HEAD && gh pr create --title \"Fix\" --body \"…\""}`, true},
		{"shell", `{"command":["bash","-lc","gh pr create --fill"]}`, true},
		{"Bash", `{"command":"gh api repos/acme/app/pulls -f title=Fix -f head=fix -f base=main"}`, true},
		{"Bash", `{"command":"curl -X POST https://api.github.com/repos/acme/app/pulls -d @pr.json"}`, true},
		{"mcp__github__create_pull_request", `{"owner":"acme","repo":"app","title":"Fix"}`, true},
		{"Bash", `{"command":"gh pr view 7"}`, false},
		{"Bash", `{"command":"gh pr list"}`, false},
		{"Bash", `{"command":"echo https://github.com/acme/app/pull/7"}`, false},
		{"Read", `{"file_path":"/tmp/gh pr create"}`, false},
		{"Bash", `not json`, false},
	} {
		require.Equal(t, tc.want, domain.CreatesPullRequest(tc.tool, []byte(tc.input)), "%s %s", tc.tool, tc.input)
	}
}

func TestCreatedPullRequests(t *testing.T) {
	t.Parallel()
	pr7 := rules.PullRequestRef{Owner: "acme", Repo: "app", Number: 7}
	// gh pr create: its progress on stderr, the URL alone on stdout.
	require.Equal(t, []rules.PullRequestRef{pr7},
		domain.CreatedPullRequests("\nCreating pull request for fix into main in acme/app\n\nhttps://github.com/acme/app/pull/7\n"))
	// The API's answer.
	require.Equal(t, []rules.PullRequestRef{pr7},
		domain.CreatedPullRequests(`{"number":7,"html_url":"https://github.com/acme/app/pull/7","body":"follows https://github.com/acme/app/pull/3"}`))
	// A URL inside a sentence is not the created PR.
	require.Empty(t, domain.CreatedPullRequests("a pull request for fix already exists: https://github.com/acme/app/pull/3 (closed)"))
	require.Empty(t, domain.CreatedPullRequests(`{"message":"Validation Failed"}`))
}

// A turn's calls: only a creating call's successful result records, once.
func TestPullRequestCalls(t *testing.T) {
	t.Parallel()
	var p domain.PullRequestCalls
	url := "https://github.com/acme/app/pull/7"
	p.Called("t1", "Bash", []byte(`{"command":"gh pr view 7"}`))
	require.Empty(t, p.Returned("t1", url, false), "a call that only reads a PR")
	p.Called("t2", "Bash", []byte(`{"command":"gh pr create --fill"}`))
	require.Empty(t, p.Returned("t2", url, true), "a failed creation")
	p.Called("t3", "Bash", []byte(`{"command":"gh pr create --fill"}`))
	require.Empty(t, p.Returned("t9", url, false), "another call's result")
	require.Len(t, p.Returned("t3", url, false), 1)
	require.Empty(t, p.Returned("t3", url, false), "each result once")
}
