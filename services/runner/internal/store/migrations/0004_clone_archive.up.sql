-- What a session's archive did with its clone (workspace.Archive), for the
-- unarchive that restores it, the trash reaper that deletes what expired
-- and the session's detail:
--
--   trash_after        when the trash reaper deletes what is kept (the
--                      retained clone, or the preserved artifacts); NULL when
--                      nothing is kept for the trash
--   archive_note       what happened to the clone, in words
--   clone_bytes        a retained clone's size, measured when retained
--   dropped_deletions  a mangled clone's deleted tracked files, not trusted
--   artifacts_dir      the session's directory in the node's preservation
--                      store; '' when nothing is preserved
--   bundle_path/bytes  the git bundle of commits on no remote-tracking ref
--   patch_path/bytes   the binary diff of uncommitted and untracked changes
--   preserved_head,    HEAD and its branch ('' detached) when preserved,
--   preserved_branch   which a restore checks out again
--   preserved_tree     the working tree as preserved: what a restore must
--                      reproduce
ALTER TABLE workspaces
    ADD COLUMN trash_after       timestamptz,
    ADD COLUMN archive_note      text    NOT NULL DEFAULT '',
    ADD COLUMN clone_bytes       bigint  NOT NULL DEFAULT 0 CHECK (clone_bytes >= 0),
    ADD COLUMN dropped_deletions integer NOT NULL DEFAULT 0 CHECK (dropped_deletions >= 0),
    ADD COLUMN artifacts_dir     text    NOT NULL DEFAULT '' CHECK (artifacts_dir = '' OR artifacts_dir LIKE '/%'),
    ADD COLUMN bundle_path       text    NOT NULL DEFAULT '',
    ADD COLUMN bundle_bytes      bigint  NOT NULL DEFAULT 0 CHECK (bundle_bytes >= 0),
    ADD COLUMN patch_path        text    NOT NULL DEFAULT '',
    ADD COLUMN patch_bytes       bigint  NOT NULL DEFAULT 0 CHECK (patch_bytes >= 0),
    ADD COLUMN preserved_head    text    NOT NULL DEFAULT '',
    ADD COLUMN preserved_branch  text    NOT NULL DEFAULT '',
    ADD COLUMN preserved_tree    text    NOT NULL DEFAULT '',
    -- A preserved workspace has its artifacts; one kept for the trash has
    -- its deadline.
    ADD CONSTRAINT workspaces_preserved_has_artifacts CHECK (state <> 'preserved' OR artifacts_dir <> ''),
    ADD CONSTRAINT workspaces_trash_has_a_deadline
        CHECK (state NOT IN ('retained', 'preserved') OR trash_after IS NOT NULL);

-- The trash reaper's question: what kept thing's deadline has passed.
CREATE INDEX workspaces_trash_due ON workspaces (trash_after) WHERE state IN ('retained', 'preserved');
