package store_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

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
