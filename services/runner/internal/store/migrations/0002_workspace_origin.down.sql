DROP INDEX workspaces_path_on_disk;
CREATE UNIQUE INDEX workspaces_path_on_disk
    ON workspaces (path)
    WHERE state IN ('provisioning', 'ready', 'retained');

-- A failed workspace has nothing on disk: nothing is lost with its row.
DELETE FROM workspaces WHERE state = 'failed';

ALTER TABLE workspaces
    DROP CONSTRAINT workspaces_failure_has_a_reason,
    DROP CONSTRAINT workspaces_state_check,
    ADD CONSTRAINT workspaces_state_check
        CHECK (state IN ('provisioning', 'ready', 'retained', 'preserved', 'reaped')),
    DROP COLUMN failure_reason,
    DROP COLUMN base_commit,
    DROP COLUMN checked_out_branch,
    DROP COLUMN subdirectory,
    DROP COLUMN branch,
    DROP COLUMN git_root,
    DROP COLUMN node;
