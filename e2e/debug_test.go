package e2e_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDebugListener: every binary given <SERVICE>_DEBUG_ADDR serves
// net/http/pprof there, on a loopback listener of its own (PL-23); the
// gateway's public port serves no profile, with a key or without, and a
// binary without the variable opens no such listener.
func TestDebugListener(t *testing.T) {
	t.Parallel()
	debugAddr := map[string]string{}
	env := map[string][]string{}
	for _, name := range append([]string{"gateway"}, services...) {
		if name == "notification" {
			continue // the one left without: it must run as before
		}
		debugAddr[name] = freeAddr(t)
		env[name] = []string{strings.ToUpper(name) + "_DEBUG_ADDR=" + debugAddr[name]}
	}
	s := newStackWith(t, stackOptions{env: env})

	get := func(url, key string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, url, nil)
		require.NoError(t, err)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}
	for name, addr := range debugAddr {
		code, body := get("http://"+addr+"/debug/pprof/goroutine?debug=1", "")
		require.Equal(t, http.StatusOK, code, "%s's debug listener", name)
		require.Contains(t, body, "goroutine profile:", "%s's debug listener", name)
		code, body = get("http://"+addr+"/debug/pprof/profile?seconds=1", "")
		require.Equal(t, http.StatusOK, code, "%s's CPU profile", name)
		require.NotEmpty(t, body, "%s's CPU profile", name)
	}
	for _, key := range []string{"", s.operatorKey, s.apiKey} {
		for _, path := range []string{"/debug/pprof/", "/debug/pprof/goroutine?debug=1", "/api/v1/debug/pprof/"} {
			code, body := get("http://"+s.addr["gateway"]+path, key)
			require.NotEqual(t, http.StatusOK, code, "the public port served %s: %s", path, body)
			require.NotContains(t, body, "goroutine profile:", "the public port served %s", path)
		}
	}
	for name := range debugAddr {
		logs, err := os.ReadFile(filepath.Join(s.logs, name+".log"))
		require.NoError(t, err)
		require.Contains(t, string(logs), "debug listener serving pprof", name)
	}
	logs, err := os.ReadFile(filepath.Join(s.logs, "notification.log"))
	require.NoError(t, err)
	require.NotContains(t, string(logs), "debug listener serving", "notification had no NOTIFICATION_DEBUG_ADDR")
}
