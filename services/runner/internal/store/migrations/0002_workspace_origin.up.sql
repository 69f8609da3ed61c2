-- What the runner must know about a clone beyond its path, for the turns
-- that use it and for the recovery work that outlives it:
--
--   node                the runner node whose disk holds it: the session's
--                       turns run on that node's task queue, and a node gone
--                       for good names the sessions it strands
--   git_root, branch,   what the session asked for (branch '' is the
--   subdirectory        remote's default); an unarchive re-clones from them,
--                       and the agent works in subdirectory
--   checked_out_branch  the branch the clone has checked out ('' when the
--                       request named a tag): what "unpushed" is measured
--                       against when an archive preserves the clone's work
--   base_commit         HEAD when the clone was made ('' for an empty
--                       repository): the fallback basis of that measure
--   failure_reason      why the last attempt to make the clone failed, in
--                       words for the session's failure_reason
--
-- state gains 'failed': the clone could not be made and nothing of it is on
-- disk; preparing the workspace again starts over.
--
-- No runner wrote a row before this migration; a row in a hand-made
-- database is kept and its node recorded as 'unknown'.
ALTER TABLE workspaces
    ADD COLUMN node               text,
    ADD COLUMN git_root           text NOT NULL DEFAULT '',
    ADD COLUMN branch             text NOT NULL DEFAULT '',
    ADD COLUMN subdirectory       text NOT NULL DEFAULT '',
    ADD COLUMN checked_out_branch text NOT NULL DEFAULT '',
    ADD COLUMN base_commit        text NOT NULL DEFAULT ''
               CONSTRAINT workspaces_base_commit_is_an_object_id
               CHECK (base_commit = '' OR base_commit ~ '^([0-9a-f]{40}|[0-9a-f]{64})$'),
    ADD COLUMN failure_reason     text NOT NULL DEFAULT '';

UPDATE workspaces SET node = 'unknown';

ALTER TABLE workspaces
    ALTER COLUMN node SET NOT NULL,
    ADD CONSTRAINT workspaces_node_named CHECK (node <> ''),
    DROP CONSTRAINT workspaces_state_check,
    ADD CONSTRAINT workspaces_state_check
        CHECK (state IN ('provisioning', 'ready', 'failed', 'retained', 'preserved', 'reaped')),
    -- A failed workspace says why; no other state carries a reason.
    ADD CONSTRAINT workspaces_failure_has_a_reason
        CHECK ((state = 'failed') = (failure_reason <> ''));

-- A path names a place on one node's disk, so it is unique per node.
DROP INDEX workspaces_path_on_disk;
CREATE UNIQUE INDEX workspaces_path_on_disk
    ON workspaces (node, path)
    WHERE state IN ('provisioning', 'ready', 'retained');
