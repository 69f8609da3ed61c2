package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lineage/internal/app"
	"github.com/zimmerhq/zimmer/services/lineage/internal/app/apptest"
	"github.com/zimmerhq/zimmer/services/lineage/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/pgtest"
)

// TestNodeRepositoryContract runs one set of cases against the in-memory
// fake and the Postgres store, so tests written against the fake hold for
// the real thing.
func TestNodeRepositoryContract(t *testing.T) {
	t.Parallel()

	repos := map[string]func(t *testing.T) app.NodeRepository{
		"fake":     func(*testing.T) app.NodeRepository { return apptest.NewNodes() },
		"postgres": func(t *testing.T) app.NodeRepository { return New(pgtest.DB(t, testSets...)) },
	}
	for name, newRepo := range repos {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, c := range contractCases {
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					c.run(t, newRepo(t))
				})
			}
		})
	}
}

var contractCases = []struct {
	name string
	run  func(t *testing.T, repo app.NodeRepository)
}{
	{"an event applies once", func(t *testing.T, repo app.NodeRepository) {
		ctx := t.Context()
		n := node(1, at(1))
		n.ParentSessionID, n.RouterSessionID = ptr(7), ptr(8)
		require.True(t, mustApply(t, repo, evt1, n))

		calls := 0
		applied, err := repo.ApplyEvent(ctx, evt1, "created", func(context.Context, app.NodeWriter) error {
			calls++
			return nil
		})
		require.NoError(t, err)
		require.False(t, applied, "a redelivery is recognised")
		require.Zero(t, calls, "and not applied again")

		got, err := repo.Get(ctx, 1)
		require.NoError(t, err)
		requireNode(t, n, got)
	}},
	{"a failed apply leaves no claim and no writes", func(t *testing.T, repo app.NodeRepository) {
		ctx := t.Context()
		boom := errors.New("boom")
		_, err := repo.ApplyEvent(ctx, evt1, "created", func(ctx context.Context, w app.NodeWriter) error {
			require.NoError(t, w.Save(ctx, node(1, at(1))))
			return boom
		})
		require.ErrorIs(t, err, boom)
		_, err = repo.Get(ctx, 1)
		require.ErrorIs(t, err, domain.ErrNotFound, "the write rolled back")
		require.True(t, mustApply(t, repo, evt1, node(1, at(1))), "the redelivery applies")
	}},
	{"an older snapshot never replaces a newer one", func(t *testing.T, repo app.NodeRepository) {
		ctx := t.Context()
		newer := node(1, at(2))
		newer.Status = "archived"
		require.True(t, mustApply(t, repo, evt1, newer))
		older := node(1, at(1))
		require.True(t, mustApply(t, repo, evt2, older), "the stale event is still consumed")
		got, err := repo.Get(ctx, 1)
		require.NoError(t, err)
		requireNode(t, newer, got)

		same := node(1, at(2))
		same.Title = "renamed"
		require.True(t, mustApply(t, repo, evt3, same))
		got, err = repo.Get(ctx, 1)
		require.NoError(t, err)
		requireNode(t, same, got, "an equal time overwrites")
	}},
	{"spawn children follow the column, then the metadata, in id order", func(t *testing.T, repo app.NodeRepository) {
		ctx := t.Context()
		byColumn, byMetadata, columnWins, other := node(30, at(1)), node(20, at(1)), node(10, at(1)), node(40, at(1))
		byColumn.ParentSessionID = ptr(1)
		byMetadata.RouterSessionID = ptr(1)
		columnWins.ParentSessionID, columnWins.RouterSessionID = ptr(1), ptr(2)
		other.RouterSessionID = ptr(2)
		for i, n := range []domain.Node{byColumn, byMetadata, columnWins, other} {
			require.True(t, mustApply(t, repo, []string{evt1, evt2, evt3, evt4}[i], n))
		}
		ids, err := repo.SpawnChildIDs(ctx, 1)
		require.NoError(t, err)
		require.Equal(t, []int64{10, 20, 30}, ids)
		ids, err = repo.SpawnChildIDs(ctx, 2)
		require.NoError(t, err)
		require.Equal(t, []int64{40}, ids)
		ids, err = repo.SpawnChildIDs(ctx, 99)
		require.NoError(t, err)
		require.Empty(t, ids)
	}},
	{"an unknown session is not found", func(t *testing.T, repo app.NodeRepository) {
		_, err := repo.Get(t.Context(), 404)
		require.ErrorIs(t, err, domain.ErrNotFound)
	}},
}

const (
	evt1 = "00000000-0000-4000-8000-000000000001"
	evt2 = "00000000-0000-4000-8000-000000000002"
	evt3 = "00000000-0000-4000-8000-000000000003"
	evt4 = "00000000-0000-4000-8000-000000000004"
)

func mustApply(t *testing.T, repo app.NodeRepository, eventID string, n domain.Node) bool {
	t.Helper()
	applied, err := repo.ApplyEvent(t.Context(), eventID, "created", func(ctx context.Context, w app.NodeWriter) error {
		return w.Save(ctx, n)
	})
	require.NoError(t, err)
	return applied
}

func node(id int64, updated time.Time) domain.Node {
	return domain.Node{
		SessionID: id, Title: "Implement the genesis column", AgentRoot: "zimmer", Status: "running",
		Genesis: "web_ui", SchedulingClass: "priority", UpdatedAt: updated,
	}
}

// at is a time Postgres stores exactly (microseconds).
func at(sec int64) time.Time { return time.Unix(1_700_000_000+sec, 123_456_000) }

func ptr(v int64) *int64 { return &v }

// requireNode compares nodes, with times compared as instants: Postgres
// returns them in the local zone.
func requireNode(t *testing.T, want, got domain.Node, msg ...any) {
	t.Helper()
	require.True(t, want.UpdatedAt.Equal(got.UpdatedAt), "updated_at: want %v, got %v", want.UpdatedAt, got.UpdatedAt)
	got.UpdatedAt = want.UpdatedAt
	require.Equal(t, want, got, msg...)
}
