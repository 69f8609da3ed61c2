-- A session's working directory: the clone its agent works in, one per
-- session, owned by the runner from creation to reaping.
--
-- state:
--   provisioning  the clone is being created
--   ready         on disk, the session's agent works in it
--   retained      on disk while its session is in the trash: during the undo
--                 window, or held to the trash deadline because preserving
--                 its unpushed work failed (it is then the only copy)
--   preserved     deleted from disk; its unpushed work is kept as artifacts
--                 until the trash deadline
--   reaped        nothing of it is left
-- Unarchive brings a retained or preserved workspace back to ready.
CREATE TABLE workspaces (
    session_id bigint      PRIMARY KEY,
    path       text        NOT NULL CHECK (path LIKE '/%'),
    state      text        NOT NULL DEFAULT 'provisioning'
               CHECK (state IN ('provisioning', 'ready', 'retained', 'preserved', 'reaped')),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- Two sessions never share a directory that is on disk.
CREATE UNIQUE INDEX workspaces_path_on_disk
    ON workspaces (path)
    WHERE state IN ('provisioning', 'ready', 'retained');
