package transcript_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/runner/internal/agent"
	"github.com/zimmerhq/zimmer/services/runner/internal/transcript"
)

// memory is a Reader and Appender over a slice.
type memory struct {
	mu    sync.Mutex
	lines []transcript.Line
}

func (m *memory) Append(_ context.Context, sessionID int64, turnID string, e agent.Event) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lines = append(m.lines, transcript.Line{ID: int64(len(m.lines) + 1), SessionID: sessionID, TurnID: turnID, Text: e.Text})
	return nil
}

func (m *memory) EndTurn(context.Context, int64, string, string) error { return nil }

func (m *memory) LinesAfter(_ context.Context, sessionID, afterID int64, limit int) ([]transcript.Line, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []transcript.Line
	for _, l := range m.lines {
		if l.SessionID == sessionID && l.ID > afterID && len(out) < limit {
			out = append(out, l)
		}
	}
	return out, nil
}

func (m *memory) StartOfNewestTurn(context.Context, int64) (int64, error) { return 1, nil }

func follow(t *testing.T, r transcript.Reader, n *transcript.Notifier, poll time.Duration) (<-chan string, context.CancelFunc, <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	got, done := make(chan string, 100), make(chan error, 1)
	go func() {
		done <- transcript.Follow(ctx, r, n, 1, transcript.FollowOptions{Poll: poll, Batch: 2}, func(l transcript.Line) error {
			got <- l.Text
			return nil
		})
	}()
	return got, cancel, done
}

func receive(t *testing.T, got <-chan string, want ...string) {
	t.Helper()
	for _, w := range want {
		select {
		case g := <-got:
			require.Equal(t, w, g)
		case <-time.After(5 * time.Second):
			t.Fatalf("no line %q", w)
		}
	}
}

func TestFollowSendsNewLinesAsTheRecorderCommitsThem(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m, n := &memory{}, transcript.NewNotifier()
	rec := transcript.Recorder{Store: m, Notifier: n}
	for _, text := range []string{"old turn", "a", "b", "c"} {
		require.NoError(t, rec.Append(ctx, 1, "t", agent.Event{Text: text}))
	}
	// An hour's poll: only the notifier can deliver what follows in time.
	got, cancel, done := follow(t, m, n, time.Hour)
	receive(t, got, "a", "b", "c") // from StartOfNewestTurn, past a full batch
	require.NoError(t, rec.Append(ctx, 2, "u", agent.Event{Text: "other session"}))
	require.NoError(t, rec.Append(ctx, 1, "t", agent.Event{Text: "d"}))
	receive(t, got, "d")
	cancel()
	require.NoError(t, <-done, "a follower going away is no error")
	require.Empty(t, got)
}

func TestFollowPollsForLinesAnotherProcessAppended(t *testing.T) {
	t.Parallel()
	m := &memory{}
	got, cancel, done := follow(t, m, transcript.NewNotifier(), 20*time.Millisecond)
	defer func() { cancel(); require.NoError(t, <-done) }()
	require.NoError(t, m.Append(context.Background(), 1, "t", agent.Event{Text: "x"}))
	require.NoError(t, m.Append(context.Background(), 1, "t", agent.Event{Text: "y"}))
	receive(t, got, "y") // the first line is before StartOfNewestTurn's answer
}

func TestPageTokenRoundTrip(t *testing.T) {
	t.Parallel()
	c := transcript.Cursor{Position: 42, Seq: 7}
	got, err := transcript.ParseToken(c.Token())
	require.NoError(t, err)
	require.Equal(t, c, got)
	got, err = transcript.ParseToken("")
	require.NoError(t, err)
	require.True(t, got.IsZero())
	for _, bad := range []string{"!!", "eHl6", transcript.Cursor{Position: -1, Seq: 1}.Token()} {
		_, err := transcript.ParseToken(bad)
		require.ErrorIs(t, err, transcript.ErrBadToken, bad)
	}
}

func TestAdmitKeepsAPrefix(t *testing.T) {
	t.Parallel()
	l := transcript.Limits{MaxLines: 2, MaxBytes: 10, MaxRawBytes: 5}
	require.Equal(t, transcript.Store, l.Admit(transcript.Usage{StoredLines: 1, StoredBytes: 5}, 5))
	require.Equal(t, transcript.DropFirst, l.Admit(transcript.Usage{StoredLines: 1, StoredBytes: 5}, 6))
	require.Equal(t, transcript.DropFirst, l.Admit(transcript.Usage{StoredLines: 2}, 0))
	require.Equal(t, transcript.Drop, l.Admit(transcript.Usage{StoredLines: 1, DroppedLines: 1}, 0), "a small line after a dropped one is dropped too")
}
