package devstack

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

func TestProcessStopKillsGroup(t *testing.T) {
	t.Parallel()
	// The background sleep is a grandchild: Stop must take it down too. The
	// leader ignores SIGTERM, so only the SIGKILL after the grace ends it.
	p, err := StartProcess("sleeper", exec.Command("sh", "-c", `trap "" TERM; sleep 60 & sleep 60`))
	require.NoError(t, err)
	time.Sleep(100 * time.Millisecond) // let sh install the trap and fork

	start := time.Now()
	require.NoError(t, p.Stop(200*time.Millisecond))
	require.Less(t, time.Since(start), 5*time.Second)
	require.True(t, p.Exited())
	// The orphaned sleep is reaped by init, not by us, so give it a moment.
	require.Eventually(t, func() bool {
		return errors.Is(syscall.Kill(-p.Pid(), 0), syscall.ESRCH)
	}, 3*time.Second, 20*time.Millisecond, "no process of the group is left")
}

func TestProcessExitedOnItsOwn(t *testing.T) {
	t.Parallel()
	p, err := StartProcess("false", exec.Command("false"))
	require.NoError(t, err)
	<-p.Done()
	var exitErr *exec.ExitError
	require.ErrorAs(t, p.Err(), &exitErr)
	require.NoError(t, p.Stop(time.Second), "stopping an exited process is fine")
}

// CPU counts the time of the children the process waited for: go test's
// is its test binaries', which is what make test's summary adds up.
func TestProcessCPUIncludesWaitedChildren(t *testing.T) {
	t.Parallel()
	// The loop runs in a subshell, a child sh waits for.
	p, err := StartProcess("busy", exec.Command("sh", "-c", `(i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done)`))
	require.NoError(t, err)
	require.NoError(t, p.Err())
	require.Greater(t, p.CPU(), 50*time.Millisecond, "the subshell's loop is counted")
}

func TestWaitGRPCServing(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer()
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	healthpb.RegisterHealthServer(srv, hs)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	time.AfterFunc(300*time.Millisecond, func() { hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING) })

	require.NoError(t, WaitGRPCServing(t.Context(), l.Addr().String(), nil))

	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	require.Error(t, WaitGRPCServing(ctx, "127.0.0.1:1", nil), "nothing listens on port 1")
}

func TestWaitHTTPOK(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if calls.Add(1) < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(srv.Close)
	require.NoError(t, WaitHTTPOK(t.Context(), srv.URL))
	require.EqualValues(t, 3, calls.Load())
}

func TestLock(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "x.lock")
	unlock, err := Lock(path, false)
	require.NoError(t, err)
	_, err = Lock(path, false)
	require.ErrorContains(t, err, "locked by another")
	unlock()
	// Free once unlocked — allowing for a process another parallel test is
	// forking at that moment, which holds a copy of the descriptor (and so
	// the lock) until it execs.
	var unlock2 func()
	require.Eventually(t, func() bool {
		unlock2, err = Lock(path, false)
		return err == nil
	}, 5*time.Second, 10*time.Millisecond, "the lock is free once unlocked: %v", err)
	unlock2()
}

func TestFindRepoRoot(t *testing.T) {
	t.Parallel()
	root, err := FindRepoRoot(".")
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(root, "go.work"))
	_, err = FindRepoRoot("/")
	require.Error(t, err)
}
