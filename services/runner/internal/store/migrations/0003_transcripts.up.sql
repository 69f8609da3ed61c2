-- What each turn's agent printed, kept so an operator can read or follow a
-- turn (GET /api/v1/sessions/{id}/transcript) and an agent can read its
-- last turn (MCP get_session with include_transcript).
--
-- Bounded (package transcript, Limits): a turn keeps at most 5,000 lines and
-- 8 MiB of them; later lines are counted in dropped_lines, not stored, and
-- one line of kind 'dropped' says how many. A line's raw text is cut at
-- 64 KiB (raw_truncated). Turns that ended longer ago than the retention
-- are deleted with their lines (Transcripts.Prune), which a Temporal
-- Schedule of the runner will run like the outboxes' retention.

-- One row per turn. position orders turns by when they were first written
-- (newest first on every read); a turn id is the workflow's, unique.
CREATE TABLE transcript_turns (
    turn_id       text        PRIMARY KEY CHECK (turn_id <> ''),
    position      bigserial   NOT NULL UNIQUE,
    session_id    bigint      NOT NULL,
    started_at    timestamptz NOT NULL DEFAULT now(),
    ended_at      timestamptz,
    outcome       text        NOT NULL DEFAULT '',
    stored_lines  integer     NOT NULL DEFAULT 0 CHECK (stored_lines >= 0),
    stored_bytes  bigint      NOT NULL DEFAULT 0 CHECK (stored_bytes >= 0),
    dropped_lines bigint      NOT NULL DEFAULT 0 CHECK (dropped_lines >= 0),
    -- A turn's outcome is said when it ends, and only then.
    CONSTRAINT transcript_turns_outcome_when_ended CHECK ((ended_at IS NULL) = (outcome = ''))
);

CREATE INDEX transcript_turns_session ON transcript_turns (session_id, position DESC);
CREATE INDEX transcript_turns_ended ON transcript_turns (ended_at) WHERE ended_at IS NOT NULL;

-- One row per line of a turn, seq counting from 1 in the order printed.
-- id orders a session's lines as they were appended (one activity appends a
-- turn's lines in order), so a follower resumes after the last id it saw.
CREATE TABLE transcript_lines (
    id            bigserial   PRIMARY KEY,
    turn_id       text        NOT NULL REFERENCES transcript_turns (turn_id) ON DELETE CASCADE,
    session_id    bigint      NOT NULL,
    seq           integer     NOT NULL CHECK (seq >= 1),
    kind          text        NOT NULL CHECK (kind <> ''),
    type          text        NOT NULL DEFAULT '',
    text          text        NOT NULL DEFAULT '',
    raw           text        NOT NULL DEFAULT '',
    raw_truncated boolean     NOT NULL DEFAULT false,
    is_error      boolean     NOT NULL DEFAULT false,
    created_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (turn_id, seq)
);

CREATE INDEX transcript_lines_session ON transcript_lines (session_id, id);
