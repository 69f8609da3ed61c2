package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zimmerhq/zimmer/services/platform/pgdb"
	"github.com/zimmerhq/zimmer/services/runner/internal/workspace"
)

// Workspaces is the Postgres workspace.Repository: the workspaces table.
type Workspaces struct{ pool *pgxpool.Pool }

var _ workspace.Repository = (*Workspaces)(nil)

// NewWorkspaces returns a repository over pool.
func NewWorkspaces(pool *pgxpool.Pool) *Workspaces { return &Workspaces{pool: pool} }

const workspaceColumns = `session_id, node, path, git_root, branch, subdirectory, checked_out_branch,
	base_commit, state, failure_reason, trash_after, archive_note, clone_bytes, dropped_deletions, artifacts_dir,
	bundle_path, bundle_bytes, patch_path, patch_bytes, preserved_head, preserved_branch, preserved_tree,
	created_at, updated_at`

// Get implements workspace.Repository.
func (s *Workspaces) Get(ctx context.Context, sessionID int64) (workspace.Workspace, error) {
	w, err := scanWorkspace(s.pool.QueryRow(ctx, `SELECT `+workspaceColumns+` FROM workspaces WHERE session_id = $1`, sessionID))
	if err != nil {
		return workspace.Workspace{}, fmt.Errorf("get workspace of session %d: %w", sessionID, interpret(err))
	}
	return w, nil
}

// Create implements workspace.Repository.
func (s *Workspaces) Create(ctx context.Context, w workspace.Workspace) (workspace.Workspace, error) {
	got, err := scanWorkspace(s.pool.QueryRow(ctx, `
		INSERT INTO workspaces (session_id, node, path, git_root, branch, subdirectory, checked_out_branch,
		                        base_commit, state, failure_reason)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
		RETURNING `+workspaceColumns,
		w.SessionID, w.Node, w.Path, w.GitRoot, w.Branch, w.Subdirectory, w.CheckedOutBranch,
		w.BaseCommit, w.State, w.FailureReason))
	if err != nil {
		return workspace.Workspace{}, fmt.Errorf("create workspace of session %d: %w", w.SessionID, interpret(err))
	}
	return got, nil
}

// Update implements workspace.Repository: the row is read FOR UPDATE, so
// concurrent updates of one workspace apply one after the other.
func (s *Workspaces) Update(ctx context.Context, sessionID int64, fn func(*workspace.Workspace) error) (workspace.Workspace, error) {
	var got workspace.Workspace
	err := pgdb.InTx(ctx, s.pool, pgx.ReadCommitted, func(tx pgx.Tx) error {
		w, err := scanWorkspace(tx.QueryRow(ctx, `SELECT `+workspaceColumns+` FROM workspaces WHERE session_id = $1 FOR UPDATE`, sessionID))
		if err != nil {
			return interpret(err)
		}
		if err := fn(&w); err != nil {
			return err
		}
		a := w.Archive
		got, err = scanWorkspace(tx.QueryRow(ctx, `
			UPDATE workspaces SET node = $2, path = $3, git_root = $4, branch = $5, subdirectory = $6,
			       checked_out_branch = $7, base_commit = $8, state = $9, failure_reason = $10,
			       trash_after = $11, archive_note = $12, clone_bytes = $13, dropped_deletions = $14,
			       artifacts_dir = $15, bundle_path = $16, bundle_bytes = $17, patch_path = $18, patch_bytes = $19,
			       preserved_head = $20, preserved_branch = $21, preserved_tree = $22, updated_at = now()
			WHERE session_id = $1
			RETURNING `+workspaceColumns,
			sessionID, w.Node, w.Path, w.GitRoot, w.Branch, w.Subdirectory, w.CheckedOutBranch,
			w.BaseCommit, w.State, w.FailureReason,
			a.TrashAfter, a.Note, a.CloneBytes, a.DroppedDeletions, a.Artifacts.Dir, a.Artifacts.Bundle,
			a.Artifacts.BundleBytes, a.Artifacts.Patch, a.Artifacts.PatchBytes, a.Artifacts.Head,
			a.Artifacts.Branch, a.Artifacts.Tree))
		return interpret(err)
	})
	if err != nil {
		return workspace.Workspace{}, fmt.Errorf("update workspace of session %d: %w", sessionID, err)
	}
	return got, nil
}

func scanWorkspace(row pgx.Row) (workspace.Workspace, error) {
	var w workspace.Workspace
	a := &w.Archive
	err := row.Scan(&w.SessionID, &w.Node, &w.Path, &w.GitRoot, &w.Branch, &w.Subdirectory, &w.CheckedOutBranch,
		&w.BaseCommit, &w.State, &w.FailureReason, &a.TrashAfter, &a.Note, &a.CloneBytes, &a.DroppedDeletions,
		&a.Artifacts.Dir, &a.Artifacts.Bundle, &a.Artifacts.BundleBytes, &a.Artifacts.Patch, &a.Artifacts.PatchBytes,
		&a.Artifacts.Head, &a.Artifacts.Branch, &a.Artifacts.Tree, &w.CreatedAt, &w.UpdatedAt)
	w.CreatedAt, w.UpdatedAt = w.CreatedAt.UTC(), w.UpdatedAt.UTC()
	if a.TrashAfter != nil {
		t := a.TrashAfter.UTC()
		a.TrashAfter = &t
	}
	return w, err
}

// interpret maps the driver's errors onto the repository's.
func interpret(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, pgx.ErrNoRows):
		return workspace.ErrNotFound
	case pgdb.Code(err) == pgdb.CodeUniqueViolation:
		return fmt.Errorf("%w (%s)", workspace.ErrAlreadyExists, pgdb.ConstraintName(err))
	}
	return err
}
