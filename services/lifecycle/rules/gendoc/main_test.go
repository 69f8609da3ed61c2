package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCommittedPageIsCurrent fails while docs/state-machine.md is not what
// the table renders: run `make docs` and commit the page.
func TestCommittedPageIsCurrent(t *testing.T) {
	t.Parallel()

	committed, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "docs", "state-machine.md"))
	require.NoError(t, err)
	require.Equal(t, render(), string(committed), "docs/state-machine.md is stale: run make docs and commit it")
}
