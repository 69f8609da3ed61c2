package process

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/zimmerhq/zimmer/services/platform/slogx"
)

func recordFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func readOnlyRecord(t *testing.T, dir string) Record {
	t.Helper()
	names := recordFiles(t, dir)
	require.Len(t, names, 1)
	r, err := readRecord(filepath.Join(dir, names[0]))
	require.NoError(t, err)
	return r
}

func killRecorded(t *testing.T, dir string) []Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	left, err := KillRecorded(ctx, dir, slogx.Discard())
	require.NoError(t, err)
	var killed []Record
	for _, l := range left {
		if l.Killed {
			killed = append(killed, l.Record)
		}
	}
	return killed
}

func TestRecordLivesUntilTheLeaderIsReaped(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	labels := map[string]string{"turn": "t-1", "session": "7"}
	release := filepath.Join(t.TempDir(), "release")
	p, out := startSh(t, fmt.Sprintf(`echo ready; while [ ! -e %q ]; do sleep 0.02; done; exit 0`, release), Options{RecordDir: dir, Labels: labels})
	out.waitFor(t, "ready")

	r := readOnlyRecord(t, dir)
	info, err := readProcInfo(p.Pid())
	require.NoError(t, err)
	require.Equal(t, Record{Pid: p.Pid(), Pgid: p.Pid(), StartTime: info.StartTime, Labels: labels, Started: r.Started}, r)
	require.NotZero(t, r.StartTime)
	require.WithinDuration(t, time.Now(), r.Started, time.Minute)

	require.NoError(t, os.WriteFile(release, nil, 0o600))
	require.Equal(t, 0, wait(t, p).Code)
	require.Empty(t, recordFiles(t, dir), "the record goes with the process")
}

func TestRecordStaysWhileSurvivorsLiveAndGoesWithTheSweep(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p, out := startSh(t, `sh -c 'echo grandchild $$; exec sleep 30' & echo bye; exit 0`,
		Options{RecordDir: dir, DrainTimeout: 100 * time.Millisecond})
	out.waitFor(t, "grandchild ")
	wait(t, p)
	require.Len(t, recordFiles(t, dir), 1, "a live member of the group keeps the record")

	terminate(t, p)
	require.Empty(t, recordFiles(t, dir), "the sweep's SIGKILL ends the group, and its record")
}

func TestStartFailsWhenTheRecordCannotBeWritten(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "not-a-folder")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	_, err := Start(Command{Path: "sleep", Args: []string{"sleep", "30"}}, Options{RecordDir: filepath.Join(file, "records")})
	require.Error(t, err)
}

// TestKillRecordedKillsWhatAPreviousIncarnationLeft: records written by a
// runner that was killed -9 name processes still running — one ignoring
// SIGTERM with a grandchild in its group, one whose leader ended but whose
// grandchild survived — next to a record whose pid was recycled (another
// start time) and one whose process is gone. KillRecorded kills the first
// two groups, waits for them, leaves the recycled pid's process alone and
// deletes every record.
func TestKillRecordedKillsWhatAPreviousIncarnationLeft(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()

	stubborn, out := startSh(t, `trap "" TERM; sh -c 'trap "" TERM; echo grandchild $$; exec sleep 30' & exec sleep 30`,
		Options{RecordDir: dir, Labels: map[string]string{"turn": "stubborn"}})
	stubbornChild := pidAfter(t, out.waitFor(t, "grandchild "))

	leaderGone, out2 := startSh(t, `sh -c 'echo grandchild $$; exec sleep 30' & exit 0`,
		Options{RecordDir: filepath.Join(dir), Labels: map[string]string{"turn": "survivor"}, DrainTimeout: 50 * time.Millisecond})
	survivor := pidAfter(t, out2.waitFor(t, "grandchild "))
	wait(t, leaderGone)
	require.True(t, processAlive(survivor))

	// A live process outside of this package whose pid a record names with
	// another start time: the pid was recycled after the record was written.
	bystander := exec.Command("sleep", "30")
	require.NoError(t, bystander.Start())
	t.Cleanup(func() { _ = bystander.Process.Kill(); _ = bystander.Wait() })
	info, err := readProcInfo(bystander.Process.Pid)
	require.NoError(t, err)
	_, err = writeRecord(dir, Record{Pid: bystander.Process.Pid, Pgid: bystander.Process.Pid, StartTime: info.StartTime - 1})
	require.NoError(t, err)
	// A record whose process is gone (no process can have this pid).
	_, err = writeRecord(dir, Record{Pid: 1<<22 + 1, Pgid: 1<<22 + 1, StartTime: 1})
	require.NoError(t, err)
	// A write the dead runner never finished.
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".record-123"), []byte("{"), 0o600))
	require.Len(t, recordFiles(t, dir), 5)

	start := time.Now()
	killed := killRecorded(t, dir)
	require.Less(t, time.Since(start), 3*time.Second, "SIGKILL, not the SIGTERM ladder")

	var turns []string
	for _, r := range killed {
		turns = append(turns, r.Labels["turn"])
	}
	require.ElementsMatch(t, []string{"stubborn", "survivor"}, turns)
	require.Empty(t, recordFiles(t, dir))
	// Gone on return, not merely signalled.
	for _, pid := range []int{stubborn.Pid(), stubbornChild, survivor} {
		require.False(t, processAlive(pid), "pid %d survived", pid)
	}
	require.Empty(t, liveGroupMembers(t, stubborn.Pid()))
	require.Empty(t, liveGroupMembers(t, leaderGone.Pid()))
	require.True(t, processAlive(bystander.Process.Pid), "a recycled pid is never touched")

	e := wait(t, stubborn)
	require.Equal(t, syscall.SIGKILL, e.Signal)
	require.False(t, e.SignalSentByUs, "this incarnation's ladder did not send it")

	// Nothing left: a second call kills nothing.
	require.Empty(t, killRecorded(t, dir))
}

