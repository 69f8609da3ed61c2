package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/app"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/principal"
)

var _ app.CredentialRepository = (*Sessions)(nil)

const credentialColumns = `id::text, session_id, scopes, created_at, revoked_at, revoked_reason,
	expires_at, turn_node, turn_incarnation, turn_id`

func scanCredential(row pgx.Row) (domain.Credential, error) {
	var (
		c                       domain.Credential
		reason                  *string
		node, incarnation, turn *string
	)
	if err := row.Scan(&c.ID, &c.SessionID, &c.Scopes, &c.CreatedAt, &c.RevokedAt, &reason,
		&c.ExpiresAt, &node, &incarnation, &turn); err != nil {
		return domain.Credential{}, err
	}
	c.CreatedAt = c.CreatedAt.UTC()
	if c.RevokedAt != nil {
		*c.RevokedAt = c.RevokedAt.UTC()
	}
	if c.ExpiresAt != nil {
		*c.ExpiresAt = c.ExpiresAt.UTC()
	}
	if reason != nil {
		c.RevokedReason = *reason
	}
	if node != nil && incarnation != nil && turn != nil {
		c.Turn = &domain.CredentialTurn{Node: *node, Incarnation: *incarnation, TurnID: *turn}
	}
	return c, nil
}

// lockSession queues the lock of the session ref names FOR UPDATE.
func lockSession(b *pgx.Batch, ref domain.SessionRef) {
	if ref.Slug != "" {
		b.Queue(lockBySlug, ref.Slug)
	} else {
		b.Queue(lockByID, ref.ID)
	}
}

// scanLocked reads lockSession's result.
func scanLocked(br pgx.BatchResults, ref domain.SessionRef) (domain.Session, error) {
	s, _, err := scanLockedWakes(br, ref)
	return s, err
}

// scanLockedWakes reads lockSession's result with the session's armed
// wake-ups.
func scanLockedWakes(br pgx.BatchResults, ref domain.SessionRef) (domain.Session, domain.Wakes, error) {
	var (
		wakes  domain.Wakes
		latest *time.Time
	)
	s, err := scanSession(br.QueryRow(), &wakes.OneTime, &wakes.Watchers, &latest)
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.Session{}, domain.Wakes{}, &domain.NotFoundError{Ref: ref}
	}
	if err != nil {
		return domain.Session{}, domain.Wakes{}, fmt.Errorf("lock session %s: %w", ref, err)
	}
	if latest != nil {
		wakes.LatestOneTime = latest.UTC()
	}
	return s, wakes, nil
}

