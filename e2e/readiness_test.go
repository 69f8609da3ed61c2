package e2e_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/deploy/devstack"
)

// healthReport is the body of /healthz and /readyz.
type healthReport struct {
	Status   string            `json:"status"`
	Services map[string]string `json:"services"`
}

// TestHealthDuringADatabaseOutage is issue 20 item 8: with Postgres
// stopped, every call answered 503 while /healthz said "ok" with every
// service SERVING. On a stack of its own Postgres, stopped for real: each
// service reports NOT_SERVING while its database does not answer, the
// gateway's /healthz and /readyz answer 503 saying so, and all of it comes
// back once the database does.
func TestHealthDuringADatabaseOutage(t *testing.T) {
	t.Parallel()
	pg := startDevPostgres(t)
	s := newStackWith(t, stackOptions{adminURL: pg.adminURL()})
	api := restClient{base: "http://" + s.addr["gateway"], key: s.apiKey}

	check := func(path string) (int, healthReport) {
		t.Helper()
		code, body := (restClient{base: api.base}).do(t, http.MethodGet, path, "")
		var rep healthReport
		require.NoError(t, json.Unmarshal([]byte(body), &rep), "%s: %s", path, body)
		return code, rep
	}
	every := func(state string) map[string]string {
		m := map[string]string{}
		for _, svc := range services {
			m[svc] = state
		}
		return m
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		code, rep := check(path)
		require.Equal(t, http.StatusOK, code, "%s: %+v", path, rep)
		require.Equal(t, healthReport{Status: "ok", Services: every("SERVING")}, rep)
	}

	require.NoError(t, devstack.StopPostgresAt(pg.dir), "stop the test's postgres")
	stopped := time.Now()
	code, body := api.do(t, http.MethodGet, "/api/v1/sessions", "")
	require.Equal(t, http.StatusServiceUnavailable, code, "a call answers 503 while the database is down: %s", body)
	var last map[string]healthReport
	down := func() bool {
		last = map[string]healthReport{}
		for _, path := range []string{"/healthz", "/readyz"} {
			code, rep := check(path)
			last[path] = rep
			if code != http.StatusServiceUnavailable || rep.Status != "unavailable" {
				return false
			}
			for _, svc := range services {
				if rep.Services[svc] != "NOT_SERVING" {
					return false
				}
			}
		}
		return true
	}
	for deadline := time.Now().Add(20 * time.Second); !down(); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("health never said the services do not serve: %+v", last)
		}
	}
	t.Logf("NOT_SERVING everywhere %s after the database stopped", time.Since(stopped).Round(100*time.Millisecond))

	pg.start()
	require.Eventually(t, func() bool {
		for _, path := range []string{"/healthz", "/readyz"} {
			if code, rep := check(path); code != http.StatusOK || rep.Status != "ok" {
				return false
			}
		}
		return true
	}, 60*time.Second, 200*time.Millisecond, "health never came back with the database")
	code, body = api.do(t, http.MethodGet, "/api/v1/sessions", "")
	require.Equal(t, http.StatusOK, code, body)
}
