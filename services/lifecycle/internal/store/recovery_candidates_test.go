package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/app"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
)

// TestRecoveryCandidates: the orphan sweep is shown the running sessions
// and those a recovery parked (needs_input or waiting with paused_by
// recovery) that have been settled since the cutoff, oldest change first;
// never one touched since, one a user paused, one blocked on an
// elicitation (its process is alive) nor a failed one.
func TestRecoveryCandidates(t *testing.T) {
	t.Parallel()
	b := setupSweeps(t)
	ctx := context.Background()
	cutoff := sweepNow.Add(-2 * time.Minute)
	parkedByRecovery := func(s domain.Session) {
		_, err := b.pool.Exec(ctx, `UPDATE sessions SET markers = markers || '{"paused_by": "recovery"}' WHERE id = $1`, s.ID)
		require.NoError(t, err)
	}

	running := b.session(t, cutoff.Add(-time.Hour), domain.EventStart)
	parked := b.session(t, cutoff.Add(-3*time.Hour), domain.EventStart, domain.EventPause)
	parkedByRecovery(parked)
	parkedWaiting := b.session(t, cutoff.Add(-2*time.Hour))
	parkedByRecovery(parkedWaiting)
	newest := b.session(t, cutoff.Add(-time.Millisecond), domain.EventStart)

	// Not candidates.
	b.session(t, cutoff.Add(time.Second), domain.EventStart)                   // running, but changed since
	b.session(t, cutoff.Add(-time.Hour), domain.EventStart, domain.EventPause) // paused by a user
	b.session(t, cutoff.Add(-time.Hour))                                       // waiting, never started
	failed := b.session(t, cutoff.Add(-time.Hour), domain.EventStart, domain.EventFail)
	parkedByRecovery(failed)
	recent := b.session(t, cutoff, domain.EventStart, domain.EventPause) // exactly at the cutoff
	parkedByRecovery(recent)

	got, err := b.repo.RecoveryCandidates(ctx, cutoff, 10)
	require.NoError(t, err)
	require.Equal(t, []app.RecoveryCandidate{
		{SessionID: parked.ID, Status: domain.StatusNeedsInput, PausedBy: "recovery", UpdatedAt: cutoff.Add(-3 * time.Hour)},
		{SessionID: parkedWaiting.ID, Status: domain.StatusWaiting, PausedBy: "recovery", UpdatedAt: cutoff.Add(-2 * time.Hour)},
		{SessionID: running.ID, Status: domain.StatusRunning, RunningJobID: "job", UpdatedAt: cutoff.Add(-time.Hour)},
		{SessionID: newest.ID, Status: domain.StatusRunning, RunningJobID: "job", UpdatedAt: cutoff.Add(-time.Millisecond)},
	}, utc(got))

	limited, err := b.repo.RecoveryCandidates(ctx, cutoff, 2)
	require.NoError(t, err)
	require.Len(t, limited, 2)
	require.Equal(t, parked.ID, limited[0].SessionID, "the oldest change first")

	// The use case: settled_before is required, the limit defaults to and
	// stops at the maximum.
	uc := app.ListRecoveryCandidates{Candidates: b.repo}
	_, err = uc.Handle(ctx, time.Time{}, 0)
	require.ErrorContains(t, err, "settled_before")
	_, err = uc.Handle(ctx, cutoff, -1)
	require.ErrorContains(t, err, "limit")
	all, err := uc.Handle(ctx, cutoff, 0)
	require.NoError(t, err)
	require.Len(t, all, 4)
}

func utc(cs []app.RecoveryCandidate) []app.RecoveryCandidate {
	for i := range cs {
		cs[i].UpdatedAt = cs[i].UpdatedAt.UTC()
	}
	return cs
}
