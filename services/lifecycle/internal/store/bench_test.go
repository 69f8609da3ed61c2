package store_test

import (
	"context"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/app"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/events"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/store"
	"github.com/zimmerhq/zimmer/services/platform/clock"
	"github.com/zimmerhq/zimmer/services/platform/inbox"
	"github.com/zimmerhq/zimmer/services/platform/outbox"
	"github.com/zimmerhq/zimmer/services/platform/pgtest"
	"github.com/zimmerhq/zimmer/services/platform/slogx"
)

// benchParallelism multiplies GOMAXPROCS into the goroutines of the
// parallel variants: a transition mostly waits on round trips, so on a
// two-core machine two goroutines would say little about contention.
const benchParallelism = 4

// BenchmarkTransition measures a state-machine transition on real Postgres
// beside a raw single-row UPDATE … RETURNING in autocommit on the same
// database. It is a measurement, not a goal: sessions change state at agent
// pace, so the write path is kept simple (lock, decide, one batch) rather
// than fast. All variants run back to back in one function, on one fresh
// database, so their ratio is taken on one machine state. Every variant
// reports ops/s and roundtrips/op (statements and batches sent, BEGIN and
// COMMIT included); the transition variants also report rate_vs_raw, their
// ops/s ÷ the raw variant's mean ops/s over this run's repetitions. The
// interleaved variants measure that ratio with both sides under the same
// load.
//
// Each transition op is one app.TransitionSession.Handle on a running
// session, alternating a pair that is always legal:
//
//   - block_unblock: block_on_elicitation / unblock_from_elicitation, the
//     lightest pair (one timeline line, at most one effect);
//   - pause_resume: pause / resume, the realistic heavy pair (pause records
//     four effects on a titled session, resume three, and resume records the
//     experimental setting flags).
//
// The parallel variants give every goroutine its own session: transitions
// of different sessions must not wait on one another's row locks.
//
//	ZIMMER_TEST_DATABASE_URL=… go test -run '^$' -bench BenchmarkTransition -benchtime=2s -count=3 ./internal/store/
func BenchmarkTransition(b *testing.B) {
	ctx := context.Background()
	trips := &roundTrips{}
	pool := openCounted(b, pgtest.NewDatabase(b, inbox.Migrations, outbox.Migrations, store.Migrations), trips)
	now := clock.System{}
	sessions := app.NewSessions(store.NewSessions(pool, events.Codec{}, nil, slogx.Discard()), now, app.DefaultTrashRetention)

	// newSessions creates n titled sessions (an untitled one would add an
	// inference effect to every pause) and, when running is set, starts them.
	newSessions := func(b *testing.B, n int, running bool) (ids []int64, refs []string) {
		b.Helper()
		for range n {
			s, err := sessions.Create.Handle(ctx, domain.NewSession{Prompt: "benchmark", Title: "benchmark", GitRoot: "g"})
			require.NoError(b, err)
			ref := strconv.FormatInt(s.ID, 10)
			if running {
				_, err := sessions.Transition.Handle(ctx, ref, app.Verb(domain.EventStart), domain.Command{RunningJobID: "job-bench"})
				require.NoError(b, err)
			}
			ids, refs = append(ids, s.ID), append(refs, ref)
		}
		return ids, refs
	}

	rawUpdate := func(id int64) error {
		var status domain.Status
		return pool.QueryRow(ctx,
			`UPDATE sessions SET updated_at = $2, version = version + 1 WHERE id = $1 RETURNING status`,
			id, now.Now()).Scan(&status)
	}

	type pair struct {
		name        string
		there, back domain.Event
	}
	light := pair{"block_unblock", domain.EventBlockOnElicitation, domain.EventUnblockFromElicitation}
	heavy := pair{"pause_resume", domain.EventPause, domain.EventResume}
	commands := map[domain.Event]domain.Command{
		domain.EventPause:  {PausedBy: "user"},
		domain.EventResume: {RunningJobID: "job-bench"},
	}
	// toggle fires the i-th transition of p: there on even i, back on odd.
	toggle := func(ref string, p pair, i int) error {
		e := p.there
		if i%2 == 1 {
			e = p.back
		}
		_, err := sessions.Transition.Handle(ctx, ref, app.Verb(e), commands[e])
		return err
	}

	var rawSerial, rawParallel baseline
	b.Run("raw_update_returning", func(b *testing.B) {
		ids, _ := newSessions(b, 1, false)
		trips.reset()
		for b.Loop() {
			if err := rawUpdate(ids[0]); err != nil {
				b.Fatal(err)
			}
		}
		rawSerial.add(report(b, trips, nil))
	})
	for _, p := range []pair{light, heavy} {
		b.Run("transition_"+p.name, func(b *testing.B) {
			_, refs := newSessions(b, 1, true)
			trips.reset()
			i := 0
			for b.Loop() {
				if err := toggle(refs[0], p, i); err != nil {
					b.Fatal(err)
				}
				i++
			}
			report(b, trips, &rawSerial)
		})
	}

	// The machine these run on is shared and its load swings within
	// seconds, so the repetitions above may compare a quiet raw run with a
	// loaded transition run. These variants alternate one transition and
	// one raw update per iteration and time each, so both sides of their
	// rate_vs_raw see the same load; their ns/op is the pair's.
	for _, p := range []pair{light, heavy} {
		b.Run("interleaved_"+p.name, func(b *testing.B) {
			ids, _ := newSessions(b, 1, false)
			// Fill the heap page the raw row lives on, so the transition's
			// row is elsewhere: sharing a page, its non-HOT updates would
			// slow the raw UPDATE down and flatter the ratio.
			newSessions(b, 64, false)
			_, refs := newSessions(b, 1, true)
			var raw, transition time.Duration
			i := 0
			for b.Loop() {
				t0 := time.Now()
				if err := toggle(refs[0], p, i); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if err := rawUpdate(ids[0]); err != nil {
					b.Fatal(err)
				}
				raw, transition = raw+time.Since(t1), transition+t1.Sub(t0)
				i++
			}
			b.ReportMetric(float64(raw.Nanoseconds())/float64(b.N), "raw-ns/op")
			b.ReportMetric(float64(transition.Nanoseconds())/float64(b.N), "transition-ns/op")
			b.ReportMetric(float64(raw)/float64(transition), "rate_vs_raw")
		})
	}

	// RunParallel runs its body several times per measurement with growing
	// b.N (the first with b.N = 1), so setup happens per call and the last
	// call's numbers are the measurement's. The pool is grown to one
	// connection per goroutine first, so no measurement pays for opening
	// connections.
	goroutines := benchParallelism * runtime.GOMAXPROCS(0)
	conns := make([]*pgxpool.Conn, goroutines)
	for i := range conns {
		var err error
		conns[i], err = pool.Acquire(ctx)
		require.NoError(b, err)
	}
	for _, c := range conns {
		c.Release()
	}
	b.Run("raw_update_returning_parallel", func(b *testing.B) {
		ids, _ := newSessions(b, goroutines, false)
		var next atomic.Int64
		b.SetParallelism(benchParallelism)
		trips.reset()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			id := ids[next.Add(1)-1]
			for pb.Next() {
				if err := rawUpdate(id); err != nil {
					b.Error(err)
					return
				}
			}
		})
		rawParallel.set(b.N == 1, report(b, trips, nil))
	})
	b.Run("transition_"+light.name+"_parallel", func(b *testing.B) {
		_, refs := newSessions(b, goroutines, true)
		var next atomic.Int64
		b.SetParallelism(benchParallelism)
		trips.reset()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			ref := refs[next.Add(1)-1]
			for i := 0; pb.Next(); i++ {
				if err := toggle(ref, light, i); err != nil {
					b.Error(err)
					return
				}
			}
		})
		report(b, trips, &rawParallel)
	})
}

