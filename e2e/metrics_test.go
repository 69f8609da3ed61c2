package e2e_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMetrics: every binary given <SERVICE>_METRICS_ADDR serves Prometheus
// metrics there (PL-24), and after a session has run a turn and been
// pushed they show the calls it took — REST by route at the gateway, gRPC
// by method at every service, the Temporal SDK's worker metrics where a
// worker runs — and Zimmer's own series: sessions by status, turns started
// and ended, the turn's start latency, agents alive, the queue's and the
// outboxes' backlogs, the push's latency — and that the whole-path
// histograms (create → agent, request → agent, exit → next agent) move
// with the turns that follow.
func TestMetrics(t *testing.T) {
	t.Parallel()
	metricsAddr := map[string]string{}
	env := map[string][]string{}
	for _, name := range append([]string{"gateway"}, services...) {
		metricsAddr[name] = freeAddr(t)
		env[name] = []string{strings.ToUpper(name) + "_METRICS_ADDR=" + metricsAddr[name]}
	}
	s := newStackWith(t, stackOptions{turns: true, env: env})
	api := restClient{base: "http://" + s.addr["gateway"], key: s.apiKey}
	body, err := json.Marshal(map[string]any{"prompt": "@demo say hello", "git_root": gitRepo(t), "branch": "main", "push_notifications": true})
	require.NoError(t, err)
	code, resp := api.do(t, http.MethodPost, "/api/v1/sessions", string(body))
	require.Equal(t, http.StatusCreated, code, resp)
	var created struct{ Session runnerSession }
	require.NoError(t, json.Unmarshal([]byte(resp), &created))
	api.waitStatus(t, created.Session.ID, "needs_input")
	require.Eventually(t, func() bool { return len(s.webhook.deliveries(created.Session.ID)) > 0 }, 30*time.Second, 100*time.Millisecond,
		"the pause is pushed after the stack's debounce")

	scrape := map[string]promText{}
	for name, addr := range metricsAddr {
		scrape[name] = scrapeMetrics(t, addr)
		require.Positive(t, scrape[name].sum("target_info", `service_name="`+name+`"`), "%s's target_info", name)
		require.Positive(t, scrape[name].sum("go_goroutines"), "%s's Go runtime metrics", name)
	}
	gw := scrape["gateway"]
	require.Positive(t, gw.sum("http_server_request_duration_seconds_count", `http_request_method="POST"`,
		`http_response_status_code="201"`, `http_route="/api/v1/"`), "the create, by route and status")
	require.Zero(t, gw.sum("http_server_request_duration_seconds_count", `server_address="127.0.0.1`),
		"a client's Host header is not a label")
	require.Positive(t, gw.sum("rpc_client_call_duration_seconds_count",
		`rpc_method="zimmer.lifecycle.v1.LifecycleService/CreateSession"`), "the gateway's call, by method")
	require.Positive(t, scrape["lifecycle"].sum("rpc_server_call_duration_seconds_count",
		`rpc_method="zimmer.lifecycle.v1.LifecycleService/CreateSession"`, `rpc_response_status_code="OK"`))
	for _, name := range services {
		require.Positive(t, scrape[name].sum("rpc_server_call_duration_seconds_count", `rpc_method="zimmer.`), "%s's gRPC server", name)
		require.Positive(t, scrape[name].sum("temporal_request_total"), "%s's Temporal client", name)
	}
	require.Positive(t, scrape["runner"].sum("temporal_activity_execution_latency_seconds_count"), "the runner's activities")

	lc, rn := scrape["lifecycle"], scrape["runner"]
	require.Positive(t, lc.sum("zimmer_sessions", `status="needs_input"`), "sessions by status")
	require.True(t, lc.has("zimmer_sessions", `status="archived"`), "every status has a series, at zero too")
	require.Positive(t, rn.sum("zimmer_runner_turns_started_total", `runtime="demo"`))
	require.Positive(t, rn.sum("zimmer_runner_turns_ended_total", `runtime="demo"`, `outcome="exited"`))
	require.Positive(t, rn.sum("zimmer_runner_turn_start_latency_seconds_count"), "the turn's start is timed")
	require.Positive(t, rn.sum("zimmer_runner_request_to_agent_seconds_count", `kind="first"`, `runtime="demo"`), "create → agent started is timed")
	require.True(t, rn.has("zimmer_runner_agents", `node="`), "agents alive on the node (none now)")
	require.True(t, rn.has("zimmer_runner_accounts_available", `runtime="demo"`), "the demo runtime's login pool (its ambient login)")
	require.True(t, lc.has("zimmer_slots_in_use"), "the turn slots in use")
	require.True(t, lc.has("zimmer_slots_waiting", `reason="spot_queue"`))
	require.False(t, lc.has("zimmer_slots_limit"), "no limit sample while unlimited")
	require.True(t, scrape["queue"].has("zimmer_queue_pending"))
	require.True(t, scrape["queue"].has("zimmer_queue_oldest_pending_age_seconds"))
	for _, sub := range []string{"runner_turns", "queue", "notification", "lineage", "triggers"} {
		require.True(t, lc.has("zimmer_outbox_pending", `producer="lifecycle"`, `subscriber="`+sub+`"`), "lifecycle's outbox to %s", sub)
		require.True(t, lc.has("zimmer_outbox_dead", `subscriber="`+sub+`"`), "lifecycle's dead letters for %s", sub)
	}
	require.True(t, scrape["lineage"].has("zimmer_outbox_pending", `producer="lineage"`, `subscriber="lifecycle"`))
	// The push is recorded pushed (and timed) just after its first sink
	// has it: the webhook may have it a moment before.
	require.Eventually(t, func() bool {
		return scrapeMetrics(t, metricsAddr["notification"]).sum("zimmer_push_latency_seconds_count") > 0
	}, 10*time.Second, 100*time.Millisecond, "the push is timed")

	// The whole-path histograms move: a second session's creation, a
	// message queued while its turn runs and handed over at its exit, and
	// a follow-up to it at rest each add an observation (every bucket at or
	// above the observation rises, +Inf always).
	first := func(p promText) float64 {
		return p.sum("zimmer_runner_request_to_agent_seconds_bucket", `kind="first"`, `le="+Inf"`)
	}
	resumed := func(p promText) float64 {
		return p.sum("zimmer_runner_request_to_agent_seconds_bucket", `kind="resume"`, `le="+Inf"`)
	}
	handedOver := func(p promText) float64 { return p.sum("zimmer_runner_exit_to_next_agent_seconds_bucket", `le="+Inf"`) }
	id := api.createRunning(t, gitRepo(t), "@demo sleep 2s\n@demo say slept")
	api.waitStatus(t, id, "running")
	code, queued := api.followUp(t, id, `{"prompt":"@demo say handed over"}`)
	require.Equal(t, http.StatusAccepted, code, "a running session queues: %+v", queued)
	api.waitStatus(t, id, "needs_input")
	require.Eventually(t, func() bool { return handedOver(scrapeMetrics(t, metricsAddr["runner"])) > handedOver(rn) }, 10*time.Second, 100*time.Millisecond,
		"exit → next agent is timed when the queued message is handed over")
	code, delivered := api.followUp(t, id, `{"prompt":"@demo say resumed"}`)
	require.Equal(t, http.StatusOK, code, "a session at rest takes a follow-up as its turn: %+v", delivered)
	api.waitStatus(t, id, "needs_input")
	after := scrapeMetrics(t, metricsAddr["runner"])
	require.Equal(t, first(rn)+1, first(after), "the second creation is timed to its agent")
	require.Greater(t, resumed(after), resumed(rn), "the follow-up's request is timed to its agent")
	require.Positive(t, after.sum("zimmer_runner_exit_to_next_agent_seconds_sum"), "a hand-over takes some time")

	// Every series deploy/prometheus/series.txt lists — what the Grafana
	// dashboard and the alert rules may query; deploy/devstack's
	// TestDashboardAndAlertsQueryOnlyExportedSeries checks they query
	// nothing else — is served by its binary by now.
	final := map[string]promText{}
	for name, addr := range metricsAddr {
		final[name] = scrapeMetrics(t, addr)
		if dir := os.Getenv("ZIMMER_METRICS_DUMP"); dir != "" {
			require.NoError(t, os.WriteFile(filepath.Join(dir, name+".txt"), []byte(final[name]), 0o600))
		}
	}
	for _, s := range listedSeries(t) {
		require.True(t, final[s.binary].has(s.name), "%s serves %s (deploy/prometheus/series.txt)", s.binary, s.name)
	}
}

