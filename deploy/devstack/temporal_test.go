package devstack

import (
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// temporalBin finds the CLI that `make tools` builds. Without it the test is
// skipped, unless ZIMMER_REQUIRE_TEMPORAL=1 (make test, CI) turns that into a failure.
func temporalBin(t *testing.T) string {
	bin := os.Getenv("TEMPORAL_CLI")
	if bin == "" {
		wd, err := os.Getwd()
		require.NoError(t, err)
		if root, err := FindRepoRoot(wd); err == nil {
			bin = filepath.Join(root, "bin", "temporal")
		}
	}
	if _, err := os.Stat(bin); bin == "" || err != nil {
		if os.Getenv("ZIMMER_REQUIRE_TEMPORAL") == "1" {
			t.Fatalf("temporal CLI not found at %q and ZIMMER_REQUIRE_TEMPORAL=1", bin)
		}
		t.Skipf("temporal CLI not found at %q; run make tools", bin)
	}
	return bin
}

func TestStartTemporal(t *testing.T) {
	t.Parallel()
	bin := temporalBin(t)
	logFile := filepath.Join(t.TempDir(), "temporal.log")

	tmp, err := StartTemporal(t.Context(), TemporalOptions{Bin: bin, LogFile: logFile})
	require.NoError(t, err)
	t.Cleanup(func() { _ = tmp.Stop() })

	require.NotEmpty(t, tmp.UIURL())
	require.NoError(t, WaitHTTPOK(t.Context(), tmp.UIURL()))
	ext, err := ConnectTemporal(t.Context(), tmp.Address())
	require.NoError(t, err)
	require.NoError(t, ext.Stop(), "Stop never touches an external server")

	require.NoError(t, tmp.Stop())
	select {
	case <-tmp.Done():
	default:
		t.Fatal("Stop returned before the server exited")
	}
	_, err = net.DialTimeout("tcp", tmp.Address(), time.Second)
	require.Error(t, err, "frontend port is closed after Stop")
}

func TestStartTemporalPortInUse(t *testing.T) {
	t.Parallel()
	bin := temporalBin(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()

	_, err = StartTemporal(t.Context(), TemporalOptions{
		Bin:      bin,
		Port:     l.Addr().(*net.TCPAddr).Port,
		Headless: true,
		LogFile:  filepath.Join(t.TempDir(), "temporal.log"),
	})
	require.ErrorContains(t, err, "exited during start-up")
}

// TestAFileBackedDevServerKeepsAWriteAheadLog: a server on a SQLite file
// journals through a write-ahead log (one fsync a commit, not several), so
// it keeps up without the history queues' limiter (docs/temporal.md).
func TestAFileBackedDevServerKeepsAWriteAheadLog(t *testing.T) {
	t.Parallel()
	bin := temporalBin(t)
	db := filepath.Join(t.TempDir(), "temporal.db")
	tmp, err := StartTemporal(t.Context(), TemporalOptions{Bin: bin, Headless: true, DBFile: db})
	require.NoError(t, err)
	t.Cleanup(func() { _ = tmp.Stop() })
	_, err = os.Stat(db + "-wal")
	require.NoError(t, err, "the server's SQLite file has a write-ahead log beside it")
}
