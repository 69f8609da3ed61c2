package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/platform/pgtest"
	"github.com/zimmerhq/zimmer/services/runner/internal/agent"
	"github.com/zimmerhq/zimmer/services/runner/internal/store"
	"github.com/zimmerhq/zimmer/services/runner/internal/transcript"
)

func newTranscripts(t *testing.T, limits transcript.Limits) *store.Transcripts {
	t.Helper()
	return store.NewTranscripts(pgtest.DB(t, store.Migrations), limits)
}

func say(text string) agent.Event {
	return agent.Event{Kind: agent.KindAssistant, Type: "assistant", Text: text, Raw: `{"type":"assistant","text":"` + text + `"}`}
}

func appendAll(t *testing.T, s *store.Transcripts, session int64, turn string, texts ...string) {
	t.Helper()
	for _, text := range texts {
		require.NoError(t, s.Append(context.Background(), session, turn, say(text)))
	}
}

func texts(lines []transcript.Line) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l.TurnID + ":" + l.Text
	}
	return out
}

func TestTranscriptPagesNewestTurnFirstEachTurnInOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newTranscripts(t, transcript.DefaultLimits)
	appendAll(t, s, 1, "t1", "a", "b", "c")
	appendAll(t, s, 2, "other", "not mine")
	appendAll(t, s, 1, "t2", "d", "e")
	require.NoError(t, s.EndTurn(ctx, 1, "t1", "exited 0"))

	page, err := s.Page(ctx, transcript.Query{SessionID: 1})
	require.NoError(t, err)
	require.Equal(t, []string{"t2:d", "t2:e", "t1:a", "t1:b", "t1:c"}, texts(page.Lines))
	require.True(t, page.Next.IsZero())
	require.Len(t, page.Turns, 2)
	require.Equal(t, "t2", page.Turns[0].TurnID)
	require.True(t, page.Turns[0].EndedAt.IsZero())
	require.Equal(t, "", page.Turns[0].Outcome)
	require.Equal(t, "t1", page.Turns[1].TurnID)
	require.Equal(t, "exited 0", page.Turns[1].Outcome)
	require.False(t, page.Turns[1].EndedAt.IsZero())
	require.EqualValues(t, 3, page.Turns[1].StoredLines)
	for i, l := range page.Lines[2:] {
		require.EqualValues(t, i+1, l.Seq)
		require.Equal(t, "assistant", l.Kind)
		require.Contains(t, l.Raw, `"type":"assistant"`)
	}

	// Two lines at a time: the pages join up to the whole, in order.
	var all []transcript.Line
	q := transcript.Query{SessionID: 1, PageSize: 2}
	for pages := 0; ; pages++ {
		require.Less(t, pages, 5, "paging does not end")
		page, err := s.Page(ctx, q)
		require.NoError(t, err)
		require.LessOrEqual(t, len(page.Lines), 2)
		all = append(all, page.Lines...)
		if page.Next.IsZero() {
			break
		}
		cursor, err := transcript.ParseToken(page.Next.Token())
		require.NoError(t, err)
		q.After = cursor
	}
	require.Equal(t, []string{"t2:d", "t2:e", "t1:a", "t1:b", "t1:c"}, texts(all))

	// The turn filter reads one turn only.
	page, err = s.Page(ctx, transcript.Query{SessionID: 1, TurnID: "t1"})
	require.NoError(t, err)
	require.Equal(t, []string{"t1:a", "t1:b", "t1:c"}, texts(page.Lines))
	require.Len(t, page.Turns, 1)
	// Another session's turn is not this session's.
	page, err = s.Page(ctx, transcript.Query{SessionID: 1, TurnID: "other"})
	require.NoError(t, err)
	require.Empty(t, page.Lines)
}

func TestTranscriptBoundsKeepAPrefixAndCountTheRest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	limits := transcript.Limits{MaxLines: 3, MaxBytes: 1 << 20, MaxRawBytes: 10}
	s := newTranscripts(t, limits)
	appendAll(t, s, 1, "t", "1", "2", "3", "4", "5", "6")

	page, err := s.Page(ctx, transcript.Query{SessionID: 1})
	require.NoError(t, err)
	require.Equal(t, []string{"t:1", "t:2", "t:3", "t:" + limits.DroppedText(3)}, texts(page.Lines))
	require.Equal(t, transcript.KindDropped, page.Lines[3].Kind)
	require.EqualValues(t, 4, page.Lines[3].Seq)
	require.EqualValues(t, 3, page.Turns[0].StoredLines)
	require.EqualValues(t, 3, page.Turns[0].DroppedLines)
	// Raw cut at 10 bytes, and said so.
	require.Len(t, page.Lines[0].Raw, 10)
	require.True(t, page.Lines[0].RawTruncated)

	// The byte bound: the second line would pass 60 bytes.
	// (each line is its text and a 32-byte raw rendering of it).
	byteLimits := transcript.Limits{MaxLines: 100, MaxBytes: 60, MaxRawBytes: 1 << 10}
	byBytes := newTranscripts(t, byteLimits)
	appendAll(t, byBytes, 1, "t", "first", "second", "third")
	page, err = byBytes.Page(ctx, transcript.Query{SessionID: 1})
	require.NoError(t, err)
	require.Equal(t, []string{"t:first", "t:" + byteLimits.DroppedText(2)}, texts(page.Lines))
}

