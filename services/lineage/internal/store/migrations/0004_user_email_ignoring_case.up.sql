-- An email address names one human, compared ignoring case:
-- "Julie@Example.com" and "julie@example.com" are one address. The service
-- stores addresses trimmed and lower-cased; the index below holds the
-- invariant whoever writes, and serves the service's look-up by address.
--
-- Rows written before this was enforced are brought in line first: every
-- address trimmed and lower-cased, and where several users shared one
-- address ignoring case, the user created first keeps it and the others
-- lose it. An email is a linkage only (nothing attributes a message from
-- it), so clearing a duplicate loses no evidence; the operator can set it
-- again at /supervisor/users.
UPDATE users SET email = NULLIF(lower(btrim(email)), ''), updated_at = now()
WHERE email IS DISTINCT FROM NULLIF(lower(btrim(email)), '');

UPDATE users u SET email = NULL, updated_at = now()
WHERE u.email IS NOT NULL AND EXISTS (
    SELECT 1 FROM users first
    WHERE first.email = u.email AND (first.created_at, first.key) < (u.created_at, u.key));

CREATE UNIQUE INDEX users_email_lower ON users (lower(email));
