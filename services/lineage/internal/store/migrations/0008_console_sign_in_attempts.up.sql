-- The console's password attempts (LN-12), counted per client address for
-- every gateway replica at once: an attempt is a row from the moment it is
-- let through until its password proves right (the address's rows go) or
-- it is older than the window (deleted by the next attempt from any
-- address, so the table holds at most the window's attempts).
CREATE TABLE console_sign_in_attempts (
    id      bigserial PRIMARY KEY,
    address text NOT NULL CHECK (address <> '' AND octet_length(address) <= 100),
    at      timestamptz NOT NULL
);
CREATE INDEX console_sign_in_attempts_address ON console_sign_in_attempts (address, at);
CREATE INDEX console_sign_in_attempts_at ON console_sign_in_attempts (at);