type listedSeriesLine struct{ binary, name string }

// listedSeries reads deploy/prometheus/series.txt, leaving out the series
// Prometheus makes itself and those ("? ") that appear only once their
// event happened (a failure counter).
func listedSeries(t *testing.T) []listedSeriesLine {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "deploy", "prometheus", "series.txt"))
	require.NoError(t, err)
	var out []listedSeriesLine
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "?") {
			continue
		}
		binary, name, ok := strings.Cut(line, " ")
		require.True(t, ok, "series.txt: %q", line)
		if binary != "prometheus" {
			out = append(out, listedSeriesLine{binary, strings.TrimSpace(name)})
		}
	}
	require.NotEmpty(t, out)
	return out
}

// has reports whether metric has a sample whose labels contain labels.
func (p promText) has(metric string, labels ...string) bool {
	for _, line := range strings.Split(string(p), "\n") {
		rest, ok := strings.CutPrefix(line, metric)
		if ok && (strings.HasPrefix(rest, "{") || strings.HasPrefix(rest, " ")) && containsAll(rest, labels) {
			return true
		}
	}
	return false
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// promText is one scrape in Prometheus's text format.
type promText string

// sum adds the values of the samples of metric whose labels contain every
// one of labels (`name="value"` fragments).
func (p promText) sum(metric string, labels ...string) float64 {
	var total float64
	for _, line := range strings.Split(string(p), "\n") {
		rest, ok := strings.CutPrefix(line, metric)
		if !ok {
			continue
		}
		var lbls, value string
		switch {
		case strings.HasPrefix(rest, "{"):
			lbls, value, _ = strings.Cut(rest[1:], "} ")
		case strings.HasPrefix(rest, " "):
			value = rest[1:]
		default:
			continue // another metric whose name starts with this one's
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(value), 64); err == nil && containsAll(lbls, labels) {
			total += v
		}
	}
	return total
}

func scrapeMetrics(t *testing.T, addr string) promText {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	return promText(b)
}
