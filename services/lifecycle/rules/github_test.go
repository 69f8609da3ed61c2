package rules_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

func TestParsePullRequestURL(t *testing.T) {
	t.Parallel()
	pr, err := rules.ParsePullRequestURL(" https://github.com/tadasant/strad/pull/152\n")
	require.NoError(t, err)
	require.Equal(t, rules.PullRequestRef{Owner: "tadasant", Repo: "strad", Number: 152}, pr)
	require.Equal(t, "https://github.com/tadasant/strad/pull/152", pr.URL())
	require.Equal(t, "tadasant/strad#152", pr.String())
	for _, bad := range []string{
		"", "see https://github.com/a/b/pull/1", "https://github.com/a/b/pull/1 now", "https://github.com/a/b/pull/0",
		"https://github.com/a/b/issues/1", "http://github.com/a/b/pull/1", "https://gitlab.com/a/b/pull/1",
		"https://github.com/a/b/pull/99999999999", "https://github.com/-a/b/pull/1",
	} {
		_, err := rules.ParsePullRequestURL(bad)
		require.Error(t, err, bad)
	}
}

// FuzzParsePullRequestURL: whatever parses prints back as itself.
func FuzzParsePullRequestURL(f *testing.F) {
	f.Add("https://github.com/acme/app/pull/7")
	f.Add("https://github.com/a/b/pull/2147483648")
	f.Fuzz(func(t *testing.T, s string) {
		pr, err := rules.ParsePullRequestURL(s)
		if err != nil {
			return
		}
		back, err := rules.ParsePullRequestURL(pr.URL())
		require.NoError(t, err)
		require.Equal(t, pr, back)
		require.Len(t, rules.PullRequestURLLines(pr.URL()), 1)
	})
}
