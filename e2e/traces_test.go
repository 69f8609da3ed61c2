package e2e_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/grpc"
)

// TestTraces: every binary exports its spans over OTLP (the standard
// OTEL_* variables) to a collector on loopback, and one trace runs from
// the REST request through the gateway, lifecycle, lifecycle's outbox
// relay, the runner's event consumer, its workflow and RunTurn activity to
// the agent's start, whose environment names that trace in TRACEPARENT
// (issue 30, item 3; PL-26).
func TestTraces(t *testing.T) {
	t.Parallel()
	col := newOTLPCollector(t)
	otel := []string{
		"OTEL_TRACES_EXPORTER=otlp",
		"OTEL_EXPORTER_OTLP_PROTOCOL=grpc",
		"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + col.addr,
		"OTEL_BSP_SCHEDULE_DELAY=100", // ms: the test waits for the spans
	}
	env := map[string][]string{}
	for _, name := range append([]string{"gateway"}, services...) {
		env[name] = otel
	}
	s := newStackWith(t, stackOptions{turns: true, env: env})
	api := restClient{base: "http://" + s.addr["gateway"], key: s.apiKey}
	repo := gitRepo(t)

	// A create: its first turn's agent sleeps, so its environment can be
	// read while it runs.
	id := api.createRunning(t, repo, "@demo sleep 5s")
	start := col.waitSpan(t, "agent start", fmt.Sprint(id), "")
	requireOneTrace(t, col, start, "POST /api/v1/", []hop{
		{"gateway", "zimmer.lifecycle.v1.LifecycleService/CreateSession"},
		{"lifecycle", "zimmer.lifecycle.v1.LifecycleService/CreateSession"},
		{"runner", "RunWorkflow:zimmer.runner.Session"},
	})

	// A follow-up: the session's workflow is running already and takes the
	// turn from a signal, yet the turn's activities and the agent are in
	// the follow-up's trace, not the create's.
	api.waitStatus(t, id, "needs_input")
	code, resp := api.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/follow_up", id), `{"prompt":"@demo sleep 5s"}`)
	require.Equal(t, http.StatusOK, code, resp)
	next := col.waitSpan(t, "agent start", fmt.Sprint(id), start.traceID)
	requireOneTrace(t, col, next, "POST /api/v1/", []hop{
		{"gateway", "zimmer.queue.v1.QueueService/FollowUp"},
		{"queue", "zimmer.queue.v1.QueueService/FollowUp"},
		{"runner", "HandleSignal:turn"},
		{"runner", "Turn:"},
	})
}

// hop is a span a trace must hold: its service and its name's prefix.
type hop struct{ service, name string }

// requireOneTrace checks that start (the runner's "agent start" span) is
// in one trace with the gateway's root span rootName, the outbox relay's
// delivery to the runner's consumer, its signal and RunTurn activity, and
// also, and that the agent's TRACEPARENT names start.
func requireOneTrace(t *testing.T, col *otlpCollector, start otlpSpan, rootName string, also []hop) {
	t.Helper()
	pid := start.attrs["process.pid"]
	require.NotEmpty(t, pid, "the agent start span names the agent's pid")
	environ, err := os.ReadFile("/proc/" + pid + "/environ")
	require.NoError(t, err, "the agent is still running")
	var traceparent string
	for kv := range bytes.SplitSeq(environ, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("TRACEPARENT=")); ok {
			traceparent = string(v)
		}
	}
	require.Equal(t, "00-"+start.traceID+"-"+start.spanID+"-01", traceparent,
		"the agent's environment names the agent start span")

	// Every hop's span is in the trace; spans are exported in batches, and
	// the activity's when the agent exits, so wait for the slowest.
	want := append([]hop{
		{"gateway", rootName},
		{"lifecycle", "outbox deliver "},
		{"runner", "zimmer.lifecycle.v1.SessionEventConsumerService/ConsumeSessionEvent"},
		{"runner", "SignalWithStartWorkflow:"},
		{"runner", "StartActivity:zimmer.runner.RunTurn"},
		{"runner", "RunActivity:zimmer.runner.RunTurn"},
	}, also...)
	// Every other span's parent is in the trace too: nothing hangs off a
	// hop the collector never heard of.
	var spans []otlpSpan
	var byID map[string]otlpSpan
	orphans := func() []string {
		var out []string
		for _, sp := range spans {
			if _, ok := byID[sp.parentID]; sp.parentID != "" && !ok {
				out = append(out, sp.service+"/"+sp.name)
			}
		}
		return out
	}
	complete := func() bool {
		spans = col.trace(start.traceID)
		byID = map[string]otlpSpan{}
		for _, sp := range spans {
			byID[sp.spanID] = sp
		}
		for _, w := range want {
			if !hasSpan(spans, w.service, w.name) {
				return false
			}
		}
		return len(orphans()) == 0
	}
	for deadline := time.Now().Add(30 * time.Second); !complete() && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	require.True(t, complete(), "want every hop's span in trace %s and no parent missing (missing for %q); have:\n%s",
		start.traceID, orphans(), describe(spans))

	// One root, the gateway's HTTP span.
	var roots []otlpSpan
	for _, sp := range spans {
		if sp.parentID == "" {
			roots = append(roots, sp)
		}
	}
	require.Len(t, roots, 1, "one root:\n%s", describe(spans))
	require.Equal(t, "gateway", roots[0].service)
	require.True(t, strings.HasPrefix(roots[0].name, rootName), roots[0].name)
	require.Equal(t, "RunActivity:zimmer.runner.RunTurn", byID[start.parentID].name, "the agent's start is under the RunTurn activity")
}