func TestKillRecordedWithoutAFolderKillsNothing(t *testing.T) {
	t.Parallel()
	require.Empty(t, killRecorded(t, filepath.Join(t.TempDir(), "never-made")))
}

// TestKillRecordedSparesMembersOlderThanTheLeader: the leader is gone and
// the group's only live member started before the record's leader did, so
// it cannot be the leader's: left alone.
func TestKillRecordedSparesMembersOlderThanTheLeader(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	older := exec.Command("sleep", "30")
	older.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, older.Start())
	t.Cleanup(func() { _ = older.Process.Kill(); _ = older.Wait() })
	info, err := readProcInfo(older.Process.Pid)
	require.NoError(t, err)
	// A leader that is gone (a free pid) recorded with this group and a
	// start time after the member's.
	_, err = writeRecord(dir, Record{Pid: 1<<22 + 2, Pgid: older.Process.Pid, StartTime: info.StartTime + 1})
	require.NoError(t, err)

	require.Empty(t, killRecorded(t, dir))
	require.True(t, processAlive(older.Process.Pid))
	require.Empty(t, recordFiles(t, dir))
}

func TestRecordIsJSON(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path, err := writeRecord(dir, Record{Pid: 42, Pgid: 42, StartTime: 99, Labels: map[string]string{"turn": "x"}})
	require.NoError(t, err)
	require.Equal(t, "42-99.json", filepath.Base(path))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m))
	require.EqualValues(t, 42, m["pid"])
	require.EqualValues(t, 99, m["start_time"])
}

func TestParseProcInfo(t *testing.T) {
	t.Parallel()
	// comm with a space and a parenthesis; field 22 (starttime) is 4242.
	stat := "123 (we (ird) x) Z 1 123 120 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 4242 0 0 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0"
	got, err := parseProcInfo(123, stat)
	require.NoError(t, err)
	require.Equal(t, procInfo{Pid: 123, State: "Z", Ppid: 1, Pgrp: 123, Session: 120, StartTime: 4242}, got)
	require.True(t, got.ended())
	_, err = parseProcInfo(1, "garbage")
	require.Error(t, err)

	self, err := readProcInfo(os.Getpid())
	require.NoError(t, err)
	require.Equal(t, os.Getppid(), self.Ppid)
	require.Equal(t, unix.Getpgrp(), self.Pgrp)
	sid, err := unix.Getsid(0)
	require.NoError(t, err)
	require.Equal(t, sid, self.Session)
}

func pidAfter(t *testing.T, line string) int {
	t.Helper()
	f := strings.Fields(line)
	pid, err := strconv.Atoi(f[len(f)-1])
	require.NoError(t, err)
	return pid
}
