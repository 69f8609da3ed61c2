package app

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/clock"
)

// CredentialRepository stores session credentials. Mint and revoke lock
// the session FOR UPDATE first, as archive and delete do (which revoke
// every credential of the session in their own write), so the four never
// interleave: a mint racing an archive either comes first and is revoked
// by it, or sees the session archived.
//
// Every write a session credential makes (SessionRepository's Create and
// Update) reads its credential FOR SHARE in the same transaction and is
// refused when it is revoked; revoking updates that row, so no write of a
// credential commits after its revocation does.
type CredentialRepository interface {
	// MintCredential locks the session, passes it to decide and inserts the
	// credential decided (its token's digest, never the token) with the
	// timeline line decided.
	MintCredential(ctx context.Context, ref domain.SessionRef,
		decide func(domain.Session) (domain.MintedCredential, domain.TimelineEntry, error)) (domain.MintedCredential, error)
	// RevokeCredential locks the session and its credential id, passes both
	// to decide and, when decide revoked a live credential, writes the
	// revocation and the timeline line decided, if any
	// (domain.RevocationLine). A credential id the session does not have
	// is ErrNotFound.
	RevokeCredential(ctx context.Context, ref domain.SessionRef, id string,
		decide func(domain.Session, domain.Credential) (domain.Credential, *domain.TimelineEntry, error)) (domain.Credential, error)
	// RevokeTurnCredentials locks the session and revokes, at at, every live
	// credential of it minted for turn turnID
	// (domain.RevokedByTurnEnd), with no timeline line (a service's
	// revocation of a turn credential: domain.RevocationLine); it returns
	// how many it revoked.
	RevokeTurnCredentials(ctx context.Context, ref domain.SessionRef, turnID string, at time.Time) (int, error)
	// SweepNodeCredentials revokes, at at, every live credential minted for
	// a turn on node by an incarnation other than incarnation
	// (domain.RevokedByNodeRestart), with no timeline line (as
	// RevokeTurnCredentials); it returns how many it revoked.
	SweepNodeCredentials(ctx context.Context, node, incarnation string, at time.Time) (int, error)
	// CredentialByDigest returns the credential whose token has digest, or
	// domain.UnknownCredential().
	CredentialByDigest(ctx context.Context, digest []byte) (domain.Credential, error)
}

// MintSessionCredential mints a credential for a session's agent.
type MintSessionCredential struct {
	Repo  CredentialRepository
	Clock clock.Clock
	// Random is where tokens come from: crypto/rand when nil.
	Random io.Reader
}

// Handle mints a credential for the session ref names, as opts say; by
// describes the caller for the timeline ("admin key …abcd").
func (uc MintSessionCredential) Handle(ctx context.Context, ref, by string, opts domain.MintOptions) (domain.MintedCredential, error) {
	r, err := domain.ParseSessionRef(ref)
	if err != nil {
		return domain.MintedCredential{}, err
	}
	if err := opts.Validate(); err != nil {
		return domain.MintedCredential{}, err
	}
	random := uc.Random
	if random == nil {
		random = rand.Reader
	}
	secret := make([]byte, domain.CredentialSecretBytes)
	if _, err := io.ReadFull(random, secret); err != nil {
		return domain.MintedCredential{}, fmt.Errorf("draw a credential's secret: %w", err)
	}
	id := uuid.NewString()
	return uc.Repo.MintCredential(ctx, r, func(s domain.Session) (domain.MintedCredential, domain.TimelineEntry, error) {
		c, err := domain.MintCredential(s, id, secret, uc.Clock.Now(), opts)
		if err != nil {
			return domain.MintedCredential{}, domain.TimelineEntry{}, err
		}
		return c, domain.CredentialMintedLine(c.Credential, by), nil
	})
}

// RevokeSessionCredential revokes one credential of a session.
type RevokeSessionCredential struct {
	Repo  CredentialRepository
	Clock clock.Clock
}

