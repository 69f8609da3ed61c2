package e2e_test

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMetrics: every binary given <SERVICE>_METRICS_ADDR serves Prometheus
// metrics there (PL-24), and after a session has run a turn they show the
// calls it took: REST by route at the gateway, gRPC by method at every
// service, the Temporal SDK's worker metrics where a worker runs.
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
	id := api.createRunning(t, gitRepo(t), "@demo say hello")
	api.waitStatus(t, id, "needs_input")

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
		matched := true
		for _, l := range labels {
			matched = matched && strings.Contains(lbls, l)
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(value), 64); err == nil && matched {
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
