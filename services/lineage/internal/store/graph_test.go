package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
	"github.com/zimmerhq/zimmer/services/lineage/internal/app"
	"github.com/zimmerhq/zimmer/services/lineage/internal/domain"
	"github.com/zimmerhq/zimmer/services/lineage/internal/events"
	"github.com/zimmerhq/zimmer/services/platform/clock"
	"github.com/zimmerhq/zimmer/services/platform/pgtest"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// recordedAt is when the graph tests record their uncle edges.
var recordedAt = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// graphBundle is a store on its own database with the graph use cases.
type graphBundle struct {
	pool      *pgxpool.Pool
	store     *Store
	record    app.RecordUncleEdge
	retract   app.RetractUncleEdge
	hierarchy app.GetHierarchy
	apply     app.ApplySessionEvent
}

func setupGraph(t testing.TB) graphBundle {
	t.Helper()
	pool := pgtest.DB(t, testSets...)
	s := New(pool)
	return graphBundle{
		pool: pool, store: s,
		record:    app.NewRecordUncleEdge(s, clock.NewStub(recordedAt)),
		retract:   app.NewRetractUncleEdge(s, clock.NewStub(recordedAt)),
		hierarchy: app.NewGetHierarchy(s),
		apply:     app.NewApplySessionEvent(s),
	}
}

// spawn is one node to seed: id and its spawn parent (0: none).
type spawn struct{ id, parent int64 }

// seed inserts nodes in one statement, bypassing events: the graph tests are
// about edges, and thousands of nodes must not cost thousands of round trips.
func (b graphBundle) seed(t testing.TB, nodes ...spawn) {
	t.Helper()
	ids := make([]int64, len(nodes))
	parents := make([]*int64, len(nodes))
	for i, n := range nodes {
		ids[i] = n.id
		if n.parent != 0 {
			parents[i] = ptr(n.parent)
		}
	}
	_, err := b.pool.Exec(context.Background(), `
		INSERT INTO session_nodes (session_id, title, agent_root, status, genesis, scheduling_class,
			parent_session_id, session_updated_at)
		SELECT u.id, 'session ' || u.id, 'zimmer', 'running', 'web_ui', 'priority', u.parent, now()
		FROM unnest($1::bigint[], $2::bigint[]) AS u(id, parent)`, ids, parents)
	require.NoError(t, err)
}

// link writes uncle edges directly, bypassing the rules: setup for states
// the rules must cope with.
func (b graphBundle) link(t testing.TB, edges ...[2]int64) {
	t.Helper()
	for _, e := range edges {
		_, err := b.pool.Exec(context.Background(), `
			INSERT INTO session_uncle_links (uncle_session_id, session_id, entry_point) VALUES ($1, $2, 'test')`, e[0], e[1])
		require.NoError(t, err)
	}
}

// uncleEdges lists every uncle edge as {uncle, junior}, sorted.
func (b graphBundle) uncleEdges(t testing.TB) [][2]int64 {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), `
		SELECT uncle_session_id, session_id FROM session_uncle_links ORDER BY 1, 2`)
	require.NoError(t, err)
	defer rows.Close()
	var out [][2]int64
	for rows.Next() {
		var e [2]int64
		require.NoError(t, rows.Scan(&e[0], &e[1]))
		out = append(out, e)
	}
	require.NoError(t, rows.Err())
	return out
}

func (b graphBundle) mustRecord(t testing.TB, acting, target int64) domain.UncleOutcome {
	t.Helper()
	d, err := b.record.Handle(context.Background(), domain.UncleEdge{UncleSessionID: acting, SessionID: target, EntryPoint: "mcp.action_session.follow_up"})
	require.NoError(t, err)
	require.NotEmpty(t, d.Message)
	return d.Outcome
}

// recordOff is mustRecord for goroutines other than the test's: it reports
// failures with assert, because require may only stop the test goroutine.
func (b graphBundle) recordOff(t testing.TB, acting, target int64) domain.UncleOutcome {
	d, err := b.record.Handle(context.Background(), domain.UncleEdge{UncleSessionID: acting, SessionID: target, EntryPoint: "mcp.action_session.follow_up"})
	assert.NoError(t, err)
	return d.Outcome
}

