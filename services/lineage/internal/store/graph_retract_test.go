package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
	"github.com/zimmerhq/zimmer/services/lineage/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// failedVia is the entry point whose delivery the retraction tests fail.
const failedVia = "mcp.manage_enqueued_messages.interrupt"

func (b graphBundle) mustRetract(t testing.TB, acting, target int64, recorded domain.UncleOutcome) domain.RetractionDecision {
	t.Helper()
	d, err := b.retract.Handle(context.Background(), domain.UncleRetraction{
		Edge:     domain.UncleEdge{UncleSessionID: acting, SessionID: target, EntryPoint: failedVia},
		Recorded: recorded,
	})
	require.NoError(t, err)
	require.NotEmpty(t, d.Message)
	return d
}

// retractOff is mustRetract for goroutines other than the test's.
func (b graphBundle) retractOff(t testing.TB, acting, target int64, recorded domain.UncleOutcome) domain.RetractionOutcome {
	d, err := b.retract.Handle(context.Background(), domain.UncleRetraction{
		Edge:     domain.UncleEdge{UncleSessionID: acting, SessionID: target, EntryPoint: failedVia},
		Recorded: recorded,
	})
	assert.NoError(t, err)
	return d.Outcome
}

// provenance is what the row of the uncle edge uncle → junior says of
// where it came from.
type provenance struct {
	entryPoint string
	createdAt  time.Time
}

func (b graphBundle) provenance(t testing.TB, uncle, junior int64) provenance {
	t.Helper()
	var p provenance
	require.NoError(t, b.pool.QueryRow(context.Background(), `
		SELECT entry_point, created_at FROM session_uncle_links WHERE uncle_session_id = $1 AND session_id = $2`,
		uncle, junior).Scan(&p.entryPoint, &p.createdAt))
	return p
}

// TestRetractUncleEdgeWritten: a written edge whose delivery failed is
// deleted, both timelines are told why, and retracting it again changes
// nothing and tells nobody.
func TestRetractUncleEdgeWritten(t *testing.T) {
	t.Parallel()
	b := setupGraph(t)
	b.seed(t, spawn{1, 0}, spawn{2, 0})
	require.Equal(t, domain.UncleWritten, b.mustRecord(t, 1, 2))

	d := b.mustRetract(t, 1, 2, domain.UncleWritten)
	require.Equal(t, domain.RetractDeleted, d.Outcome)
	require.True(t, d.Retracted())
	require.Empty(t, b.uncleEdges(t))

	got := b.announced(t)
	require.Len(t, got, 2, "the recording, then its withdrawal")
	withdrawn := got[1]
	require.Equal(t, lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_UNSPECIFIED, withdrawn.GetOutcome(), "a withdrawal must not read as an edge written")
	require.Equal(t, []int64{1, 2}, []int64{withdrawn.GetActingSessionId(), withdrawn.GetTargetSessionId()})
	require.Equal(t, failedVia, withdrawn.GetEntryPoint())
	require.Len(t, withdrawn.GetLines(), 2)
	require.Equal(t, []int64{1, 2}, []int64{withdrawn.GetLines()[0].GetSessionId(), withdrawn.GetLines()[1].GetSessionId()})
	for _, l := range withdrawn.GetLines() {
		require.Equal(t, "note", l.GetKind())
		require.Contains(t, l.GetMessage(), "via "+failedVia+" failed")
		require.Contains(t, l.GetMessage(), "uncle edge #1 → #2 recorded for it was withdrawn")
	}

	again := b.mustRetract(t, 1, 2, domain.UncleWritten)
	require.Equal(t, domain.RetractNothingThere, again.Outcome)
	require.False(t, again.Retracted())
	require.Empty(t, b.uncleEdges(t))
	require.Len(t, b.announced(t), 2, "retracting twice announces once")
}

