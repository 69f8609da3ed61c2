package github_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/app"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/github"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

// The client reads GitHub's documented answers: the pull request, its
// review comments page after page (only those after the last passed on),
// its conversation's comments after the last passed on, and its head
// commit's completed, failed check runs.
func TestReadPullRequest(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.Equal(t, "Bearer ghp_x", r.Header.Get("Authorization"))
		require.Equal(t, "application/vnd.github+json", r.Header.Get("Accept"))
		switch r.URL.Path {
		case "/repos/acme/app/pulls/7":
			_, _ = w.Write([]byte(`{"state":"open","merged":false,"mergeable":false,"mergeable_state":"dirty","head":{"sha":"abc"},"base":{"ref":"main"}}`))
		case "/repos/acme/app/pulls/7/comments":
			page, _ := strconv.Atoi(r.URL.Query().Get("page"))
			require.Equal(t, "created", r.URL.Query().Get("sort"))
			if page == 1 {
				w.Write([]byte("[")) //nolint:errcheck // a test's answer
				for i := 1; i <= 100; i++ {
					sep := ","
					if i == 100 {
						sep = ""
					}
					fmt.Fprintf(w, `{"id":%d,"body":"c%d","user":{"login":"u"},"path":"a.go","line":null}%s`, i, i, sep)
				}
				w.Write([]byte("]")) //nolint:errcheck // a test's answer
				return
			}
			_, _ = w.Write([]byte(`[{"id":101,"body":"last","user":{"login":"tadasant"},"path":"b.go","line":4,"html_url":"h"}]`))
		case "/repos/acme/app/issues/7/comments":
			require.Equal(t, "1", r.URL.Query().Get("page"))
			_, _ = w.Write([]byte(`[{"id":40,"body":"old","user":{"login":"u"}},{"id":41,"body":"LGTM","user":{"login":"tadasant"},"html_url":"i"}]`))
		case "/repos/acme/app/commits/abc/check-runs":
			_, _ = w.Write([]byte(`{"total_count":3,"check_runs":[
				{"id":1,"name":"test","status":"completed","conclusion":"failure","output":{"title":"2 failed","summary":"TestX"}},
				{"id":2,"name":"lint","status":"completed","conclusion":"success"},
				{"id":3,"name":"e2e","status":"in_progress","conclusion":null}]}`))
		case "/repos/acme/app/pulls/8":
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"message":"Not Found"}`))
		default:
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	t.Cleanup(srv.Close)
	c := github.NewClient(srv.URL, github.StaticToken("ghp_x"), 5*time.Second)

	r, err := c.ReadPullRequest(context.Background(), rules.PullRequestRef{Owner: "acme", Repo: "app", Number: 7}, 99, 40)
	require.NoError(t, err)
	require.Equal(t, "open", r.State)
	require.False(t, *r.Mergeable)
	require.Equal(t, "dirty", r.MergeableState)
	require.Equal(t, "main", r.BaseRef)
	require.Equal(t, []domain.ReviewComment{
		{ID: 100, Author: "u", Path: "a.go", Body: "c100"},
		{ID: 101, Author: "tadasant", Path: "b.go", Line: 4, Body: "last", HTMLURL: "h"},
	}, r.Comments, "only those after 99, across pages")
	require.Equal(t, []domain.IssueComment{{ID: 41, Author: "tadasant", Body: "LGTM", HTMLURL: "i"}}, r.IssueComments,
		"the conversation's comments after 40")
	require.Equal(t, []domain.CheckRun{{ID: 1, Name: "test", Conclusion: "failure", Title: "2 failed", Summary: "TestX"}}, r.FailedChecks)

	_, err = c.ReadPullRequest(context.Background(), rules.PullRequestRef{Owner: "acme", Repo: "app", Number: 8}, 0, 0)
	require.ErrorIs(t, err, app.ErrPullRequestGone)
	_, err = c.ReadPullRequest(context.Background(), rules.PullRequestRef{Owner: "acme", Repo: "app", Number: 9}, 0, 0)
	require.ErrorContains(t, err, "500")
	require.NotContains(t, err.Error(), "ghp_x", "the token is never in an error")
}
