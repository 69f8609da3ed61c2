package domain

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// Credential is a session credential as lifecycle keeps it: minted per
// session for its agent, acting only as that session within its scopes.
// The token itself is never stored, only its SHA-256 digest, so it exists
// in clear only in the answer to its mint.
type Credential struct {
	ID        string // a UUID, safe to show and log
	SessionID int64
	Scopes    []string
	CreatedAt time.Time
	// RevokedAt and RevokedReason are set once, when the credential stops
	// opening anything: revoked by an admin, or its session archived or
	// deleted.
	RevokedAt     *time.Time
	RevokedReason string
	// ExpiresAt is when it stops opening anything, revoked or not; nil: it
	// lives until revoked.
	ExpiresAt *time.Time
	// Turn is the agent turn it was minted for; nil for one of no turn (an
	// admin's).
	Turn *CredentialTurn
}

// CredentialTurn names the agent turn a credential is minted for: the
// turn's end revokes it (RevokedByTurnEnd), and so does the next start of
// the runner serving its node (RevokedByNodeRestart), since that start
// leaves no turn of an earlier incarnation running.
type CredentialTurn struct {
	Node        string // the runner node the turn runs on
	Incarnation string // the runner process serving the node when it was minted
	TurnID      string
}

// MintOptions are what a mint may add to a credential: a lifetime and the
// turn it is for.
type MintOptions struct {
	// TTL is how long it lives from its mint; 0: until revoked.
	TTL  time.Duration
	Turn *CredentialTurn
}

// MaxCredentialTTL bounds a credential's lifetime: the longest a turn may
// run is well inside it.
const MaxCredentialTTL = 30 * 24 * time.Hour

// maxTurnLabelChars bounds each name of a CredentialTurn.
const maxTurnLabelChars = MaxRunningJobIDChars

// Validate checks the options a mint was asked for.
func (o MintOptions) Validate() error {
	var vs validation.Violations
	if o.TTL < 0 || o.TTL > MaxCredentialTTL {
		vs.Add("ttl", "is %s; give a lifetime above 0 and at most %s, or none for a credential that lives until revoked", o.TTL, MaxCredentialTTL)
	}
	if t := o.Turn; t != nil {
		for _, f := range []struct{ name, v string }{{"turn.node", t.Node}, {"turn.incarnation", t.Incarnation}, {"turn.turn_id", t.TurnID}} {
			if strings.TrimSpace(f.v) == "" {
				vs.Add(f.name, "is required for a turn's credential")
				continue
			}
			checkText(&vs, f.name, f.v, maxTurnLabelChars, "")
		}
	}
	return vs.Err()
}

// ParseTurnID checks the turn id a revocation by turn names.
func ParseTurnID(id string) error {
	var vs validation.Violations
	if strings.TrimSpace(id) == "" {
		vs.Add("turn_id", "is required: the turn whose credentials end")
	}
	checkText(&vs, "turn_id", id, maxTurnLabelChars, "")
	return vs.Err()
}

// ParseNodeSweep checks what a node sweep names: the node and the
// incarnation asking.
func ParseNodeSweep(node, incarnation string) error {
	var vs validation.Violations
	for _, f := range []struct{ name, v string }{{"node", node}, {"incarnation", incarnation}} {
		if strings.TrimSpace(f.v) == "" {
			vs.Add(f.name, "is required: the runner node and the incarnation asking, whose credentials are kept")
			continue
		}
		checkText(&vs, f.name, f.v, maxTurnLabelChars, "")
	}
	return vs.Err()
}

// MintedCredential is a new credential with its token: the only time the
// token is known.
type MintedCredential struct {
	Credential
	Token string
}

// CredentialSecretBytes is how many random bytes a token carries.
const CredentialSecretBytes = 32

// TokenDigest is what lifecycle stores of a token and looks it up by.
func TokenDigest(token string) []byte {
	d := sha256.Sum256([]byte(token))
	return d[:]
}

// MintCredential decides a new credential for s: its scopes are the ones
// s's tool groups grant (rules.ToolGroupScopes), its token the prefix and
// secret. An archived session gets none: archive revokes its credentials,
// and a new one would open nothing it may still do.
func MintCredential(s Session, id string, secret []byte, now time.Time, opts MintOptions) (MintedCredential, error) {
	if err := opts.Validate(); err != nil {
		return MintedCredential{}, err
	}
	if len(secret) != CredentialSecretBytes {
		return MintedCredential{}, fmt.Errorf("mint a credential: the secret has %d bytes, want %d", len(secret), CredentialSecretBytes)
	}
	if s.Status == StatusArchived {
		return MintedCredential{}, &PreconditionError{Reason: fmt.Sprintf(
			"session #%d is archived, and archiving revoked its credentials; restore it (unarchive) before minting one", s.ID)}
	}
	c := Credential{ID: id, SessionID: s.ID, Scopes: rules.ToolGroupScopes(s.MCPToolGroups), CreatedAt: now, Turn: opts.Turn}
	if opts.TTL > 0 {
		at := now.Add(opts.TTL)
		c.ExpiresAt = &at
	}
	return MintedCredential{
		Credential: c,
		Token:      rules.SessionCredentialPrefix + base64.RawURLEncoding.EncodeToString(secret),
	}, nil
}