// TestRetractUncleEdgeInvertedRestoresTheOldDirection: undoing an
// inversion deletes acting → target and puts target → acting back as it
// was recorded, entry point and time; twice changes nothing more.
func TestRetractUncleEdgeInvertedRestoresTheOldDirection(t *testing.T) {
	t.Parallel()
	b := setupGraph(t)
	b.seed(t, spawn{1, 0}, spawn{2, 0})
	require.Equal(t, domain.UncleWritten, b.mustRecord(t, 2, 1))
	before := b.provenance(t, 2, 1)
	require.Equal(t, "mcp.action_session.follow_up", before.entryPoint)
	require.Equal(t, domain.UncleInverted, b.mustRecord(t, 1, 2))
	require.Equal(t, [][2]int64{{1, 2}}, b.uncleEdges(t))

	d := b.mustRetract(t, 1, 2, domain.UncleInverted)
	require.Equal(t, domain.RetractRestored, d.Outcome)
	require.True(t, d.Retracted())
	require.Equal(t, [][2]int64{{2, 1}}, b.uncleEdges(t))
	require.Equal(t, before, b.provenance(t, 2, 1), "put back as it was recorded")
	requireAcyclic(t, b)

	got := b.announced(t)
	require.Len(t, got, 3, "written, inverted, withdrawn")
	require.Equal(t, lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_UNSPECIFIED, got[2].GetOutcome())
	for _, l := range got[2].GetLines() {
		require.Contains(t, l.GetMessage(), "Seniority inversion withdrawn")
		require.Contains(t, l.GetMessage(), "via "+failedVia+" failed")
		require.Contains(t, l.GetMessage(), "uncle edge #1 → #2 withdrawn and #2 → #1 restored")
	}

	again := b.mustRetract(t, 1, 2, domain.UncleInverted)
	require.Equal(t, domain.RetractNothingThere, again.Outcome)
	require.Equal(t, [][2]int64{{2, 1}}, b.uncleEdges(t))
	require.Equal(t, before, b.provenance(t, 2, 1))
	require.Len(t, b.announced(t), 3)

	// The restored edge is an ordinary one again: the same session can
	// invert it anew, and that inversion can be undone too.
	require.Equal(t, domain.UncleInverted, b.mustRecord(t, 1, 2))
	require.Equal(t, domain.RetractRestored, b.mustRetract(t, 1, 2, domain.UncleInverted).Outcome)
	require.Equal(t, before, b.provenance(t, 2, 1))
}