// report adds ops/s, roundtrips/op and, given a baseline, rate_vs_raw to the
// measurement just taken, and returns its ns/op.
func report(b *testing.B, trips *roundTrips, raw *baseline) float64 {
	ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(float64(time.Second)/ns, "ops/s")
	b.ReportMetric(float64(trips.n.Load())/float64(b.N), "roundtrips/op")
	if raw != nil && raw.mean() > 0 {
		b.ReportMetric(raw.mean()/ns, "rate_vs_raw")
	}
	return ns
}

// baseline is a raw variant's ns/op, one per -count repetition. The
// repetitions of one sub-benchmark run consecutively, so the transitions are
// compared with the mean of all of this run's raw repetitions.
type baseline struct{ ns []float64 }

func (bl *baseline) add(ns float64) { bl.ns = append(bl.ns, ns) }

// set records the current call of a RunParallel body: a new repetition when
// fresh, else a re-measurement (with a larger b.N) of the current one.
func (bl *baseline) set(fresh bool, ns float64) {
	if fresh || len(bl.ns) == 0 {
		bl.add(ns)
		return
	}
	bl.ns[len(bl.ns)-1] = ns
}

func (bl *baseline) mean() float64 {
	if len(bl.ns) == 0 {
		return 0
	}
	var sum float64
	for _, ns := range bl.ns {
		sum += ns
	}
	return sum / float64(len(bl.ns))
}

// roundTrips counts what the pool sends: each Exec, Query and QueryRow
// (BEGIN, COMMIT and savepoints included) and each batch is one round trip.
// A statement's first use on a connection costs one more, to prepare it.
type roundTrips struct{ n atomic.Int64 }

func (c *roundTrips) reset() { c.n.Store(0) }

func (c *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}
func (c *roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (c *roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.n.Add(1)
	return ctx
}
func (c *roundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (c *roundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// openCounted opens a pool on url as pgdb.Open does (at least 16
// connections), with trips counting its round trips.
func openCounted(b *testing.B, url string, trips *roundTrips) *pgxpool.Pool {
	b.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	require.NoError(b, err)
	cfg.MaxConns = max(cfg.MaxConns, 16)
	cfg.ConnConfig.Tracer = trips
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(b, err)
	b.Cleanup(pool.Close)
	require.NoError(b, pool.Ping(context.Background()))
	return pool
}