// Usable is nil for a credential live at now, else the error every call
// with it meets, naming why it stopped: its revocation, or its expiry.
func (c Credential) Usable(now time.Time) error {
	switch {
	case c.RevokedAt != nil:
		return &CredentialError{Reason: "credential revoked: " + c.RevokedReason}
	case c.ExpiresAt != nil && !now.Before(*c.ExpiresAt):
		return &CredentialError{Reason: fmt.Sprintf("credential expired at %s; a turn's credential lives no longer than a turn may run",
			c.ExpiresAt.UTC().Format(time.RFC3339))}
	}
	return nil
}

// Revoke revokes a live credential for reason; a revoked one keeps its
// first revocation, so revoking is idempotent and the reason a caller is
// told never changes.
func (c Credential) Revoke(reason string, now time.Time) Credential {
	if c.RevokedAt == nil {
		c.RevokedAt, c.RevokedReason = &now, reason
	}
	return c
}

// RevokedByArchive is the reason archive revokes with, as a later caller
// is told it ("credential revoked: session #12 was archived").
func RevokedByArchive(sessionID int64) string {
	return fmt.Sprintf("session #%d was archived", sessionID)
}

// RevokedByDelete is the reason hard delete revokes with.
func RevokedByDelete(sessionID int64) string {
	return fmt.Sprintf("session #%d was deleted", sessionID)
}

// RevokedByTurnEnd is the reason a turn's end revokes its credentials with.
func RevokedByTurnEnd(turnID string) string {
	return fmt.Sprintf("its turn %s ended", turnID)
}

// RevokedByNodeRestart is the reason a node sweep revokes with: the runner
// serving the node started again, so no turn an earlier incarnation ran is
// running.
func RevokedByNodeRestart(node string) string {
	return fmt.Sprintf("the runner of node %s restarted, so the turn it was minted for is no longer running", strconv.Quote(node))
}

// RevokedBy is the reason an explicit revocation gives: who revoked it.
func RevokedBy(who string) string { return who + " revoked it" }

// credentialRevoked is the timeline line of a revocation: the id, and the
// reason every later call with the credential is told.
const credentialRevoked = "[Credentials] session credential %s revoked: %s"

// CredentialMintedLine is the timeline line of a mint: the credential's id
// and scopes, the turn it is for and who minted it, never its token.
func CredentialMintedLine(c Credential, by string) TimelineEntry {
	line := fmt.Sprintf("[Credentials] session credential %s minted (scopes: %s)", c.ID, strings.Join(c.Scopes, ", "))
	if c.Turn != nil {
		line += fmt.Sprintf(" for turn %s, whose end revokes it", c.Turn.TurnID)
	}
	return TimelineEntry{Kind: TimelineNote, Message: Attributed(line, by)}
}

// CredentialRevokedLine is the timeline line of a revoked credential. Its
// reason names the principal (RevokedBy) or the archive that revoked it,
// whose own line names its principal.
func CredentialRevokedLine(c Credential) TimelineEntry {
	return TimelineEntry{Kind: TimelineNote, Message: fmt.Sprintf(credentialRevoked, c.ID, c.RevokedReason)}
}

// RevocationLine is the timeline line of revoking c, and whether there is
// one: a session's timeline carries one credentials line per turn, not
// two. A credential minted for a turn is on the timeline at its mint, whose
// line says the turn's end revokes it; when a Zimmer service revokes it
// (the runner as its agent exits, the turn's end, its node's restart: the
// ends the mint line announced) the credential alone records the
// revocation (revoked_at, revoked_reason, which every later call with it
// is told). Every other revocation — an admin's, an archive's — is a line,
// of any credential.
func RevocationLine(c Credential, byService bool) (TimelineEntry, bool) {
	if c.Turn != nil && byService {
		return TimelineEntry{}, false
	}
	return CredentialRevokedLine(c), true
}

// CredentialRevokedTemplate is CredentialRevokedLine for reason with the
// id left as Postgres format()'s %s: archive and delete learn which
// credentials they revoke only as they revoke them, in the same statement.
func CredentialRevokedTemplate(reason string) string {
	return fmt.Sprintf(credentialRevoked, "%s", strings.ReplaceAll(reason, "%", "%%"))
}

// ParseCredentialID checks a credential id a caller sent.
func ParseCredentialID(id string) error {
	if id == "" {
		return validation.Invalid("credential_id", "is required: the id the mint answered")
	}
	if !uuidShape(id) {
		return validation.Invalid("credential_id", "%s is not a credential id; give the id the mint answered (a UUID)", strconv.QuoteToASCII(cut(id, 40)))
	}
	return nil
}

// uuidShape reports whether s is written as a UUID (8-4-4-4-12 hex).
func uuidShape(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, r := range s {
		switch i {
		case 8, 13, 18, 23:
			if r != '-' {
				return false
			}
		default:
			if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
				return false
			}
		}
	}
	return true
}

