package servicetest

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/zimmerhq/zimmer/services/platform/temporalx"
)

// TemporalAddress returns the Temporal dev server tests run against
// (ZIMMER_TEST_TEMPORAL_ADDRESS). Without one the test is skipped, or fails
// under ZIMMER_REQUIRE_TEMPORAL=1. Call it first, before creating anything
// expensive, so a skipped test costs nothing.
func TemporalAddress(t testing.TB) string {
	t.Helper()
	addr, err := temporalAddress(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	if addr == "" {
		t.Skip("ZIMMER_TEST_TEMPORAL_ADDRESS not set; run `make test` to start a Temporal dev server")
	}
	return addr
}

func temporalAddress(getenv func(string) string) (string, error) {
	addr := getenv("ZIMMER_TEST_TEMPORAL_ADDRESS")
	if addr == "" && getenv("ZIMMER_REQUIRE_TEMPORAL") == "1" {
		return "", errors.New("ZIMMER_TEST_TEMPORAL_ADDRESS is not set but ZIMMER_REQUIRE_TEMPORAL=1: run the tests with `make test`")
	}
	return addr, nil
}

// AssertWorkerAnswers runs the probe workflow (temporalx.Probe) on service's
// task queue and requires that it answers with service's name: a worker of
// that service, and not some other one, is polling the queue. Each call uses
// a fresh workflow id, so tests never collide on a shared server.
func AssertWorkerAnswers(t testing.TB, c client.Client, service string) {
	t.Helper()
	require.NotNil(t, c, "no Temporal client: build the service with a TemporalAddress")
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	got, err := temporalx.Probe(ctx, c, service, "probe/"+service+"/"+uuid.NewString())
	require.NoError(t, err, "probe the worker on %s", temporalx.TaskQueue(service))
	require.Equal(t, service, got, "the worker polling %s answered as", temporalx.TaskQueue(service))
}
