package rules_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

// One rule for the page size a list answers and how many pages it spans,
// read by the sessions' list and the queue's.
func TestPages(t *testing.T) {
	t.Parallel()
	for requested, want := range map[int]int{0: rules.DefaultPerPage, -3: 1, 1: 1, 100: 100, 101: rules.MaxPerPage} {
		require.Equal(t, want, rules.PerPage(requested), "per_page %d", requested)
	}
	for _, c := range []struct {
		total   int64
		perPage int
		want    int
	}{{0, 25, 0}, {1, 25, 1}, {25, 25, 1}, {26, 25, 2}, {100, 0, 0}} {
		require.Equal(t, c.want, rules.TotalPages(c.total, c.perPage), "%d at %d a page", c.total, c.perPage)
	}
}
