package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRunRejectsBadConfig(t *testing.T) {
	t.Parallel()

	getenv := func(k string) string {
		return map[string]string{"GATEWAY_HTTP_ADDR": "no-port"}[k]
	}
	err := run(t.Context(), nil, getenv, &bytes.Buffer{})
	require.ErrorContains(t, err, "GATEWAY_HTTP_ADDR")

	err = run(t.Context(), []string{"serve"}, func(string) string { return "" }, &bytes.Buffer{})
	require.ErrorContains(t, err, "unexpected arguments")

	getenv = func(k string) string {
		return map[string]string{"GATEWAY_HTTP_ADDR": "127.0.0.1:0", "GATEWAY_LOG_LEVEL": "loud"}[k]
	}
	err = run(t.Context(), nil, getenv, &bytes.Buffer{})
	require.ErrorContains(t, err, "log level")
}

func TestRunStopsWhenContextEnds(t *testing.T) {
	t.Parallel()

	var out bytes.Buffer
	getenv := func(k string) string {
		return map[string]string{"GATEWAY_HTTP_ADDR": "127.0.0.1:0", "ZIMMER_API_KEYS": "secret-key-123"}[k]
	}
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	require.NoError(t, run(ctx, nil, getenv, &out))
	require.Contains(t, out.String(), `"msg":"http serving"`)
	require.NotContains(t, out.String(), "secret-key-123", "the key is not logged")
}