func TestTranscriptStoresWhatPostgresCannotHold(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newTranscripts(t, transcript.Limits{MaxLines: 10, MaxBytes: 1 << 20, MaxRawBytes: 5})
	require.NoError(t, s.Append(ctx, 1, "t", agent.Event{Text: "nul\x00 bad\xff", Raw: "ab\u00e9\u00e9"}))
	page, err := s.Page(ctx, transcript.Query{SessionID: 1})
	require.NoError(t, err)
	require.Equal(t, "nul\uFFFD bad\uFFFD", page.Lines[0].Text)
	require.Equal(t, "text", page.Lines[0].Kind, "a line without a kind is text")
	require.Equal(t, "ab\u00e9", page.Lines[0].Raw, "cut at a character boundary")

	require.ErrorContains(t, s.Append(ctx, 2, "t", say("x")), "belongs to session 1")
	require.Error(t, s.Append(ctx, 1, "", say("x")))
}

func TestTranscriptPageStopsAtItsByteBound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newTranscripts(t, transcript.Limits{MaxLines: 1000, MaxBytes: 1 << 30, MaxRawBytes: 1 << 20})
	big := strings.Repeat("x", 1<<20) // 1 MiB raw a line
	for i := range 6 {
		require.NoError(t, s.Append(ctx, 1, "t", agent.Event{Kind: agent.KindTool, Text: fmt.Sprint(i), Raw: big}))
	}
	page, err := s.Page(ctx, transcript.Query{SessionID: 1, PageSize: 100})
	require.NoError(t, err)
	require.Len(t, page.Lines, 3, "4 MiB of 1 MiB lines")
	require.False(t, page.Next.IsZero())
	page, err = s.Page(ctx, transcript.Query{SessionID: 1, PageSize: 100, After: page.Next})
	require.NoError(t, err)
	require.Equal(t, []string{"t:3", "t:4", "t:5"}, texts(page.Lines))
	require.True(t, page.Next.IsZero())
}

func TestTranscriptFollowReadsAndEndTurnAndPrune(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newTranscripts(t, transcript.DefaultLimits)
	start, err := s.StartOfNewestTurn(ctx, 1)
	require.NoError(t, err)
	require.Zero(t, start)
	appendAll(t, s, 1, "t1", "a", "b")
	appendAll(t, s, 1, "t2", "c")
	start, err = s.StartOfNewestTurn(ctx, 1)
	require.NoError(t, err)
	lines, err := s.LinesAfter(ctx, 1, start, 10)
	require.NoError(t, err)
	require.Equal(t, []string{"t2:c"}, texts(lines))
	lines, err = s.LinesAfter(ctx, 1, 0, 2)
	require.NoError(t, err)
	require.Equal(t, []string{"t1:a", "t1:b"}, texts(lines))

	// A turn ends once; the first ending stays.
	require.NoError(t, s.EndTurn(ctx, 1, "t1", "exited 0"))
	require.NoError(t, s.EndTurn(ctx, 1, "t1", "exited 1"))
	require.NoError(t, s.EndTurn(ctx, 1, "silent", "exited 0"), "a turn that printed nothing")
	page, err := s.Page(ctx, transcript.Query{SessionID: 1, TurnID: "t1"})
	require.NoError(t, err)
	require.Equal(t, "exited 0", page.Turns[0].Outcome)

	// Pruning takes the ended turns before the cutoff, never a running one.
	n, err := s.Prune(ctx, time.Now().Add(time.Hour), 1)
	require.NoError(t, err)
	require.EqualValues(t, 2, n)
	page, err = s.Page(ctx, transcript.Query{SessionID: 1})
	require.NoError(t, err)
	require.Equal(t, []string{"t2:c"}, texts(page.Lines))
	n, err = s.Prune(ctx, time.Now().Add(-time.Hour), 10)
	require.NoError(t, err)
	require.Zero(t, n)
}