func TestRecordUncleEdgeRules(t *testing.T) {
	t.Parallel()

	// A is 1, B is 2; X is 3 where a row needs a third session.
	tests := []struct {
		name      string
		nodes     []spawn
		uncles    [][2]int64 // {uncle, junior} before the call
		acting    int64
		target    int64
		want      domain.UncleOutcome
		wantEdges [][2]int64 // after the call
	}{
		{"A is B", []spawn{{1, 0}}, nil, 1, 1, domain.UncleNothingSelf, nil},
		{"A spawned B", []spawn{{1, 0}, {2, 1}}, nil, 1, 2, domain.UncleNothingAlreadyReachable, nil},
		{"A is B's spawn grandparent", []spawn{{1, 0}, {3, 1}, {2, 3}}, nil, 1, 2, domain.UncleNothingAlreadyReachable, nil},
		{"A → B exists", []spawn{{1, 0}, {2, 0}}, [][2]int64{{1, 2}}, 1, 2, domain.UncleNothingAlreadyReachable, [][2]int64{{1, 2}}},
		{"A reaches B by uncle then spawn", []spawn{{1, 0}, {3, 0}, {2, 3}}, [][2]int64{{1, 3}}, 1, 2, domain.UncleNothingAlreadyReachable, [][2]int64{{1, 3}}},
		{"B → A exists: inverted", []spawn{{1, 0}, {2, 0}}, [][2]int64{{2, 1}}, 1, 2, domain.UncleInverted, [][2]int64{{1, 2}}},
		{
			"B → A exists but B also reaches A by B → X → A: refused, rolled back",
			[]spawn{{1, 3}, {2, 0}, {3, 0}}, [][2]int64{{2, 1}, {2, 3}}, 1, 2,
			domain.UncleRefusedSenior, [][2]int64{{2, 1}, {2, 3}},
		},
		{"B spawned A: a child calling its parent", []spawn{{2, 0}, {1, 2}}, nil, 1, 2, domain.UncleNothingSpawnAncestor, nil},
		{"B is A's spawn grandparent", []spawn{{2, 0}, {3, 2}, {1, 3}}, nil, 1, 2, domain.UncleNothingSpawnAncestor, nil},
		{
			"B spawned A and is also its uncle: the spawn edge wins, nothing is touched",
			[]spawn{{2, 0}, {1, 2}}, [][2]int64{{2, 1}}, 1, 2,
			domain.UncleNothingSpawnAncestor, [][2]int64{{2, 1}},
		},
		{"B senior two uncle hops away", []spawn{{1, 0}, {2, 0}, {3, 0}}, [][2]int64{{2, 3}, {3, 1}}, 1, 2, domain.UncleRefusedSenior, [][2]int64{{2, 3}, {3, 1}}},
		{"B senior by spawn then uncle", []spawn{{1, 0}, {2, 0}, {3, 2}}, [][2]int64{{3, 1}}, 1, 2, domain.UncleRefusedSenior, [][2]int64{{3, 1}}},
		{"unrelated sessions", []spawn{{1, 0}, {2, 0}}, nil, 1, 2, domain.UncleWritten, [][2]int64{{1, 2}}},
		{"siblings", []spawn{{3, 0}, {1, 3}, {2, 3}}, nil, 1, 2, domain.UncleWritten, [][2]int64{{1, 2}}},
		{"B spawned A's uncle", []spawn{{1, 0}, {2, 0}, {3, 2}}, nil, 1, 3, domain.UncleWritten, [][2]int64{{1, 3}}},
		{"A unknown", []spawn{{2, 0}}, nil, 1, 2, domain.UncleRefusedUnknownSession, nil},
		{"B unknown", []spawn{{1, 0}}, nil, 1, 2, domain.UncleRefusedUnknownSession, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setupGraph(t)
			b.seed(t, tt.nodes...)
			b.link(t, tt.uncles...)
			require.Equal(t, tt.want, b.mustRecord(t, tt.acting, tt.target))
			require.Equal(t, tt.wantEdges, b.uncleEdges(t))
			// Only a change of the graph reaches the timelines.
			changed := tt.want == domain.UncleWritten || tt.want == domain.UncleInverted
			require.Len(t, b.announced(t), map[bool]int{true: 1, false: 0}[changed])
		})
	}
}

