package sweep_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/platform/slogx"
	"github.com/zimmerhq/zimmer/services/runner/internal/domain"
	"github.com/zimmerhq/zimmer/services/runner/internal/sweep"
	"github.com/zimmerhq/zimmer/services/runner/internal/workflow"
)

type fakeLifecycle struct {
	candidates []sweep.Candidate
	err        error
	asked      []time.Time
	limit      int
}

func (f *fakeLifecycle) RecoveryCandidates(_ context.Context, settledBefore time.Time, limit int) ([]sweep.Candidate, error) {
	f.asked = append(f.asked, settledBefore)
	f.limit = limit
	return f.candidates, f.err
}

type turnState struct {
	state workflow.TurnState
	found bool
	err   error
}

type fakeWorkflows map[int64]turnState

func (f fakeWorkflows) TurnState(_ context.Context, id int64) (workflow.TurnState, bool, error) {
	s := f[id]
	return s.state, s.found, s.err
}

type fakeTurns struct {
	mu   sync.Mutex
	sent []workflow.TurnRequest
	fail map[int64]error
}

func (f *fakeTurns) Send(_ context.Context, req workflow.TurnRequest) error {
	if err := f.fail[req.Session.ID]; err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, req)
	return nil
}

func TestOrphaned(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		state workflow.TurnState
		found bool
		want  bool
	}{
		{"no workflow", workflow.TurnState{}, false, true},
		{"idle workflow", workflow.TurnState{Node: "a"}, true, true},
		{"a turn in flight", workflow.TurnState{InFlight: true, Node: "a"}, true, false},
		{"a request waiting", workflow.TurnState{Pending: 1}, true, false},
		{"both", workflow.TurnState{InFlight: true, Pending: 2}, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, sweep.Orphaned(tt.state, tt.found))
		})
	}
}

func TestRequestID(t *testing.T) {
	t.Parallel()
	at := time.Unix(1764581400, 123).UTC()
	require.Equal(t, "recover/orphan/job-7",
		sweep.RequestID(sweep.Candidate{SessionID: 7, Status: "running", RunningJobID: "job-7", UpdatedAt: at}))
	require.Equal(t, "recover/orphan/7/1764581400",
		sweep.RequestID(sweep.Candidate{SessionID: 7, Status: "needs_input", PausedBy: "recovery", UpdatedAt: at}))
	require.Equal(t, "recover/orphan/7/1764581400",
		sweep.RequestID(sweep.Candidate{SessionID: 7, Status: "running", UpdatedAt: at}), "a running session without a job")
	// A parked session that changes again is a new stranding.
	require.NotEqual(t,
		sweep.RequestID(sweep.Candidate{SessionID: 7, Status: "waiting", UpdatedAt: at}),
		sweep.RequestID(sweep.Candidate{SessionID: 7, Status: "waiting", UpdatedAt: at.Add(time.Second)}))
}

// TestRecoverSettledBefore: of the candidates, only those whose workflow is
// missing or idle are handed a recover request naming the orphan sweep; a
// candidate whose workflow cannot be asked, or whose send fails, is named
// in the error and does not stop the others.
func TestRecoverSettledBefore(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC)
	lc := &fakeLifecycle{candidates: []sweep.Candidate{
		{SessionID: 1, Status: "running", RunningJobID: "job-1", UpdatedAt: at},               // no workflow
		{SessionID: 2, Status: "running", RunningJobID: "job-2", UpdatedAt: at},               // turn in flight
		{SessionID: 3, Status: "needs_input", PausedBy: "recovery", UpdatedAt: at},            // idle workflow
		{SessionID: 4, Status: "running", RunningJobID: "job-4", UpdatedAt: at},               // request waiting
		{SessionID: 5, Status: "running", RunningJobID: "job-5", UpdatedAt: at},               // query fails
		{SessionID: 6, Status: "waiting", PausedBy: "recovery", UpdatedAt: at},                // send fails
		{SessionID: 7, Status: "waiting", PausedBy: "recovery", UpdatedAt: at.Add(time.Hour)}, // no workflow
	}}
	wfs := fakeWorkflows{
		2: {state: workflow.TurnState{InFlight: true}, found: true},
		3: {state: workflow.TurnState{Node: "a"}, found: true},
		4: {state: workflow.TurnState{Pending: 1}, found: true},
		5: {err: errors.New("deadline exceeded")},
		6: {found: false},
	}
	turns := &fakeTurns{fail: map[int64]error{6: errors.New("unavailable")}}
	o := sweep.OrphanedSessions{Lifecycle: lc, Workflows: wfs, Turns: turns, Logger: slogx.Discard()}

	cutoff := at.Add(2 * time.Hour)
	sent, err := o.RecoverSettledBefore(context.Background(), cutoff)
	require.ErrorContains(t, err, "session 5")
	require.ErrorContains(t, err, "session 6")
	require.EqualValues(t, 3, sent)
	require.Equal(t, []time.Time{cutoff}, lc.asked)
	require.Equal(t, sweep.DefaultBatch, lc.limit)
	recover := func(id int64, requestID string) workflow.TurnRequest {
		return workflow.TurnRequest{RequestID: requestID, Kind: workflow.KindRecover, Path: domain.PathOrphanSweep,
			Session: workflow.SessionSpec{ID: id}}
	}
	require.Equal(t, []workflow.TurnRequest{
		recover(1, "recover/orphan/job-1"),
		recover(3, "recover/orphan/3/"+strconv.FormatInt(at.Unix(), 10)),
		recover(7, "recover/orphan/7/"+strconv.FormatInt(at.Add(time.Hour).Unix(), 10)),
	}, turns.sent)
}

func TestRecoverSettledBeforeWithoutLifecycle(t *testing.T) {
	t.Parallel()
	o := sweep.OrphanedSessions{Lifecycle: &fakeLifecycle{err: errors.New("connection refused")}, Workflows: fakeWorkflows{},
		Turns: &fakeTurns{}, Batch: 10, Logger: slogx.Discard()}
	_, err := o.RecoverSettledBefore(context.Background(), time.Now())
	require.ErrorContains(t, err, "connection refused")
}