// Handle revokes credential id of the session ref names; by describes the
// caller, and is what a later caller with the credential is told;
// byService says the caller is a Zimmer service (the runner ending its
// turn's credential), which domain.RevocationLine reads.
func (uc RevokeSessionCredential) Handle(ctx context.Context, ref, id, by string, byService bool) (domain.Credential, error) {
	r, err := domain.ParseSessionRef(ref)
	if err != nil {
		return domain.Credential{}, err
	}
	if err := domain.ParseCredentialID(id); err != nil {
		return domain.Credential{}, err
	}
	return uc.Repo.RevokeCredential(ctx, r, strings.ToLower(id), func(_ domain.Session, c domain.Credential) (domain.Credential, *domain.TimelineEntry, error) {
		c = c.Revoke(domain.RevokedBy(by), uc.Clock.Now())
		if line, ok := domain.RevocationLine(c, byService); ok {
			return c, &line, nil
		}
		return c, nil, nil
	})
}

// RevokeTurnCredentials revokes the credentials minted for one turn of a
// session, once the turn has ended.
type RevokeTurnCredentials struct {
	Repo  CredentialRepository
	Clock clock.Clock
}

// Handle revokes every live credential of the session ref names minted
// for turnID, and says how many there were.
func (uc RevokeTurnCredentials) Handle(ctx context.Context, ref, turnID string) (int, error) {
	r, err := domain.ParseSessionRef(ref)
	if err != nil {
		return 0, err
	}
	if err := domain.ParseTurnID(turnID); err != nil {
		return 0, err
	}
	return uc.Repo.RevokeTurnCredentials(ctx, r, turnID, uc.Clock.Now())
}

// SweepNodeCredentials revokes the turn credentials a runner node's
// earlier incarnations minted: its start sweep.
type SweepNodeCredentials struct {
	Repo  CredentialRepository
	Clock clock.Clock
}

// Handle revokes every live credential minted for a turn on node by an
// incarnation other than incarnation, and says how many there were.
func (uc SweepNodeCredentials) Handle(ctx context.Context, node, incarnation string) (int, error) {
	if err := domain.ParseNodeSweep(node, incarnation); err != nil {
		return 0, err
	}
	return uc.Repo.SweepNodeCredentials(ctx, node, incarnation, uc.Clock.Now())
}

// AuthenticateSessionCredential resolves a presented token to its live
// credential: the gateway asks for each request that presents one.
type AuthenticateSessionCredential struct {
	Repo  CredentialRepository
	Clock clock.Clock
}

// Handle returns the live credential token is, or a *domain.CredentialError
// saying why it opens nothing.
func (uc AuthenticateSessionCredential) Handle(ctx context.Context, token string) (domain.Credential, error) {
	if !strings.HasPrefix(token, rules.SessionCredentialPrefix) {
		return domain.Credential{}, domain.UnknownCredential()
	}
	c, err := uc.Repo.CredentialByDigest(ctx, domain.TokenDigest(token))
	if err != nil {
		return domain.Credential{}, err
	}
	if err := c.Usable(uc.Clock.Now()); err != nil {
		return domain.Credential{}, err
	}
	return c, nil
}

// Credentials bundles the credential use cases.
type Credentials struct {
	Mint         MintSessionCredential
	Revoke       RevokeSessionCredential
	RevokeTurn   RevokeTurnCredentials
	SweepNode    SweepNodeCredentials
	Authenticate AuthenticateSessionCredential
}

// NewCredentials wires the credential use cases over one repository and
// clock.
func NewCredentials(repo CredentialRepository, clk clock.Clock) Credentials {
	return Credentials{
		Mint:         MintSessionCredential{Repo: repo, Clock: clk},
		Revoke:       RevokeSessionCredential{Repo: repo, Clock: clk},
		RevokeTurn:   RevokeTurnCredentials{Repo: repo, Clock: clk},
		SweepNode:    SweepNodeCredentials{Repo: repo, Clock: clk},
		Authenticate: AuthenticateSessionCredential{Repo: repo, Clock: clk},
	}
}