// announced decodes every event in the outbox, oldest first, checking
// each is addressed to lifecycle alone.
func (b graphBundle) announced(t testing.TB) []*lineagev1.UncleEdgeChanged {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), `
		SELECT event_id::text, subscriber, topic, aggregate_key, payload FROM outbox_messages ORDER BY id`)
	require.NoError(t, err)
	defer rows.Close()
	var out []*lineagev1.UncleEdgeChanged
	for rows.Next() {
		var (
			id, subscriber, topic, key string
			payload                    []byte
		)
		require.NoError(t, rows.Scan(&id, &subscriber, &topic, &key, &payload))
		require.Equal(t, "lifecycle", subscriber)
		require.Equal(t, "lineage.uncle_edge_changed", topic)
		evt, err := events.Decode(payload)
		require.NoError(t, err)
		require.Equal(t, id, evt.GetEventId(), "the row and its payload carry one id")
		require.Equal(t, fmt.Sprint(evt.GetUncleEdgeChanged().GetTargetSessionId()), key)
		require.True(t, evt.GetOccurredAt().AsTime().Equal(recordedAt))
		out = append(out, evt.GetUncleEdgeChanged())
	}
	require.NoError(t, rows.Err())
	return out
}

// TestRecordUncleEdgeAnnouncesBothTimelines: an edge written and then
// inverted each put one event in the outbox, carrying the line for each
// of the two sessions with the entry point that caused it; a refusal
// announces nothing.
func TestRecordUncleEdgeAnnouncesBothTimelines(t *testing.T) {
	t.Parallel()
	b := setupGraph(t)
	b.seed(t, spawn{1, 0}, spawn{2, 0})
	ctx := t.Context()

	d, err := b.record.Handle(ctx, domain.UncleEdge{UncleSessionID: 1, SessionID: 2, EntryPoint: "rest.follow_up"})
	require.NoError(t, err)
	require.Equal(t, domain.UncleWritten, d.Outcome)
	d, err = b.record.Handle(ctx, domain.UncleEdge{UncleSessionID: 2, SessionID: 1, EntryPoint: "mcp.manage_enqueued_messages.interrupt"})
	require.NoError(t, err)
	require.Equal(t, domain.UncleInverted, d.Outcome)
	for _, e := range []domain.UncleEdge{
		{UncleSessionID: 2, SessionID: 1, EntryPoint: "rest.follow_up"}, // already reaches
		{UncleSessionID: 1, SessionID: 1, EntryPoint: "rest.follow_up"}, // self
		{UncleSessionID: 1, SessionID: 9, EntryPoint: "rest.follow_up"}, // unknown
	} {
		d, err := b.record.Handle(ctx, e)
		require.NoError(t, err)
		require.NotContains(t, []domain.UncleOutcome{domain.UncleWritten, domain.UncleInverted}, d.Outcome)
	}

	got := b.announced(t)
	require.Len(t, got, 2, "one event per change, none for the outcomes that changed nothing")
	written, inverted := got[0], got[1]
	require.Equal(t, lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_WRITTEN, written.GetOutcome())
	require.Equal(t, []int64{1, 2, 1, 2}, []int64{written.GetActingSessionId(), written.GetTargetSessionId(),
		written.GetLines()[0].GetSessionId(), written.GetLines()[1].GetSessionId()})
	require.Equal(t, "rest.follow_up", written.GetEntryPoint())
	require.Equal(t, lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_INVERTED, inverted.GetOutcome())
	require.Equal(t, []int64{2, 1}, []int64{inverted.GetLines()[0].GetSessionId(), inverted.GetLines()[1].GetSessionId()})
	for _, evt := range got {
		require.Len(t, evt.GetLines(), 2)
		for _, l := range evt.GetLines() {
			require.Equal(t, "note", l.GetKind())
			require.Contains(t, l.GetMessage(), "via "+evt.GetEntryPoint())
		}
	}
	require.Contains(t, inverted.GetLines()[1].GetMessage(), "Uncle edge inverted: #1 → #2 replaced by #2 → #1")
}

