package servicetest

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/durationpb"

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

// TemporalNamespace registers a namespace of the test's own on the dev
// server at addr and waits until it can be used. Workflow ids derive from
// business keys (session ids every test reuses), and a worker of another
// test's service polling the same task queue would run its activities
// against the wrong database: a test whose workflows must not meet
// another's runs them in a namespace of its own. When the test ends, the
// namespace's schedules are deleted (deleteSchedules).
func TemporalNamespace(t testing.TB, addr string) string {
	t.Helper()
	name := "test-" + uuid.NewString()
	// Registered first, so it runs last: after the test's own clean-ups
	// have stopped the services whose schedules these are.
	t.Cleanup(func() { deleteSchedules(t, addr, name) })
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	nc, err := client.NewNamespaceClient(client.Options{HostPort: addr})
	require.NoError(t, err)
	defer nc.Close()
	require.NoError(t, nc.Register(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace: name, WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour),
	}), "register namespace %s", name)
	c, err := client.Dial(client.Options{HostPort: addr, Namespace: name})
	require.NoError(t, err)
	defer c.Close()
	require.Eventually(t, func() bool {
		_, err := c.DescribeTaskQueue(ctx, "probe", enumspb.TASK_QUEUE_TYPE_WORKFLOW)
		return err == nil
	}, Timeout, 200*time.Millisecond, "namespace %s never became usable", name)
	return name
}

// deleteSchedules deletes every schedule in namespace. A test's services
// create their sweeps as Schedules, which the server would otherwise go on
// firing every few seconds for the rest of the test run, in every
// namespace a finished test left behind: make test's dev server idled at
// 15 % of a core after one e2e run. Best effort: a test that killed its
// server, or one that is gone, only logs.
func deleteSchedules(t testing.TB, addr, namespace string) {
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	c, err := client.Dial(client.Options{HostPort: addr, Namespace: namespace})
	if err != nil {
		t.Logf("delete the schedules of namespace %s: %v", namespace, err)
		return
	}
	defer c.Close()
	it, err := c.ScheduleClient().List(ctx, client.ScheduleListOptions{})
	if err != nil {
		t.Logf("list the schedules of namespace %s: %v", namespace, err)
		return
	}
	for it.HasNext() {
		s, err := it.Next()
		if err != nil {
			t.Logf("list the schedules of namespace %s: %v", namespace, err)
			return
		}
		if err := c.ScheduleClient().GetHandle(ctx, s.ID).Delete(ctx); err != nil {
			t.Logf("delete schedule %s of namespace %s: %v", s.ID, namespace, err)
		}
	}
}
