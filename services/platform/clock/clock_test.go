package clock_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/platform/clock"
)

func TestSystemIsUTCToTheMicrosecond(t *testing.T) {
	t.Parallel()
	before := time.Now()
	now := clock.System{}.Now()
	require.Equal(t, time.UTC, now.Location())
	require.Zero(t, now.Nanosecond()%int(time.Microsecond), "sub-microsecond digits survive: %v", now)
	require.WithinDuration(t, before, now, time.Second)
}

func TestStubStandsStillUntilMoved(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	s := clock.NewStub(t0)
	require.Equal(t, t0, s.Now())
	require.Equal(t, t0, s.Now(), "a stub does not move by itself")

	require.Equal(t, t0.Add(90*time.Second), s.Advance(90*time.Second))
	require.Equal(t, t0.Add(90*time.Second), s.Now())

	t1 := t0.Add(-time.Hour)
	s.Set(t1)
	require.Equal(t, t1, s.Now(), "Set may move the clock backwards")
}

func TestStubIsSafeForConcurrentUse(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	s := clock.NewStub(t0)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				s.Advance(time.Second)
				_ = s.Now()
			}
		})
	}
	wg.Wait()
	require.Equal(t, t0.Add(800*time.Second), s.Now(), "every Advance counted once")
}

var _ clock.Clock = clock.System{}
var _ clock.Clock = (*clock.Stub)(nil)