// ValidateToolGroups checks the groups a session is created with: each
// one rules knows.
func ValidateToolGroups(vs *validation.Violations, groups []string) {
	for i, g := range groups {
		if !slices.Contains(rules.ToolGroups(), g) {
			vs.Add(fmt.Sprintf("mcp_tool_groups[%d]", i), "%s is not a tool group; use %s",
				strconv.QuoteToASCII(cut(g, 40)), strings.Join(rules.ToolGroups(), " or "))
		}
	}
}

// NormalizeToolGroups is groups as a session keeps them: each once, in
// rules' order; the default when none are named.
func NormalizeToolGroups(groups []string) []string {
	if len(groups) == 0 {
		return rules.DefaultToolGroups()
	}
	out := []string{}
	for _, g := range rules.ToolGroups() {
		if slices.Contains(groups, g) {
			out = append(out, g)
		}
	}
	return out
}

// SelfEditable checks a patch a session credential sends about its own
// session: the fields its self_session tools edit (title, notes,
// heartbeat), nothing that would move it ahead of others, rename it or
// mute the operator's pushes about it (scheduling_class, precedence, slug,
// goal, custom_metadata, push_notifications), nor file or star it
// (category_id, starred: the operator's dashboard), which stay with
// operator keys.
func (p Patch) SelfEditable(sessionID int64) error {
	others := setFields(
		field{"slug", p.Slug != nil}, field{"goal", p.Goal != nil},
		field{"scheduling_class", p.SchedulingClass != nil}, field{"precedence", p.Precedence != nil},
		field{"custom_metadata", p.CustomMetadata != nil}, field{"push_notifications", p.PushNotifications != nil},
		field{"category_id", p.CategoryID != nil}, field{"starred", p.Starred != nil},
	)
	if len(others) == 0 {
		return nil
	}
	return &ForbiddenError{Reason: fmt.Sprintf(
		"session #%d's credential may edit only its title, notes and heartbeat; %s need an operator key", sessionID, strings.Join(others, ", "))}
}

// ChildCreatable checks a session a session credential starts (as its own
// child): a child never gets more than its creator may set on itself, so
// the fields that rank a session among the others or mute the operator's
// pushes about it (scheduling_class, precedence, push_notifications),
// which SelfEditable keeps from the creator, are left at the operator's
// defaults. Its prompt, goal, slug and metadata are the creator's to give.
func (n NewSession) ChildCreatable(creatorID int64) error {
	others := setFields(
		field{"scheduling_class", n.SchedulingClass != ""}, field{"precedence", n.Precedence != 0},
		field{"push_notifications", n.PushNotifications != nil},
	)
	if len(others) == 0 {
		return nil
	}
	return &ForbiddenError{Reason: fmt.Sprintf(
		"session #%d's credential may not set on its child what it may not set on itself; leave %s out (the operator's defaults apply) "+
			"or start the session with an operator key", creatorID, strings.Join(others, ", "))}
}

// field is a request field and whether the request sets it.
type field struct {
	name string
	set  bool
}

// setFields names the fields that are set, in order.
func setFields(fields ...field) []string {
	var names []string
	for _, f := range fields {
		if f.set {
			names = append(names, f.name)
		}
	}
	return names
}

// Errors of who may do what. The transports map them: ErrUnauthenticated
// to Unauthenticated (REST 401), ErrForbidden to PermissionDenied (403),
// ErrPrecondition to FailedPrecondition (422).
var (
	ErrUnauthenticated = errors.New("unauthenticated")
	ErrForbidden       = errors.New("forbidden")
	ErrPrecondition    = errors.New("failed precondition")
)

// CredentialError says why a session credential opens nothing: unknown,
// or revoked and why.
type CredentialError struct{ Reason string }

func (e *CredentialError) Error() string { return e.Reason }

func (e *CredentialError) Unwrap() error { return ErrUnauthenticated }

// UnknownCredential is the error of a token no credential has.
func UnknownCredential() *CredentialError {
	return &CredentialError{Reason: "unknown session credential: no credential was minted with this token"}
}

// CredentialNotFoundError is a credential id the session does not have.
type CredentialNotFoundError struct {
	SessionID int64
	ID        string
}

func (e *CredentialNotFoundError) Error() string {
	return fmt.Sprintf("session #%d has no credential %s; give an id its mint answered", e.SessionID, e.ID)
}

func (e *CredentialNotFoundError) Unwrap() error { return ErrNotFound }

// ForbiddenError says what the caller may not do, and what would.
type ForbiddenError struct{ Reason string }

func (e *ForbiddenError) Error() string { return e.Reason }

func (e *ForbiddenError) Unwrap() error { return ErrForbidden }

// NotYourSession is the refusal of a session credential acting on
// another session.
func NotYourSession(own int64, target SessionRef) *ForbiddenError {
	return &ForbiddenError{Reason: fmt.Sprintf(
		"session #%d's credential may act only on its own session, not on session %s; that needs an operator key", own, target)}
}

// PreconditionError is a valid request the state of things refuses.
type PreconditionError struct{ Reason string }

func (e *PreconditionError) Error() string { return e.Reason }

func (e *PreconditionError) Unwrap() error { return ErrPrecondition }