// TestRetractUncleEdgeRules runs each row of the retraction rules against
// a graph in Postgres; the setup records (or links) what the row needs and
// the call retracts the acting session 1's delivery to target 2.
func TestRetractUncleEdgeRules(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name      string
		nodes     []spawn
		setup     func(t *testing.T, b graphBundle)
		recorded  domain.UncleOutcome
		want      domain.RetractionOutcome
		wantEdges [][2]int64
	}{
		{
			"a no-op outcome undoes nothing, though A → B is there",
			[]spawn{{1, 0}, {2, 0}},
			func(t *testing.T, b graphBundle) {
				require.Equal(t, domain.UncleWritten, b.mustRecord(t, 1, 2))
				require.Equal(t, domain.UncleNothingAlreadyReachable, b.mustRecord(t, 1, 2))
			},
			domain.UncleNothingAlreadyReachable, domain.RetractNothingRecorded, [][2]int64{{1, 2}},
		},
		{
			"a refusal undoes nothing",
			[]spawn{{1, 0}, {2, 0}, {3, 0}},
			func(t *testing.T, b graphBundle) {
				b.link(t, [2]int64{2, 3}, [2]int64{3, 1})
				require.Equal(t, domain.UncleRefusedSenior, b.mustRecord(t, 1, 2))
			},
			domain.UncleRefusedSenior, domain.RetractNothingRecorded, [][2]int64{{2, 3}, {3, 1}},
		},
		{
			"a spawn ancestor undoes nothing",
			[]spawn{{2, 0}, {1, 2}},
			func(t *testing.T, b graphBundle) {
				require.Equal(t, domain.UncleNothingSpawnAncestor, b.mustRecord(t, 1, 2))
			},
			domain.UncleNothingSpawnAncestor, domain.RetractNothingRecorded, nil,
		},
		{
			"written, then the target re-recorded it the other way: nothing to undo",
			[]spawn{{1, 0}, {2, 0}},
			func(t *testing.T, b graphBundle) {
				require.Equal(t, domain.UncleWritten, b.mustRecord(t, 1, 2))
				require.Equal(t, domain.UncleInverted, b.mustRecord(t, 2, 1))
			},
			domain.UncleWritten, domain.RetractNothingThere, [][2]int64{{2, 1}},
		},
		{
			"inverted, then the target inverted it back: nothing to undo",
			[]spawn{{1, 0}, {2, 0}},
			func(t *testing.T, b graphBundle) {
				require.Equal(t, domain.UncleWritten, b.mustRecord(t, 2, 1))
				require.Equal(t, domain.UncleInverted, b.mustRecord(t, 1, 2))
				require.Equal(t, domain.UncleInverted, b.mustRecord(t, 2, 1))
			},
			domain.UncleInverted, domain.RetractNothingThere, [][2]int64{{2, 1}},
		},
		{
			"inverted, and A has since come to reach B through X: deleted, B → A not restored",
			[]spawn{{1, 0}, {2, 0}, {3, 0}},
			func(t *testing.T, b graphBundle) {
				require.Equal(t, domain.UncleWritten, b.mustRecord(t, 2, 1))
				require.Equal(t, domain.UncleInverted, b.mustRecord(t, 1, 2))
				require.Equal(t, domain.UncleWritten, b.mustRecord(t, 1, 3))
				require.Equal(t, domain.UncleWritten, b.mustRecord(t, 3, 2))
			},
			domain.UncleInverted, domain.RetractDeletedNotRestored, [][2]int64{{1, 3}, {3, 2}},
		},
		{
			"inverted, and A has since spawned B's uncle: deleted, B → A not restored",
			[]spawn{{1, 0}, {2, 0}},
			func(t *testing.T, b graphBundle) {
				require.Equal(t, domain.UncleWritten, b.mustRecord(t, 2, 1))
				require.Equal(t, domain.UncleInverted, b.mustRecord(t, 1, 2))
				b.seed(t, spawn{3, 1})
				require.Equal(t, domain.UncleWritten, b.mustRecord(t, 3, 2))
			},
			domain.UncleInverted, domain.RetractDeletedNotRestored, [][2]int64{{3, 2}},
		},
		{
			"inverted, but the edge there now replaced nothing: deleted, nothing invented",
			[]spawn{{1, 0}, {2, 0}},
			func(t *testing.T, b graphBundle) { b.link(t, [2]int64{1, 2}) },
			domain.UncleInverted, domain.RetractDeletedNotRestored, nil,
		},
		{
			"sessions lineage does not know: nothing to undo",
			nil, func(*testing.T, graphBundle) {},
			domain.UncleWritten, domain.RetractNothingThere, nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setupGraph(t)
			b.seed(t, tt.nodes...)
			tt.setup(t, b)
			announcedBefore := len(b.announced(t))

			d := b.mustRetract(t, 1, 2, tt.recorded)
			require.Equal(t, tt.want, d.Outcome, d.Message)
			require.Equal(t, tt.wantEdges, b.uncleEdges(t))
			requireAcyclic(t, b)
			require.Len(t, b.announced(t), announcedBefore+map[bool]int{true: 1, false: 0}[d.Retracted()],
				"only a retraction that undid something reaches the timelines")

			again := b.mustRetract(t, 1, 2, tt.recorded)
			require.False(t, again.Retracted(), "the second retraction undoes nothing: %s", again.Message)
			require.Equal(t, tt.wantEdges, b.uncleEdges(t))
		})
	}
}

func TestRetractUncleEdgeValidation(t *testing.T) {
	t.Parallel()
	b := setupGraph(t)
	for _, r := range []domain.UncleRetraction{
		{Edge: domain.UncleEdge{UncleSessionID: 0, SessionID: 1, EntryPoint: "x"}, Recorded: domain.UncleWritten},
		{Edge: domain.UncleEdge{UncleSessionID: 1, SessionID: 2}, Recorded: domain.UncleWritten},
		{Edge: domain.UncleEdge{UncleSessionID: 1, SessionID: 2, EntryPoint: "x"}},
	} {
		_, err := b.retract.Handle(t.Context(), r)
		var ve *validation.Error
		require.ErrorAs(t, err, &ve, "%+v", r)
	}
}

