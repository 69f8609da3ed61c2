-- The console's sign-ins (LN-11), shared by every gateway replica so that a
-- browser signed in on one is signed in on all, and a sign-out is final on
-- all. The key is the cookie's SHA-256, never the cookie: nothing read from
-- here can be replayed as one. Expired rows are deleted by the next sign-in
-- (the table is bounded by the console's cap), and a lookup ignores them.
CREATE TABLE console_sign_ins (
    cookie_sha256 bytea PRIMARY KEY CHECK (octet_length(cookie_sha256) = 32),
    csrf          text NOT NULL CHECK (csrf <> ''),
    created_at    timestamptz NOT NULL,
    last_seen     timestamptz NOT NULL
);
CREATE INDEX console_sign_ins_last_seen ON console_sign_ins (last_seen);
