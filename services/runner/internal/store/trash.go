package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zimmerhq/zimmer/services/runner/internal/workspace"
)

// TrashDue lists the workspaces whose kept clone or artifacts are past
// their trash deadline at now, earliest deadline first, at most limit: the
// trash reaper's work.
func (s *Workspaces) TrashDue(ctx context.Context, now time.Time, limit int) ([]workspace.Workspace, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+workspaceColumns+` FROM workspaces
		WHERE state IN ('retained', 'preserved') AND trash_after <= $1
		ORDER BY trash_after, session_id LIMIT $2`, now, limit)
	if err != nil {
		return nil, fmt.Errorf("list workspaces due for the trash: %w", err)
	}
	got, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (workspace.Workspace, error) { return scanWorkspace(row) })
	if err != nil {
		return nil, fmt.Errorf("list workspaces due for the trash: %w", err)
	}
	return got, nil
}

// ReadyAfter lists ready workspaces (clones on disk in use) with a session
// id above afterID, in id order, at most limit: the pages the stale-clone
// backstop asks lifecycle about.
func (s *Workspaces) ReadyAfter(ctx context.Context, afterID int64, limit int) ([]workspace.Workspace, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+workspaceColumns+` FROM workspaces
		WHERE state = 'ready' AND session_id > $1 ORDER BY session_id LIMIT $2`, afterID, limit)
	if err != nil {
		return nil, fmt.Errorf("list ready workspaces: %w", err)
	}
	got, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (workspace.Workspace, error) { return scanWorkspace(row) })
	if err != nil {
		return nil, fmt.Errorf("list ready workspaces: %w", err)
	}
	return got, nil
}
