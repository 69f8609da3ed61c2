package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/platform/pgtest"
	"github.com/zimmerhq/zimmer/services/runner/internal/store"
	"github.com/zimmerhq/zimmer/services/runner/internal/transcript"
)

func TestLatestLinesAreEachSessionsNewest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newTranscripts(t, transcript.DefaultLimits)
	appendAll(t, s, 1, "t1", "a", "b")
	appendAll(t, s, 2, "u1", "only")
	appendAll(t, s, 1, "t2", "c", "d")
	appendAll(t, s, 3, "v1", "x")

	lines, err := s.LatestLines(ctx, []int64{1, 2, 4})
	require.NoError(t, err)
	got := map[int64]string{}
	for _, l := range lines {
		got[l.SessionID] = l.TurnID + ":" + l.Text
	}
	require.Equal(t, map[int64]string{1: "t2:d", 2: "u1:only"}, got, "the newest turn's last line; none for a session without one")
}

// The transcript search finds the sessions whose lines hold the words as a
// phrase, the newest match first, bounded by limit; and the planner answers
// it from the full-text index, never by reading every line.
func TestSearchSessionsFindsThePhraseNewestFirst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.DB(t, store.Migrations)
	s := store.NewTranscripts(pool, transcript.DefaultLimits)
	appendAll(t, s, 1, "t1", "open ENOENT: no such file", "fine")
	appendAll(t, s, 2, "u1", "nothing to see")
	appendAll(t, s, 3, "v1", "the file ENOENT again")
	appendAll(t, s, 4, "w1", "no such thing as a file")

	ids, more, err := s.SearchSessions(ctx, "enoent", 10)
	require.NoError(t, err)
	require.Equal(t, []int64{3, 1}, ids, "case-blind, the newest match first")
	require.False(t, more)

	ids, _, err = s.SearchSessions(ctx, "no such file", 10)
	require.NoError(t, err)
	require.Equal(t, []int64{1}, ids, "the words as a phrase, not each anywhere")

	ids, more, err = s.SearchSessions(ctx, "file", 1)
	require.NoError(t, err)
	require.Equal(t, []int64{4}, ids)
	require.True(t, more, "bounded, and says so")

	ids, _, err = s.SearchSessions(ctx, "<script>", 10)
	require.NoError(t, err)
	require.Empty(t, ids)

	// The search's expression is the index's: with sequential scans off
	// (the test table is tiny) the plan reads the GIN index.
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, "SET LOCAL enable_seqscan = off")
	require.NoError(t, err)
	var plan strings.Builder
	rows, err := tx.Query(ctx, `EXPLAIN SELECT session_id FROM transcript_lines
		WHERE to_tsvector('simple'::regconfig, text) @@ phraseto_tsquery('simple'::regconfig, 'enoent')`)
	require.NoError(t, err)
	for rows.Next() {
		var line string
		require.NoError(t, rows.Scan(&line))
		plan.WriteString(line + "\n")
	}
	require.NoError(t, rows.Err())
	require.Contains(t, plan.String(), "transcript_lines_text_search")
}