// TestRecordUncleEdgeAnnouncementRollsBackWithTheChange: the announcement
// rides in Record's transaction, so a write that fails after it leaves
// neither the edge nor the event.
func TestRecordUncleEdgeAnnouncementRollsBackWithTheChange(t *testing.T) {
	t.Parallel()
	b := setupGraph(t)
	b.seed(t, spawn{1, 0}, spawn{2, 0})
	e := domain.UncleEdge{UncleSessionID: 1, SessionID: 2, EntryPoint: "rest.follow_up"}
	changed, ok := domain.UncleDecision{Outcome: domain.UncleWritten}.Changed(e, recordedAt)
	require.True(t, ok)
	failure := errors.New("the write after the announcement failed")
	err := b.store.Record(t.Context(), func(ctx context.Context, g app.UncleGraph) error {
		require.NoError(t, g.InsertUncleEdge(ctx, e))
		require.NoError(t, g.Announce(ctx, changed))
		return failure
	})
	require.ErrorIs(t, err, failure)
	require.Empty(t, b.uncleEdges(t))
	require.Empty(t, b.announced(t))

	// The same writes committed leave both.
	require.NoError(t, b.store.Record(t.Context(), func(ctx context.Context, g app.UncleGraph) error {
		if err := g.InsertUncleEdge(ctx, e); err != nil {
			return err
		}
		return g.Announce(ctx, changed)
	}))
	require.Equal(t, [][2]int64{{1, 2}}, b.uncleEdges(t))
	require.Len(t, b.announced(t), 1)
}

func TestRecordUncleEdgeValidation(t *testing.T) {
	t.Parallel()
	b := setupGraph(t)
	for _, e := range []domain.UncleEdge{
		{UncleSessionID: 0, SessionID: 1, EntryPoint: "x"},
		{UncleSessionID: 1, SessionID: -1, EntryPoint: "x"},
		{UncleSessionID: 1, SessionID: 2},
	} {
		_, err := b.record.Handle(t.Context(), e)
		var ve *validation.Error
		require.ErrorAs(t, err, &ve, "%+v", e)
	}
}

// TestRecordUncleEdgeFourCallCycle is the spec's case for the re-check
// after inversion: four individually legal calls that, without it, would
// leave A → B → X → A.
func TestRecordUncleEdgeFourCallCycle(t *testing.T) {
	t.Parallel()
	b := setupGraph(t)
	const a, bb, x = 1, 2, 3
	b.seed(t, spawn{a, 0}, spawn{bb, 0}, spawn{x, 0})

	require.Equal(t, domain.UncleWritten, b.mustRecord(t, bb, a)) // B → A
	require.Equal(t, domain.UncleWritten, b.mustRecord(t, x, a))  // X → A
	require.Equal(t, domain.UncleWritten, b.mustRecord(t, bb, x)) // B → X
	// A → B would invert B → A, but B still reaches A through X.
	require.Equal(t, domain.UncleRefusedSenior, b.mustRecord(t, a, bb))
	require.Equal(t, [][2]int64{{bb, a}, {bb, x}, {x, a}}, b.uncleEdges(t), "the inversion rolled back")
	requireAcyclic(t, b)

	// And the three-call shape: A → B, B → X, then X → A is refused.
	c := setupGraph(t)
	c.seed(t, spawn{a, 0}, spawn{bb, 0}, spawn{x, 0})
	require.Equal(t, domain.UncleWritten, c.mustRecord(t, a, bb))
	require.Equal(t, domain.UncleWritten, c.mustRecord(t, bb, x))
	require.Equal(t, domain.UncleRefusedSenior, c.mustRecord(t, x, a))
	requireAcyclic(t, c)
}