func hasSpan(spans []otlpSpan, service, prefix string) bool {
	for _, sp := range spans {
		if sp.service == service && strings.HasPrefix(sp.name, prefix) {
			return true
		}
	}
	return false
}

func describe(spans []otlpSpan) string {
	var b strings.Builder
	for _, sp := range spans {
		fmt.Fprintf(&b, "  %s %s (span %s, parent %s)\n", sp.service, sp.name, sp.spanID, sp.parentID)
	}
	return b.String()
}

// otlpSpan is what the test reads of an exported span.
type otlpSpan struct {
	service, name             string
	traceID, spanID, parentID string
	attrs                     map[string]string
}

// otlpCollector is an OTLP/gRPC trace receiver on loopback that keeps
// every span it is sent.
type otlpCollector struct {
	coltracepb.UnimplementedTraceServiceServer
	addr  string
	mu    sync.Mutex
	spans []otlpSpan
}

func newOTLPCollector(t *testing.T) *otlpCollector {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	c := &otlpCollector{addr: lis.Addr().String()}
	srv := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(srv, c)
	go func() { _ = srv.Serve(lis) }()
	// Stopped after the stack (cleanups run last-registered first), so the
	// binaries' last exports at shutdown find it.
	t.Cleanup(srv.Stop)
	return c
}

// Export keeps the request's spans.
func (c *otlpCollector) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		service := attrs(rs.GetResource().GetAttributes())["service.name"]
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				c.spans = append(c.spans, otlpSpan{
					service: service, name: sp.GetName(),
					traceID: hex.EncodeToString(sp.GetTraceId()), spanID: hex.EncodeToString(sp.GetSpanId()),
					parentID: hex.EncodeToString(sp.GetParentSpanId()), attrs: attrs(sp.GetAttributes()),
				})
			}
		}
	}
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

func attrs(kvs []*commonpb.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		v := kv.GetValue()
		switch {
		case v.GetStringValue() != "":
			m[kv.GetKey()] = v.GetStringValue()
		default:
			m[kv.GetKey()] = fmt.Sprint(v.GetIntValue())
		}
	}
	return m
}

// trace is every span of traceID received so far.
func (c *otlpCollector) trace(traceID string) []otlpSpan {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []otlpSpan
	for _, sp := range c.spans {
		if sp.traceID == traceID {
			out = append(out, sp)
		}
	}
	return out
}

// waitSpan waits for a span named name whose zimmer.session.id is session,
// in a trace other than notTrace.
func (c *otlpCollector) waitSpan(t *testing.T, name, session, notTrace string) otlpSpan {
	t.Helper()
	var found otlpSpan
	require.Eventually(t, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, sp := range c.spans {
			if sp.name == name && sp.attrs["zimmer.session.id"] == session && sp.traceID != notTrace {
				found = sp
				return true
			}
		}
		return false
	}, 60*time.Second, 100*time.Millisecond, "no %q span for session %s", name, session)
	return found
}