// TestRetractUncleEdgeNeverCycles interleaves random recordings with
// retractions of earlier ones (deliveries failing out of order) over a
// random spawn forest, and checks after each call that the graph changed
// exactly as the outcome says and, with the independent search, that it is
// still acyclic.
func TestRetractUncleEdgeNeverCycles(t *testing.T) {
	t.Parallel()
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 7))
			b := setupGraph(t)
			const sessions = 12
			var nodes []spawn
			for id := int64(1); id <= sessions; id++ {
				var parent int64
				if id > 1 && rng.IntN(3) == 0 {
					parent = 1 + rng.Int64N(id-1)
				}
				nodes = append(nodes, spawn{id, parent})
			}
			b.seed(t, nodes...)

			type recording struct {
				acting, target int64
				outcome        domain.UncleOutcome
			}
			var pending []recording
			seen := map[domain.RetractionOutcome]int{}
			for range 200 {
				before := b.uncleEdges(t)
				if len(pending) == 0 || rng.IntN(2) == 0 {
					acting, target := 1+rng.Int64N(sessions), 1+rng.Int64N(sessions)
					pending = append(pending, recording{acting, target, b.mustRecord(t, acting, target)})
				} else {
					i := rng.IntN(len(pending))
					r := pending[i]
					pending = slices.Delete(pending, i, i+1)
					d := b.mustRetract(t, r.acting, r.target, r.outcome)
					seen[d.Outcome]++
					after := b.uncleEdges(t)
					without := slices.DeleteFunc(slices.Clone(before), func(e [2]int64) bool { return e == [2]int64{r.acting, r.target} })
					switch d.Outcome {
					case domain.RetractDeleted, domain.RetractDeletedNotRestored:
						require.Len(t, without, len(before)-1)
						require.ElementsMatch(t, without, after)
					case domain.RetractRestored:
						require.Len(t, without, len(before)-1)
						require.ElementsMatch(t, append(without, [2]int64{r.target, r.acting}), after)
					default:
						require.Equal(t, before, after, "%s changes nothing", d.Outcome)
					}
				}
				requireAcyclic(t, b)
			}
			require.NotZero(t, seen[domain.RetractDeleted], "%v", seen)
			require.NotZero(t, seen[domain.RetractNothingRecorded], "%v", seen)
			require.NotZero(t, seen[domain.RetractRestored], "%v", seen)
		})
	}
}

// TestRetractUncleEdgeConcurrentWithRecording runs record-then-retract
// pairs at once, in opposite directions and round triangles, on a small
// graph: whatever the interleaving, the graph is acyclic after every
// round, and inversions undone concurrently restore what they replaced.
func TestRetractUncleEdgeConcurrentWithRecording(t *testing.T) {
	t.Parallel()
	b := setupGraph(t)
	const sessions = 6
	b.seed(t, spawn{1, 0}, spawn{2, 0}, spawn{3, 0}, spawn{4, 1}, spawn{5, 0}, spawn{6, 5})

	var (
		mu   sync.Mutex
		seen = map[domain.RetractionOutcome]int{}
	)
	// deliver records acting → target and, when the delivery "fails",
	// retracts it, as the queue does.
	deliver := func(acting, target int64, fails bool) {
		o := b.recordOff(t, acting, target)
		if !fails {
			return
		}
		r := b.retractOff(t, acting, target, o)
		mu.Lock()
		seen[r]++
		mu.Unlock()
	}
	rng := rand.New(rand.NewPCG(12, 1))
	for range 40 {
		a, c := 1+rng.Int64N(sessions), 1+rng.Int64N(sessions)
		x := 1 + rng.Int64N(sessions)
		var wg sync.WaitGroup
		for _, call := range [][2]int64{{a, c}, {c, a}, {a, x}, {x, c}, {c, x}} {
			fails := rng.IntN(3) > 0
			wg.Go(func() { deliver(call[0], call[1], fails) })
		}
		wg.Wait()
		requireAcyclic(t, b)
	}
	require.NotZero(t, seen[domain.RetractDeleted]+seen[domain.RetractRestored]+seen[domain.RetractDeletedNotRestored], "%v", seen)

	// An inversion and its undoing racing the inverse recording: the
	// sequential outcome is one of the legal orders, never both edges.
	for range 20 {
		_, err := b.pool.Exec(t.Context(), `DELETE FROM session_uncle_links`)
		require.NoError(t, err)
		require.Equal(t, domain.UncleWritten, b.mustRecord(t, 2, 3))
		var wg sync.WaitGroup
		wg.Go(func() { deliver(3, 2, true) })
		wg.Go(func() { deliver(2, 3, false) })
		wg.Wait()
		edges := b.uncleEdges(t)
		require.Len(t, edges, 1, "one direction between 2 and 3, never both: %v", edges)
		requireAcyclic(t, b)
	}
}