// TestRecordUncleEdgeLongLoop closes a 12-hop loop: far beyond MaxDepth,
// which must not be the reachability bound.
func TestRecordUncleEdgeLongLoop(t *testing.T) {
	t.Parallel()
	b := setupGraph(t)
	// 1 →(uncle) 2 →(spawn) 3 →(uncle) 4 … alternating, 13 sessions, 12 hops.
	var nodes []spawn
	for id := int64(1); id <= 13; id++ {
		var parent int64
		if id%2 == 1 && id > 1 {
			parent = id - 1
		}
		nodes = append(nodes, spawn{id, parent})
	}
	b.seed(t, nodes...)
	for id := int64(2); id <= 13; id += 2 {
		require.Equal(t, domain.UncleWritten, b.mustRecord(t, id-1, id), "uncle %d → %d", id-1, id)
	}
	require.Greater(t, 12, domain.MaxDepth)
	require.Equal(t, domain.UncleRefusedSenior, b.mustRecord(t, 13, 1))
	require.Equal(t, domain.UncleNothingAlreadyReachable, b.mustRecord(t, 1, 13))
	requireAcyclic(t, b)
}

// TestRecordUncleEdgeBudget runs the rules against 6,000-session chains,
// longer than ReachabilityBudget. Within the budget a path is found however
// long; past it the search cannot rule one out, and the writer refuses
// rather than risk a cycle (the spec lets the guarantee lapse there; we
// chose the safe side).
func TestRecordUncleEdgeBudget(t *testing.T) {
	t.Parallel()
	const n = 6000
	require.Greater(t, n, domain.ReachabilityBudget)

	t.Run("spawn chain", func(t *testing.T) {
		t.Parallel()
		b := setupGraph(t)
		_, err := b.pool.Exec(t.Context(), `
			INSERT INTO session_nodes (session_id, title, agent_root, status, genesis, scheduling_class,
				parent_session_id, session_updated_at)
			SELECT g, 'chain', 'zimmer', 'running', 'api', 'spot', NULLIF(g - 1, 0), now()
			FROM generate_series(1, $1::int) AS g`, n)
		require.NoError(t, err)

		// 3,999 hops: inside the budget, found.
		require.Equal(t, domain.UncleNothingSpawnAncestor, b.mustRecord(t, 4000, 1))
		// 5,999 hops: the budget runs out first; refused, not written.
		require.Equal(t, domain.UncleRefusedBudgetExhausted, b.mustRecord(t, n, 1))
		// Downward the search from the far end is short: 1 reaches 6000 is
		// not provable, but 6000 cannot reach 1 (1 has no seniors), so the
		// edge is written, redundant but harmless.
		require.Equal(t, domain.UncleWritten, b.mustRecord(t, 1, n))
		require.Empty(t, slices.DeleteFunc(b.uncleEdges(t), func(e [2]int64) bool { return e == [2]int64{1, n} }))
	})

	t.Run("uncle chain", func(t *testing.T) {
		t.Parallel()
		b := setupGraph(t)
		_, err := b.pool.Exec(t.Context(), `
			INSERT INTO session_nodes (session_id, title, agent_root, status, genesis, scheduling_class, session_updated_at)
			SELECT g, 'chain', 'zimmer', 'running', 'api', 'spot', now() FROM generate_series(1, $1::int) AS g`, n)
		require.NoError(t, err)
		_, err = b.pool.Exec(t.Context(), `
			INSERT INTO session_uncle_links (uncle_session_id, session_id, entry_point)
			SELECT g - 1, g, 'test' FROM generate_series(2, $1::int) AS g`, n)
		require.NoError(t, err)

		require.Equal(t, domain.UncleRefusedSenior, b.mustRecord(t, 4500, 1), "4,499 hops: found")
		require.Equal(t, domain.UncleRefusedBudgetExhausted, b.mustRecord(t, n, 1), "5,999 hops: not ruled out")
		var count int
		require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT count(*) FROM session_uncle_links`).Scan(&count))
		require.Equal(t, n-1, count, "nothing written")
	})
}

// TestRecordUncleEdgeNeverCycles records random uncle calls over a random
// spawn forest and checks after each call, with an independent in-memory
// depth-first search over every edge, that the graph is still acyclic.
func TestRecordUncleEdgeNeverCycles(t *testing.T) {
	t.Parallel()
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 42))
			b := setupGraph(t)
			const sessions = 30
			var nodes []spawn
			for id := int64(1); id <= sessions; id++ {
				var parent int64
				if id > 1 && rng.IntN(3) > 0 {
					parent = 1 + rng.Int64N(id-1)
				}
				nodes = append(nodes, spawn{id, parent})
			}
			b.seed(t, nodes...)

			seen := map[domain.UncleOutcome]int{}
			for range 150 {
				acting, target := 1+rng.Int64N(sessions), 1+rng.Int64N(sessions)
				before := b.uncleEdges(t)
				o := b.mustRecord(t, acting, target)
				seen[o]++
				after := b.uncleEdges(t)
				switch o {
				case domain.UncleWritten:
					require.Len(t, after, len(before)+1)
					require.Contains(t, after, [2]int64{acting, target})
				case domain.UncleInverted:
					require.Len(t, after, len(before))
					require.Contains(t, before, [2]int64{target, acting})
					require.Contains(t, after, [2]int64{acting, target})
				default:
					require.Equal(t, before, after, "%s writes nothing", o)
				}
				requireAcyclic(t, b)
			}
			require.NotZero(t, seen[domain.UncleWritten], "%v", seen)
		})
	}
}

// TestRecordUncleEdgeConcurrentOpposites records A → B and B → A at the
// same moment, many times: the lock must leave exactly one of them.
func TestRecordUncleEdgeConcurrentOpposites(t *testing.T) {
	t.Parallel()
	b := setupGraph(t)
	const pairs = 40
	var nodes []spawn
	for id := int64(1); id <= 2*pairs+3; id++ {
		nodes = append(nodes, spawn{id, 0})
	}
	b.seed(t, nodes...)

	for p := range int64(pairs) {
		a, c := 2*p+1, 2*p+2
		var wg sync.WaitGroup
		outcomes := make([]domain.UncleOutcome, 2)
		for i, call := range [][2]int64{{a, c}, {c, a}} {
			wg.Go(func() { outcomes[i] = b.recordOff(t, call[0], call[1]) })
		}
		wg.Wait()
		slices.Sort(outcomes)
		require.Equal(t, []domain.UncleOutcome{domain.UncleWritten, domain.UncleInverted}, outcomes)
	}
	edges := b.uncleEdges(t)
	require.Len(t, edges, pairs, "one edge per pair, never both")
	requireAcyclic(t, b)

	// Three sessions closing a triangle at once: never a cycle either.
	x, y, z := int64(2*pairs+1), int64(2*pairs+2), int64(2*pairs+3)
	for range 10 {
		var wg sync.WaitGroup
		for _, call := range [][2]int64{{x, y}, {y, z}, {z, x}} {
			wg.Go(func() { b.recordOff(t, call[0], call[1]) })
		}
		wg.Wait()
		requireAcyclic(t, b)
	}
}

// requireAcyclic loads every spawn and uncle edge and checks, by a full
// depth-first search with colours, that no cycle exists.
func requireAcyclic(t testing.TB, b graphBundle) {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), `
		SELECT spawn_parent_id, session_id FROM session_nodes WHERE spawn_parent_id IS NOT NULL
		UNION ALL SELECT uncle_session_id, session_id FROM session_uncle_links`)
	require.NoError(t, err)
	out := map[int64][]int64{}
	for rows.Next() {
		var from, to int64
		require.NoError(t, rows.Scan(&from, &to))
		out[from] = append(out[from], to)
	}
	require.NoError(t, rows.Err())

	const (
		white = iota
		grey
		black
	)
	colour := map[int64]int{}
	var visit func(id int64) []int64
	visit = func(id int64) []int64 {
		colour[id] = grey
		for _, next := range out[id] {
			switch colour[next] {
			case grey:
				return []int64{next, id}
			case white:
				if cycle := visit(next); cycle != nil {
					return append(cycle, id)
				}
			}
		}
		colour[id] = black
		return nil
	}
	for id := range out {
		if colour[id] == white {
			require.Nil(t, visit(id), "cycle through these sessions (reversed)")
		}
	}
}
