package store

import (
	"crypto/sha256"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lineage/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/pgtest"
)

func digestOf(s string) []byte { d := sha256.Sum256([]byte(s)); return d[:] }

func TestSignInLivesUntilIdleThenIsGone(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.DB(t, testSets...)
	s := NewSignIns(pool)
	t0 := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	get := func(at time.Time, touch bool) (string, error) {
		return s.GetSignIn(ctx, digestOf("a"), at, domain.SignInExpiredBefore(at), at.Add(-domain.SignInTouchEvery), touch)
	}
	lastSeen := func() time.Time {
		var seen time.Time
		require.NoError(t, pool.QueryRow(ctx, `SELECT last_seen FROM console_sign_ins WHERE cookie_sha256 = $1`, digestOf("a")).Scan(&seen))
		return seen.UTC()
	}

	require.NoError(t, s.StartSignIn(ctx, digestOf("a"), "csrf-a", t0, domain.SignInExpiredBefore(t0), 10))
	require.ErrorIs(t, s.StartSignIn(ctx, digestOf("a"), "other", t0, domain.SignInExpiredBefore(t0), 10), domain.ErrAlreadyExists)

	csrf, err := get(t0.Add(30*time.Second), true)
	require.NoError(t, err)
	require.Equal(t, "csrf-a", csrf)
	require.Equal(t, t0, lastSeen(), "touched at most once a minute: a page view stays one read")
	_, err = get(t0.Add(2*time.Minute), false)
	require.NoError(t, err)
	require.Equal(t, t0, lastSeen(), "a check without touch is not activity")
	_, err = get(t0.Add(2*time.Minute), true)
	require.NoError(t, err)
	require.Equal(t, t0.Add(2*time.Minute), lastSeen())

	// Idle past the TTL from the last touch: gone, although the row waits
	// for the next sign-in to delete it.
	_, err = get(t0.Add(2*time.Minute+domain.SignInIdleTTL), true)
	require.NoError(t, err, "exactly the TTL idle is still live")
	late := t0.Add(4*time.Minute + 2*domain.SignInIdleTTL)
	_, err = get(late, true)
	require.ErrorIs(t, err, domain.ErrNotFound)
	require.NoError(t, s.StartSignIn(ctx, digestOf("b"), "csrf-b", late, domain.SignInExpiredBefore(late), 10))
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM console_sign_ins`).Scan(&n))
	require.Equal(t, 1, n, "the expired sign-in was deleted by the next one")

	// Sign-out is final, and repeating it is harmless.
	require.NoError(t, s.EndSignIn(ctx, digestOf("b")))
	require.NoError(t, s.EndSignIn(ctx, digestOf("b")))
	_, err = s.GetSignIn(ctx, digestOf("b"), late, domain.SignInExpiredBefore(late), late, true)
	require.ErrorIs(t, err, domain.ErrNotFound)
}

// Concurrent sign-ins never overrun the cap, and the ones that go are the
// ones idle longest.
func TestSignInsBoundedUnderConcurrency(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.DB(t, testSets...)
	s := NewSignIns(pool)
	const max = 5
	t0 := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	// The oldest, then one used recently.
	require.NoError(t, s.StartSignIn(ctx, digestOf("old"), "x", t0, domain.SignInExpiredBefore(t0), max))
	require.NoError(t, s.StartSignIn(ctx, digestOf("used"), "x", t0, domain.SignInExpiredBefore(t0), max))
	at := t0.Add(time.Hour)
	_, err := s.GetSignIn(ctx, digestOf("used"), at, domain.SignInExpiredBefore(at), at.Add(-domain.SignInTouchEvery), true)
	require.NoError(t, err)

	// Full: the next sign-in ends the one idle longest, not the oldest-made.
	for i := range max - 2 {
		require.NoError(t, s.StartSignIn(ctx, digestOf(fmt.Sprint("mid", i)), "x", at, domain.SignInExpiredBefore(at), max))
	}
	require.NoError(t, s.StartSignIn(ctx, digestOf("one more"), "x", at, domain.SignInExpiredBefore(at), max))
	_, err = s.GetSignIn(ctx, digestOf("old"), at, domain.SignInExpiredBefore(at), at, false)
	require.ErrorIs(t, err, domain.ErrNotFound, "idle longest")
	_, err = s.GetSignIn(ctx, digestOf("used"), at, domain.SignInExpiredBefore(at), at, false)
	require.NoError(t, err, "made as early, but used since")

	var wg sync.WaitGroup
	errs := make(chan error, 12)
	for i := range 12 {
		wg.Go(func() {
			now := t0.Add(2*time.Hour + time.Duration(i)*time.Second)
			errs <- s.StartSignIn(ctx, digestOf(fmt.Sprint("new", i)), "x", now, domain.SignInExpiredBefore(now), max)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM console_sign_ins`).Scan(&n))
	require.Equal(t, max, n)
}

// Attempts sent at once from one address are counted one by one: exactly
// max are let through, however many race, and another address is counted
// on its own.
func TestSignInAttemptsAreCountedOneByOneUnderConcurrency(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.DB(t, testSets...)
	s := NewSignIns(pool)
	const max = 5
	now := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	attempt := func(addr string, at time.Time) ([]time.Time, bool) {
		attempts, counted, err := s.AttemptSignIn(ctx, addr, at, domain.SignInAttemptsSince(at), max)
		require.NoError(t, err)
		return attempts, counted
	}

	// The pool's connections open first and the attempts wait at a gate,
	// so that they really do race.
	warm := make([]*pgxpool.Conn, 0, 16)
	for range 16 {
		c, err := pool.Acquire(ctx)
		require.NoError(t, err)
		warm = append(warm, c)
	}
	for _, c := range warm {
		c.Release()
	}
	gate := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	let := 0
	for range 30 {
		wg.Go(func() {
			<-gate
			_, counted, err := s.AttemptSignIn(ctx, "192.0.2.7", now, domain.SignInAttemptsSince(now), max)
			if err != nil {
				t.Error(err)
				return
			}
			if counted {
				mu.Lock()
				let++
				mu.Unlock()
			}
		})
	}
	close(gate)
	wg.Wait()
	require.Equal(t, max, let, "exactly max of 30 racing attempts let through")
	attempts, counted := attempt("192.0.2.7", now.Add(time.Minute))
	require.False(t, counted)
	require.Len(t, attempts, max, "a refused attempt is not counted")
	_, counted = attempt("198.51.100.1", now.Add(time.Minute))
	require.True(t, counted, "another address has its own count")

	// Past the window the old attempts no longer count, and are deleted by
	// any address's next attempt.
	later := now.Add(domain.SignInAttemptWindow)
	attempts, counted = attempt("198.51.100.1", later)
	require.True(t, counted)
	require.Len(t, attempts, 2, "its first attempt is still within the window")
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM console_sign_in_attempts WHERE address = '192.0.2.7'`).Scan(&n))
	require.Zero(t, n, "old attempts deleted by another address's attempt")

	// A right password clears the address's attempts.
	require.NoError(t, s.ClearSignInAttempts(ctx, "198.51.100.1"))
	attempts, counted = attempt("198.51.100.1", later)
	require.True(t, counted)
	require.Len(t, attempts, 1)
}
