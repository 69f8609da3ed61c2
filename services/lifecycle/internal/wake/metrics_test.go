package wake_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/app"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/wake"
	"github.com/zimmerhq/zimmer/services/platform/metrics"
	"github.com/zimmerhq/zimmer/services/platform/slogx"
)

// TestFiringRecordsItsLateness: a trigger fired 3 s after its time is
// counted in zimmer_wake_lateness_seconds, by outcome, in the bucket that
// holds 3 s and not in the one below (PL-24).
func TestFiringRecordsItsLateness(t *testing.T) {
	exp, err := metrics.Start("lifecycle", "127.0.0.1:0", slogx.Discard())
	require.NoError(t, err)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- exp.Serve(ctx) }()
	t.Cleanup(func() { stop(); require.NoError(t, <-done); exp.Close() })

	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(tlog.NewStructuredLogger(slogx.Discard()))
	env := suite.NewTestActivityEnvironment()
	f := &fakeFirer{now: time.Now, answers: []func() (app.Fired, error){delivered}}
	(&wake.Activities{Fire: f}).Register(env)
	_, err = env.ExecuteActivity(wake.ActivityFireTrigger, wake.Input{TriggerID: 7, SessionID: 5, FireAt: time.Now().Add(-3 * time.Second)})
	require.NoError(t, err)

	resp, err := http.Get("http://" + exp.Addr() + metrics.Path)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	body := string(b)
	require.Contains(t, body, `zimmer_wake_lateness_seconds_count{otel_scope_name="github.com/zimmerhq/zimmer",otel_scope_schema_url="",otel_scope_version="",outcome="delivered"} 1`)
	bucket := func(le string) string {
		for _, line := range strings.Split(body, "\n") {
			if strings.HasPrefix(line, "zimmer_wake_lateness_seconds_bucket{") && strings.Contains(line, `le="`+le+`"`) {
				return line[strings.LastIndex(line, " ")+1:]
			}
		}
		return "missing"
	}
	require.Equal(t, "0", bucket("2.5"), "3 s late is not under 2.5 s")
	require.Equal(t, "1", bucket("5"), "3 s late is under 5 s")
}
