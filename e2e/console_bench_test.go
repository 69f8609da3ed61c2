package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
)

// TestConsoleDashboardTimeWith1000Sessions is the console's measurement
// (docs/benchmarks.md, "Console"): the dashboard's time on the real stack
// with ZIMMER_BENCH_CONSOLE_SESSIONS (1,000) sessions, half of them
// needs_input, the rest waiting. It takes about a minute to set up, so it
// runs only when asked: ZIMMER_BENCH_CONSOLE=1.
func TestConsoleDashboardTimeWith1000Sessions(t *testing.T) {
	if os.Getenv("ZIMMER_BENCH_CONSOLE") != "1" {
		t.Skip("console measurement: set ZIMMER_BENCH_CONSOLE=1 (about a minute; see docs/benchmarks.md)")
	}
	sessions := benchEnvInt(t, "ZIMMER_BENCH_CONSOLE_SESSIONS", 1000)
	requests := benchEnvInt(t, "ZIMMER_BENCH_CONSOLE_REQUESTS", 200)
	s := newConsoleStackWith(t, stackOptions{})
	lifecycle := lifecyclev1.NewLifecycleServiceClient(s.dial("lifecycle", s.asAdmin()))
	ctx := context.Background()

	// 1,000 sessions, eight at a time; every other one brought to rest
	// (start, pause: needs_input), so both views hold hundreds.
	ids := make(chan int, sessions)
	for i := range sessions {
		ids <- i
	}
	close(ids)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range ids {
				resp, err := lifecycle.CreateSession(ctx, &lifecyclev1.CreateSessionRequest{
					Prompt: fmt.Sprintf("bench session %d", i), GitRoot: "git@example.com:acme/bench.git",
					Title: fmt.Sprintf("Bench session %d with a title long enough to wrap on a phone", i),
				})
				if err != nil {
					t.Errorf("create %d: %v", i, err)
					return
				}
				if i%2 == 1 {
					continue
				}
				for _, ev := range []string{"start", "pause"} {
					if _, err := lifecycle.TransitionSession(ctx, &lifecyclev1.TransitionSessionRequest{
						SessionId: fmt.Sprint(resp.GetSession().GetId()), Event: ev,
					}); err != nil {
						t.Errorf("%s %d: %v", ev, i, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	require.False(t, t.Failed())

	browser := newConsoleBrowser(t, "http://"+s.addr["gateway"])
	browser.signIn(t)
	for _, view := range []struct{ name, path string }{
		{"needs_input (the default)", "/console/?reset=1"},
		{"every status", "/console/?filter=1"},
		{"a search", "/console/?filter=1&q=session+42"},
	} {
		for range 10 { // warm-up
			code, body := browser.get(t, view.path)
			require.Equal(t, http.StatusOK, code, body)
		}
		times := make([]time.Duration, 0, requests)
		for range requests {
			start := time.Now()
			code, body := browser.get(t, view.path)
			times = append(times, time.Since(start))
			require.Equal(t, http.StatusOK, code, body)
		}
		slices.Sort(times)
		t.Logf("%s over %d sessions, %d requests: p50 %s, p90 %s, p99 %s, max %s", view.name, sessions, requests,
			percentile(times, 50), percentile(times, 90), percentile(times, 99), times[len(times)-1])
	}

	// A live dashboard of the default view: from a transition's answer to
	// the event that shows it (the 150 ms gathering included), one at a
	// time, the newest session moving in and out of the view.
	code, _ := browser.get(t, "/console/?reset=1")
	require.Equal(t, http.StatusOK, code)
	events, _ := browser.openLive(t, "class=&q=&status=needs_input", "")
	waitLive(t, events, 10*time.Second, func(liveEvent) bool { return true })
	newest, err := lifecycle.ListSessions(ctx, &lifecyclev1.ListSessionsRequest{Status: []string{"needs_input"}, PerPage: 1})
	require.NoError(t, err)
	id := newest.GetSessions()[0].GetId()
	card := fmt.Sprintf(`id="session-%d"`, id)
	var lags []time.Duration
	for i := range 40 {
		ev := map[bool]string{true: "resume", false: "pause"}[i%2 == 0]
		_, err := lifecycle.TransitionSession(ctx, &lifecyclev1.TransitionSessionRequest{SessionId: fmt.Sprint(id), Event: ev})
		require.NoError(t, err)
		done := time.Now()
		e := waitLive(t, events, 10*time.Second, func(e liveEvent) bool { return strings.Contains(e.data, card) == (ev == "pause") })
		lags = append(lags, e.at.Sub(done))
	}
	slices.Sort(lags)
	t.Logf("live: a transition to its event over %d sessions, %d moves: p50 %s, p90 %s, max %s", sessions, len(lags),
		percentile(lags, 50), percentile(lags, 90), lags[len(lags)-1])
}