// MintCredential implements app.CredentialRepository.
func (s *Sessions) MintCredential(ctx context.Context, ref domain.SessionRef,
	decide func(domain.Session) (domain.MintedCredential, domain.TimelineEntry, error),
) (domain.MintedCredential, error) {
	var minted domain.MintedCredential
	err := s.inTx(ctx, func(conn *pgx.Conn) error {
		var sess domain.Session
		err := read(ctx, conn, func(b *pgx.Batch) { lockSession(b, ref) }, func(br pgx.BatchResults) (err error) {
			sess, err = scanLocked(br, ref)
			return err
		})
		if err != nil {
			return err
		}
		c, line, err := decide(sess)
		if err != nil {
			return err
		}
		var (
			w                       writes
			node, incarnation, turn *string
		)
		if t := c.Turn; t != nil {
			node, incarnation, turn = &t.Node, &t.Incarnation, &t.TurnID
		}
		w.queue(func(err error) error { return fmt.Errorf("insert credential of session %d: %w", sess.ID, err) }, `
			INSERT INTO session_credentials (id, session_id, token_sha256, scopes, created_at, expires_at, turn_node, turn_incarnation, turn_id)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			c.ID, sess.ID, domain.TokenDigest(c.Token), c.Scopes, c.CreatedAt, c.ExpiresAt, node, incarnation, turn)
		w.timeline(sess.ID, c.CreatedAt, line)
		if err := w.commit(ctx, conn, s.logger); err != nil {
			return err
		}
		minted = c
		return nil
	})
	if err != nil {
		return domain.MintedCredential{}, err
	}
	return minted, nil
}

// RevokeCredential implements app.CredentialRepository.
func (s *Sessions) RevokeCredential(ctx context.Context, ref domain.SessionRef, id string,
	decide func(domain.Session, domain.Credential) (domain.Credential, *domain.TimelineEntry, error),
) (domain.Credential, error) {
	var revoked domain.Credential
	err := s.inTx(ctx, func(conn *pgx.Conn) error {
		var (
			sess domain.Session
			cur  domain.Credential
		)
		err := read(ctx, conn, func(b *pgx.Batch) {
			lockSession(b, ref)
			// The session is locked by now, so the subquery reads it
			// settled; the credential row is locked against the writes
			// that hold it FOR SHARE.
			if ref.Slug != "" {
				b.Queue(`SELECT `+credentialColumns+` FROM session_credentials
					WHERE id = $1 AND session_id = (SELECT id FROM sessions WHERE slug = $2) FOR UPDATE`, id, ref.Slug)
			} else {
				b.Queue(`SELECT `+credentialColumns+` FROM session_credentials WHERE id = $1 AND session_id = $2 FOR UPDATE`, id, ref.ID)
			}
		}, func(br pgx.BatchResults) (err error) {
			if sess, err = scanLocked(br, ref); err != nil {
				return err
			}
			cur, err = scanCredential(br.QueryRow())
			if errors.Is(err, pgx.ErrNoRows) {
				return &domain.CredentialNotFoundError{SessionID: sess.ID, ID: id}
			}
			if err != nil {
				return fmt.Errorf("lock credential %s: %w", id, err)
			}
			return nil
		})
		if err != nil {
			return err
		}
		next, line, err := decide(sess, cur)
		if err != nil {
			return err
		}
		var w writes
		if cur.RevokedAt == nil && next.RevokedAt != nil {
			w.queue(func(err error) error { return fmt.Errorf("revoke credential %s: %w", id, err) },
				`UPDATE session_credentials SET revoked_at = $2, revoked_reason = $3 WHERE id = $1`, id, next.RevokedAt, next.RevokedReason)
			if line != nil {
				w.timeline(sess.ID, *next.RevokedAt, *line)
			}
		}
		if err := w.commit(ctx, conn, s.logger); err != nil {
			return err
		}
		revoked = next
		return nil
	})
	if err != nil {
		return domain.Credential{}, err
	}
	return revoked, nil
}

// RevokeTurnCredentials implements app.CredentialRepository.
func (s *Sessions) RevokeTurnCredentials(ctx context.Context, ref domain.SessionRef, turnID string, at time.Time) (int, error) {
	var revoked int
	err := s.inTx(ctx, func(conn *pgx.Conn) error {
		// The session first, as every other revocation and every write of a
		// credential lock it (app.CredentialRepository).
		var sess domain.Session
		err := read(ctx, conn, func(b *pgx.Batch) { lockSession(b, ref) }, func(br pgx.BatchResults) (err error) {
			sess, err = scanLocked(br, ref)
			return err
		})
		if err != nil {
			return err
		}
		// No timeline line: the runner's revocation of a turn credential is
		// recorded on the credential alone (domain.RevocationLine).
		err = conn.QueryRow(ctx, `
			WITH revoked AS (
				UPDATE session_credentials SET revoked_at = $3, revoked_reason = $4
				WHERE session_id = $1 AND turn_id = $2 AND revoked_at IS NULL RETURNING id)
			SELECT count(*) FROM revoked`,
			sess.ID, turnID, at, domain.RevokedByTurnEnd(turnID)).Scan(&revoked)
		if err != nil {
			return fmt.Errorf("revoke the credentials of turn %s of session %d: %w", turnID, sess.ID, err)
		}
		if _, err := conn.Exec(ctx, "COMMIT"); err != nil {
			return fmt.Errorf("commit transaction: %w", err)
		}
		return nil
	})
	return revoked, err
}

// SweepNodeCredentials implements app.CredentialRepository. It locks no
// session: it only revokes, which the credential rows' own locks order
// against the writes that hold them FOR SHARE (a write never waits on a
// sweep while holding what the sweep waits for).
func (s *Sessions) SweepNodeCredentials(ctx context.Context, node, incarnation string, at time.Time) (int, error) {
	var revoked int
	// One statement, retried by inTx should it deadlock with an archive
	// revoking some of the same rows. No timeline line: the runner's
	// revocation of a turn credential is recorded on the credential alone
	// (domain.RevocationLine).
	err := s.inTx(ctx, func(conn *pgx.Conn) error {
		return conn.QueryRow(ctx, `
		WITH revoked AS (
			UPDATE session_credentials SET revoked_at = $3, revoked_reason = $4
			WHERE turn_node = $1 AND turn_incarnation <> $2 AND revoked_at IS NULL RETURNING id)
		SELECT count(*) FROM revoked`,
			node, incarnation, at, domain.RevokedByNodeRestart(node)).Scan(&revoked)
	})
	if err != nil {
		return 0, fmt.Errorf("revoke the turn credentials of node %q: %w", node, err)
	}
	return revoked, nil
}

// CredentialByDigest implements app.CredentialRepository.
func (s *Sessions) CredentialByDigest(ctx context.Context, digest []byte) (domain.Credential, error) {
	c, err := scanCredential(s.pool.QueryRow(ctx, `SELECT `+credentialColumns+` FROM session_credentials WHERE token_sha256 = $1`, digest))
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.Credential{}, domain.UnknownCredential()
	}
	if err != nil {
		return domain.Credential{}, fmt.Errorf("look up a session credential: %w", err)
	}
	return c, nil
}

// revokeAll queues the revocation of every live credential of session id
// at at, with a timeline line for each.
func (w *writes) revokeAll(id int64, at time.Time, reason string) {
	w.queue(func(err error) error { return fmt.Errorf("revoke the credentials of session %d: %w", id, err) }, `
		WITH revoked AS (
			UPDATE session_credentials SET revoked_at = $2, revoked_reason = $3
			WHERE session_id = $1 AND revoked_at IS NULL RETURNING id)
		INSERT INTO session_timeline (session_id, kind, message, created_at)
		SELECT $1, $4, format($5, id), $2 FROM revoked ORDER BY id`,
		id, at, reason, domain.TimelineNote, domain.CredentialRevokedTemplate(reason))
}

// revokeAllOfDeleted queues the revocation of every live credential of
// session id, which is being deleted: dated by the transaction (a delete
// decides no time), with no line (the timeline goes with the session).
func (w *writes) revokeAllOfDeleted(id int64, reason string) {
	w.queue(func(err error) error { return fmt.Errorf("revoke the credentials of session %d: %w", id, err) },
		`UPDATE session_credentials SET revoked_at = now(), revoked_reason = $2 WHERE session_id = $1 AND revoked_at IS NULL`,
		id, reason)
}

// credentialGuard is the re-check of a session credential inside each write
// it makes (nil for any other caller): its row read FOR SHARE, after the
// session's lock, and the write refused when it is revoked. Revocation
// takes the row FOR UPDATE (and archive and delete the session first), so
// a write either commits before the revocation does or sees it.
type credentialGuard struct {
	p principal.Principal
	// malformed: the id is not a credential id, so nothing is looked up.
	malformed bool
}

func guardOf(ctx context.Context) *credentialGuard {
	p, ok := principal.FromContext(ctx)
	if !ok || p.Kind != principal.Session {
		return nil
	}
	return &credentialGuard{p: p, malformed: domain.ParseCredentialID(p.CredentialID) != nil}
}

func (g *credentialGuard) queue(b *pgx.Batch) {
	if g == nil || g.malformed {
		return
	}
	b.Queue(`SELECT `+credentialColumns+` FROM session_credentials WHERE id = $1 FOR SHARE`, g.p.CredentialID)
}

func (g *credentialGuard) check(br pgx.BatchResults) error {
	switch {
	case g == nil:
		return nil
	case g.malformed:
		return domain.UnknownCredential()
	}
	c, err := scanCredential(br.QueryRow())
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return domain.UnknownCredential()
	case err != nil:
		return fmt.Errorf("re-check credential %s: %w", g.p.CredentialID, err)
	case c.SessionID != g.p.SessionID:
		// The gateway forwarded a principal its credential does not back.
		return domain.UnknownCredential()
	}
	// The re-check closes the race with a revocation; an expiry is first
	// met at authentication, on lifecycle's clock, and here on the host's.
	return c.Usable(time.Now())
}
