// Package principal is who is calling, one model for REST, MCP and gRPC.
//
// Four kinds of principal hold different credentials and may do different
// things (docs/security.md):
//   - an operator key (ZIMMER_API_KEYS) opens the public API;
//   - an admin key (ZIMMER_ADMIN_API_KEYS) also opens the admin methods:
//     the machine's low-level driver, hard delete, session credentials;
//   - a session credential, minted per session and handed to its agent,
//     acts only as that session, within the scopes it was minted with;
//   - a service (the internal token, never given to a client) calls the
//     internal methods: event consumers, human messages, the roster, alerts.
//
// The gateway authenticates its clients and forwards the principal to the
// services in gRPC metadata; a service trusts a forwarded principal only
// from a caller that proved it is a service (see Incoming).
package principal

import (
	"context"
	"fmt"
	"slices"
)

// Kind is a kind of principal.
type Kind string

// The kinds.
const (
	Operator Kind = "operator"
	Admin    Kind = "admin"
	Session  Kind = "session"
	Service  Kind = "service"
)

// Scopes a session credential can carry. A credential always carries
// ScopeSelf; the others come from the groups its session was created with.
const (
	// ScopeSelf: the self_session tools, about its own session only.
	ScopeSelf = "self"
	// ScopeSessionsRead: read any session (the sessions group, read-only).
	ScopeSessionsRead = "sessions.read"
	// ScopeSessionsStart: start sessions, as children of its own.
	ScopeSessionsStart = "sessions.start"
)

// Principal is an authenticated caller.
type Principal struct {
	Kind Kind
	// KeyHint is the last four characters of an operator or admin key, for
	// audit lines ("operator key …abcd"); never the key.
	KeyHint string
	// SessionID and CredentialID identify a session credential.
	SessionID    int64
	CredentialID string
	// Scopes a session credential grants.
	Scopes []string
	// Service names a service principal ("gateway", "runner", …).
	Service string
}

// Has reports whether p holds scope: a session credential's scopes; an
// operator or admin key holds every session scope (it may do anything a
// session could).
func (p Principal) Has(scope string) bool {
	switch p.Kind {
	case Operator, Admin:
		return true
	case Session:
		return slices.Contains(p.Scopes, scope)
	}
	return false
}

// MayActOn reports whether p may act on session id as a session-scoped
// caller: keys may act on any session, a session credential on its own.
func (p Principal) MayActOn(id int64) bool {
	switch p.Kind {
	case Operator, Admin:
		return true
	case Session:
		return p.SessionID == id
	}
	return false
}

// MayRead reports whether p may read session id: every read route asks
// this one question (a session, its timeline and events, its queue, its
// triggers, its transcript, clone and provenance). Keys and services read
// any session; a session credential its own, or any with the
// sessions.read scope.
func (p Principal) MayRead(id int64) bool {
	switch p.Kind {
	case Operator, Admin, Service:
		return true
	case Session:
		return p.SessionID == id || p.Has(ScopeSessionsRead)
	}
	return false
}

// ActingAs is the session a call by p acts as when it declares declared
// (acting_session_id; 0: none). A session credential acts as its own
// session: declaring it, or nothing, is fine, and declaring another is
// refused with an error saying so (every surface answers it as
// PermissionDenied, REST 403), never silently replaced. Anyone else acts
// as what it declares.
func (p Principal) ActingAs(declared int64) (int64, error) {
	if p.Kind != Session {
		return declared, nil
	}
	if declared != 0 && declared != p.SessionID {
		return 0, fmt.Errorf("acting_session_id %d is not the session this credential belongs to (#%d); "+
			"leave it out: the credential says who acts", declared, p.SessionID)
	}
	return p.SessionID, nil
}

// Describe is p for an audit line, e.g. "operator key …abcd", "session
// #12's credential", "the runner". It never contains a secret.
func (p Principal) Describe() string {
	switch p.Kind {
	case Operator, Admin:
		if p.KeyHint == "" {
			return string(p.Kind) + " key"
		}
		return fmt.Sprintf("%s key …%s", p.Kind, p.KeyHint)
	case Session:
		return fmt.Sprintf("session #%d's credential", p.SessionID)
	case Service:
		return "the " + p.Service
	}
	return "an unauthenticated caller"
}

// KeyHint is the audit hint of a key: its last four characters, or nothing
// for a key too short to keep four of them secret-free.
func KeyHint(key string) string {
	if len(key) < 16 {
		return ""
	}
	return key[len(key)-4:]
}

type ctxKey struct{}

// NewContext returns ctx carrying p, as the gRPC server's interceptor sets
// it for a handler.
func NewContext(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, ctxKey{}, p)
}

// FromContext returns the principal of the call ctx belongs to.
func FromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(ctxKey{}).(Principal)
	return p, ok
}
