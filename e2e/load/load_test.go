package load

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPercentileIsNearestRank(t *testing.T) {
	var r Result
	for i := 1; i <= 100; i++ {
		r.Latencies = append(r.Latencies, time.Duration(i)*time.Millisecond)
	}
	require.Equal(t, 50*time.Millisecond, r.Percentile(50))
	require.Equal(t, 99*time.Millisecond, r.Percentile(99))
	require.Equal(t, 100*time.Millisecond, r.Percentile(100))
	require.Equal(t, 1*time.Millisecond, r.Percentile(0.1))
	require.Equal(t, time.Duration(0), Result{}.Percentile(99))
	r.Latencies = r.Latencies[:3]
	require.Equal(t, 3*time.Millisecond, r.Percentile(99), "few samples: p99 is the maximum")
	require.Equal(t, 2*time.Millisecond, r.Mean())
}

func TestRunInterleavesScenariosInRounds(t *testing.T) {
	var (
		mu  sync.Mutex
		log []string
	)
	scenario := func(name string) Scenario {
		return Scenario{Name: name, Do: func(context.Context) error {
			mu.Lock()
			defer mu.Unlock()
			if len(log) == 0 || log[len(log)-1] != name {
				log = append(log, name)
			}
			return nil
		}}
	}
	rep, err := Run(context.Background(), Config{Requests: 30, Warmup: 5, Workers: 3, Round: 10, MaxDuration: time.Minute},
		scenario("a"), scenario("b"))
	require.NoError(t, err)
	require.False(t, rep.TimedOut)
	// Warm-up a, b; then rounds a b, b a, a b (runs of one name collapse).
	require.Equal(t, []string{"a", "b", "a", "b", "a", "b"}, log)
	for _, r := range rep.Results {
		require.Len(t, r.Latencies, 30)
		require.Zero(t, r.Errors)
	}
}

func TestRunCountsFailuresAndStopsAtTheDeadline(t *testing.T) {
	var calls atomic.Int64
	boom := errors.New("boom")
	slow := Scenario{Name: "slow", Do: func(context.Context) error {
		time.Sleep(5 * time.Millisecond)
		if calls.Add(1)%2 == 0 {
			return boom
		}
		return nil
	}}
	start := time.Now()
	rep, err := Run(context.Background(), Config{Requests: 1_000_000, Workers: 2, Round: 10, MaxDuration: 200 * time.Millisecond}, slow)
	require.NoError(t, err)
	require.Less(t, time.Since(start), 2*time.Second)
	require.True(t, rep.TimedOut)
	r := rep.Result("slow")
	require.NotZero(t, r.Errors)
	require.ErrorIs(t, r.FirstErr, boom)
	require.InDelta(t, len(r.Latencies), r.Errors, 2)
}

func TestGetChecksStatusAndBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-API-Key") != "k" {
			http.Error(w, "no key", http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	defer srv.Close()
	c := NewHTTPClient(2)
	ctx := context.Background()
	require.NoError(t, Get(c, srv.URL, http.Header{"X-Api-Key": {"k"}}, nil)(ctx))
	require.ErrorContains(t, Get(c, srv.URL, nil, nil)(ctx), "401")
	require.ErrorContains(t, Get(c, srv.URL, http.Header{"X-Api-Key": {"k"}}, func(_ *http.Response, b []byte) error {
		return errors.New("refused " + string(b))
	})(ctx), "refused ok")
}
