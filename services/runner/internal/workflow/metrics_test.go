package workflow_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/platform/metrics"
	"github.com/zimmerhq/zimmer/services/platform/slogx"
	rw "github.com/zimmerhq/zimmer/services/runner/internal/workflow"
)

// RunTurn times the whole path of a turn's first process in the histogram
// of its request's kind: a creation or a resume from lifecycle's request
// (zimmer_runner_request_to_agent_seconds{kind}), a hand-over from the
// exit before it (zimmer_runner_exit_to_next_agent_seconds). A process
// without an origin (a recovery's) is not timed, and an origin ahead of
// the node's clock counts as no wait. No other test in this package sets
// an origin, so the counts are this test's alone.
func TestRunTurnTimesTheWholePathFromItsRequest(t *testing.T) {
	t.Parallel()
	exp, err := metrics.Start("runner", "127.0.0.1:0", slogx.Discard())
	require.NoError(t, err)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- exp.Serve(ctx) }()
	t.Cleanup(func() { stop(); require.NoError(t, <-done); exp.Close() })

	f := newTurnFixture(t)
	for _, asked := range []rw.Asked{
		{Kind: rw.KindResume, At: time.Now().Add(-3 * time.Second)},
		{Kind: rw.KindHandOver, At: time.Now().Add(-3 * time.Second)},
		{Kind: rw.KindFirst, At: time.Now().Add(time.Hour)}, // lifecycle's clock ahead
		{}, // a recovery's process
	} {
		_, err := f.env.ExecuteActivity(rw.ActivityRunTurn, rw.RunTurnRequest{
			Session: rw.SessionSpec{ID: 7, Runtime: "demo"}, TurnID: "session-7/turn-1", Prompt: "@demo say hi",
			Workspace: rw.Workspace{Workdir: t.TempDir(), StateDir: t.TempDir()}, Asked: asked,
		})
		require.NoError(t, err)
	}

	body := scrape(t, exp.Addr())
	const scope = `otel_scope_name="github.com/zimmerhq/zimmer",otel_scope_schema_url="",otel_scope_version=""`
	for _, line := range []string{
		`zimmer_runner_request_to_agent_seconds_count{kind="resume",` + scope + `,runtime="demo"} 1`,
		`zimmer_runner_request_to_agent_seconds_bucket{kind="resume",` + scope + `,runtime="demo",le="2.5"} 0`,
		`zimmer_runner_request_to_agent_seconds_bucket{kind="resume",` + scope + `,runtime="demo",le="5"} 1`,
		`zimmer_runner_request_to_agent_seconds_bucket{kind="first",` + scope + `,runtime="demo",le="0.005"} 1`,
		`zimmer_runner_request_to_agent_seconds_sum{kind="first",` + scope + `,runtime="demo"} 0`,
		`zimmer_runner_exit_to_next_agent_seconds_count{` + scope + `,runtime="demo"} 1`,
		`zimmer_runner_exit_to_next_agent_seconds_bucket{` + scope + `,runtime="demo",le="2.5"} 0`,
		`zimmer_runner_exit_to_next_agent_seconds_bucket{` + scope + `,runtime="demo",le="5"} 1`,
	} {
		require.Contains(t, body, line+"\n")
	}
}

func scrape(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + metrics.Path)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return strings.ReplaceAll(string(b), "\r\n", "\n")
}
