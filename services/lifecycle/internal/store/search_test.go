package store_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
)

// The free-text query finds a session by its title, prompt, slug or notes
// (quick_search_sessions' q), case-insensitively, and keeps the status
// filter: a search never widens what the statuses select.
func TestListQuerySearchesTitlePromptSlugAndNotes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	for _, n := range []domain.NewSession{
		{Title: "Release router", Prompt: "coordinate the release", Slug: "release-router"},
		{Title: "Flaky test", Prompt: "fix the flaky widget test", Slug: "flaky"},
		{Title: "Docs", Prompt: "write the docs"},
	} {
		n.GitRoot = "g"
		_, err := b.sessions.Create.Handle(ctx, n)
		require.NoError(t, err)
	}
	_, err := b.pool.Exec(ctx, `UPDATE sessions SET notes = 'waiting on the Kubernetes upgrade' WHERE title = 'Docs'`)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `UPDATE sessions SET status = $1 WHERE title = 'Flaky test'`, domain.StatusNeedsInput)
	require.NoError(t, err)

	search := func(q string, statuses ...string) []string {
		t.Helper()
		page, err := b.sessions.List.Handle(ctx, domain.ListRequest{Query: q, Statuses: statuses})
		require.NoError(t, err)
		titles := []string{}
		for _, s := range page.Sessions {
			titles = append(titles, s.Title)
		}
		return titles
	}
	require.Equal(t, []string{"Release router"}, search("ROUTER"), "title")
	require.Equal(t, []string{"Flaky test"}, search("widget"), "prompt")
	require.Equal(t, []string{"Release router"}, search("release-r"), "slug")
	require.Equal(t, []string{"Docs"}, search("kubernetes"), "notes")
	require.Equal(t, []string{"Flaky test"}, search("flaky"), "title and slug, listed once")
	require.Empty(t, search("flaky", "waiting"), "the status filter still holds")
	require.Equal(t, []string{"Flaky test"}, search("flaky", "needs_input"))
	require.Empty(t, search("nothing like it"))
}