// Appends racing on one turn (an activity retried while its first attempt
// still runs) take seqs one after the other and never overrun the bounds.
func TestTranscriptConcurrentAppendsKeepSeqsAndBounds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	limits := transcript.Limits{MaxLines: 150, MaxBytes: 1 << 20, MaxRawBytes: 1 << 10}
	s := newTranscripts(t, limits)
	errs := make(chan error, 200)
	for w := range 20 {
		go func() {
			for i := range 10 {
				errs <- s.Append(ctx, 1, "t", say(fmt.Sprintf("%d-%d", w, i)))
			}
		}()
	}
	for range 200 {
		require.NoError(t, <-errs)
	}
	var lines []transcript.Line
	q := transcript.Query{SessionID: 1, PageSize: 100}
	for {
		page, err := s.Page(ctx, q)
		require.NoError(t, err)
		lines = append(lines, page.Lines...)
		if page.Next.IsZero() {
			require.EqualValues(t, 150, page.Turns[0].StoredLines)
			require.EqualValues(t, 50, page.Turns[0].DroppedLines)
			break
		}
		q.After = page.Next
	}
	require.Len(t, lines, 151)
	for i, l := range lines {
		require.EqualValues(t, i+1, l.Seq)
	}
	require.Equal(t, limits.DroppedText(50), lines[150].Text)
}

// A turn its runner died during is cut off: the note is its last line and
// the outcome its ending, together; a turn that already ended keeps its
// ending and gets no note.
func TestCutOffEndsATurnThatHasNoEnding(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newTranscripts(t, transcript.DefaultLimits)
	appendAll(t, s, 1, "lost", "before the crash")
	appendAll(t, s, 1, "done", "finished")
	require.NoError(t, s.EndTurn(ctx, 1, "done", "exit status 0"))
	note := agent.Event{Kind: agent.KindSystem, Type: "zimmer/cut_off", Text: "cut off", IsError: true}

	ended, err := s.CutOff(ctx, 1, "lost", "cut off: the runner died", note)
	require.NoError(t, err)
	require.True(t, ended)
	ended, err = s.CutOff(ctx, 1, "lost", "cut off again", note)
	require.NoError(t, err)
	require.False(t, ended, "an ended turn keeps its ending")
	ended, err = s.CutOff(ctx, 1, "done", "cut off: the runner died", note)
	require.NoError(t, err)
	require.False(t, ended)
	ended, err = s.CutOff(ctx, 1, "silent", "cut off: the runner died", note)
	require.NoError(t, err)
	require.True(t, ended, "a turn that printed nothing gets its ending too")

	page, err := s.Page(ctx, transcript.Query{SessionID: 1, TurnID: "lost"})
	require.NoError(t, err)
	require.Equal(t, []string{"lost:before the crash", "lost:cut off"}, texts(page.Lines))
	require.Equal(t, "zimmer/cut_off", page.Lines[1].Type)
	require.True(t, page.Lines[1].IsError)
	require.Equal(t, "cut off: the runner died", page.Turns[0].Outcome)
	require.False(t, page.Turns[0].EndedAt.IsZero())
	page, err = s.Page(ctx, transcript.Query{SessionID: 1, TurnID: "done"})
	require.NoError(t, err)
	require.Equal(t, []string{"done:finished"}, texts(page.Lines))
	require.Equal(t, "exit status 0", page.Turns[0].Outcome)
}

// A page is one snapshot: a turn it shows ended has every line it stored
// before its end, and each turn's count of stored lines matches the lines
// shown, however the reads interleave with the appends and the ends (a
// poller takes an ended turn as complete).
func TestATranscriptPageIsOneSnapshot(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := newTranscripts(t, transcript.DefaultLimits)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for turn := range 40 {
			id := fmt.Sprint("turn-", turn)
			for i := range 3 {
				if err := s.Append(ctx, 1, id, say(fmt.Sprint(i))); err != nil {
					t.Error(err)
					return
				}
			}
			if err := s.EndTurn(ctx, 1, id, "exited 0"); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	// Failures are collected and reported once the writer is done, so
	// that nothing it does outlives the test.
	var wrong []string
	reads := 0
	for running := true; running; reads++ {
		select {
		case <-done:
			running = false
		default:
		}
		page, err := s.Page(ctx, transcript.Query{SessionID: 1, PageSize: transcript.MaxPageSize})
		if err != nil {
			wrong = append(wrong, err.Error())
			continue
		}
		shown := map[string]int{}
		for _, l := range page.Lines {
			shown[l.TurnID]++
		}
		for _, tr := range page.Turns {
			if int(tr.StoredLines) != shown[tr.TurnID] || (!tr.EndedAt.IsZero() && shown[tr.TurnID] != 3) {
				wrong = append(wrong, fmt.Sprintf("read %d: turn %s stored %d lines, ended %v; the page shows %d",
					reads, tr.TurnID, tr.StoredLines, !tr.EndedAt.IsZero(), shown[tr.TurnID]))
			}
		}
	}
	<-done
	require.Empty(t, wrong)
	t.Logf("%d pages read while 40 turns were written", reads)
}
