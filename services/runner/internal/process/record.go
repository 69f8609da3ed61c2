package process

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Record is what a started process leaves in Options.RecordDir until its
// leader is reaped and its group empty or swept: enough for the runner's
// next incarnation to kill it (KillRecorded) when this one died by kill -9
// and the process, in its own group, outlived it.
type Record struct {
	Pid  int `json:"pid"`
	Pgid int `json:"pgid"`
	// StartTime is the leader's /proc/<pid>/stat start time (clock ticks
	// after boot): a pid whose process has another start time was recycled
	// and is never touched.
	StartTime uint64 `json:"start_time"`
	// Labels are the caller's (Options.Labels: a turn id, a session id),
	// for the logs of whoever kills it.
	Labels  map[string]string `json:"labels,omitempty"`
	Started time.Time         `json:"started"`
}

// LogValue names the record in logs.
func (r Record) LogValue() slog.Value {
	attrs := []slog.Attr{slog.Int("pid", r.Pid), slog.Int("pgid", r.Pgid), slog.Time("started", r.Started)}
	for k, v := range r.Labels {
		attrs = append(attrs, slog.String(k, v))
	}
	return slog.GroupValue(attrs...)
}

const recordSuffix = ".json"

func recordName(pid int, start uint64) string {
	return strconv.Itoa(pid) + "-" + strconv.FormatUint(start, 10) + recordSuffix
}

// writeRecord writes r into dir atomically (a temporary file renamed over
// the name), so a reader never sees half a record, and returns its path.
func writeRecord(dir string, r Record) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create the process record folder: %w", err)
	}
	data, err := json.Marshal(r)
	if err != nil {
		return "", fmt.Errorf("encode the record of pid %d: %w", r.Pid, err)
	}
	path := filepath.Join(dir, recordName(r.Pid, r.StartTime))
	tmp, err := os.CreateTemp(dir, ".record-*")
	if err != nil {
		return "", fmt.Errorf("record pid %d: %w", r.Pid, err)
	}
	_, werr := tmp.Write(data)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return "", fmt.Errorf("record pid %d: %w", r.Pid, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = os.Remove(tmp.Name())
		return "", fmt.Errorf("record pid %d: %w", r.Pid, err)
	}
	return path, nil
}

func removeRecord(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove the process record %s: %w", path, err)
	}
	return nil
}

// KillBound is how long KillRecorded waits for one recorded group to be
// gone after its SIGKILL.
const KillBound = 5 * time.Second

// KillRecorded kills what a previous incarnation of the runner left running:
// for each record in dir whose leader still exists with the recorded start
// time, it SIGKILLs the leader's group and the leader and waits (up to
// KillBound) until no live process is left in the group; a leader that is
// gone but whose group still has live members (survivors of a leader that
// ended) gets its group SIGKILLed too. Every record it is done with is
// deleted; one of a recycled pid, or of a group already empty, is just
// deleted. It returns every record it is done with, saying whether it
// killed the processes: each names a process the previous incarnation
// started and never saw end, so its turn (Record.Labels) was cut off.
//
// The runner calls it before its node worker polls the node's task queue:
// a StopTurn served by this incarnation then proves the previous one's
// processes gone. A group still alive after the bound (stuck in the kernel;
// with SIGKILL pending it runs no more user code) is logged and keeps its
// record for the next start. The error says what could not be done at all
// (an unreadable folder or /proc, a record that cannot be deleted); a
// missing folder holds nothing.
func KillRecorded(ctx context.Context, dir string, logger *slog.Logger) ([]Left, error) {
	if logger == nil {
		logger = slog.Default()
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the process records: %w", err)
	}
	var (
		left []Left
		errs []error
	)
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		if strings.HasPrefix(e.Name(), ".record-") {
			_ = os.Remove(path) // a write the previous incarnation never finished
			continue
		}
		if e.IsDir() || !strings.HasSuffix(e.Name(), recordSuffix) {
			continue
		}
		r, err := readRecord(path)
		if err != nil {
			logger.Warn("an unreadable process record is deleted", "path", path, "error", err)
			errs = append(errs, removeRecord(path))
			continue
		}
		didKill, err := killRecord(ctx, r)
		if errors.Is(err, ErrSurvived) {
			// With SIGKILL pending it runs no more user code; its record is
			// kept for the next start.
			logger.Error("a process the runner's previous incarnation left outlived SIGKILL",
				"process", r, "error", err)
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if didKill {
			logger.Info("killed a process the runner's previous incarnation left", "process", r)
		}
		if err := removeRecord(path); err != nil {
			errs = append(errs, err)
			continue
		}
		left = append(left, Left{Record: r, Killed: didKill})
	}
	return left, errors.Join(errs...)
}

// Left is a process a previous incarnation of the runner started and never
// saw end, as KillRecorded found it.
type Left struct {
	Record Record
	// Killed: it was still running and KillRecorded SIGKILLed its group;
	// false when it had ended by then (its pid gone or recycled).
	Killed bool
}

func readRecord(path string) (Record, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Record{}, err
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return Record{}, err
	}
	if r.Pid <= 0 || r.Pgid <= 0 {
		return Record{}, fmt.Errorf("record without a pid: %s", data)
	}
	return r, nil
}

// killRecord kills r's group if it is still r's, and reports whether it
// killed anything. Whether the group is still r's:
//   - the leader (pid with the recorded start time) lives: it is;
//   - a live process holds the pid with another start time: the pid was
//     recycled, and with it possibly the group id: not touched;
//   - no process holds the pid but the group has live members that started
//     no earlier than the leader: they are the leader's survivors (a group
//     id stays taken while any member lives, so a new group with this id
//     needs a new process with this pid, which the case above catches).
func killRecord(ctx context.Context, r Record) (bool, error) {
	leader, err := readProcInfo(r.Pid)
	leaderLives := err == nil && leader.StartTime == r.StartTime && !leader.ended()
	switch {
	case leaderLives:
		// The leader first, by pid: it may have left its group (setsid).
		_ = unix.Kill(r.Pid, syscall.SIGKILL)
	case err == nil && leader.StartTime != r.StartTime:
		return false, nil // recycled
	case err == nil || errors.Is(err, errNoProcess):
		// The leader ended (or is a zombie): only its survivors are left.
		members, err := liveMembers(r.Pgid)
		if err != nil {
			return false, err
		}
		ours := false
		for _, m := range members {
			ours = ours || m.StartTime >= r.StartTime
		}
		if !ours {
			return false, nil
		}
	default:
		return false, err
	}
	_ = unix.Kill(-r.Pgid, syscall.SIGKILL)

	ctx, cancel := context.WithTimeout(ctx, KillBound)
	defer cancel()
	for {
		members, err := liveMembers(r.Pgid)
		if err != nil {
			return true, err
		}
		if l, err := readProcInfo(r.Pid); err == nil && l.StartTime == r.StartTime && !l.ended() {
			members = append(members, l)
		}
		if len(members) == 0 {
			return true, nil
		}
		select {
		case <-ctx.Done():
			return true, fmt.Errorf("pid %d or its group %d: %d live processes after %s: %w",
				r.Pid, r.Pgid, len(members), KillBound, ErrSurvived)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
