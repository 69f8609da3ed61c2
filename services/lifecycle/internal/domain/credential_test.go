package domain_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

var (
	credentialNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	secret        = bytes.Repeat([]byte{0xfb}, domain.CredentialSecretBytes)
)

const credentialID = "0b5f6c1e-8d52-4a57-9f0e-2b7c3a1d4e5f"

func TestMintedScopesComeFromTheSessionsToolGroups(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		groups []string
		want   []string
	}{
		{[]string{"sessions"}, []string{"self", "sessions.read", "sessions.start"}},
		{[]string{"self_session"}, []string{"self"}},
		{[]string{"sessions", "self_session"}, []string{"self", "sessions.read", "sessions.start"}},
		{nil, []string{"self"}},
	} {
		s := domain.Session{ID: 12, Status: domain.StatusRunning, MCPToolGroups: tc.groups}
		c, err := domain.MintCredential(s, credentialID, secret, credentialNow, domain.MintOptions{})
		require.NoError(t, err)
		require.Equal(t, tc.want, c.Scopes, "groups %v", tc.groups)
		require.Equal(t, int64(12), c.SessionID)
		require.Equal(t, credentialNow, c.CreatedAt)
		require.Nil(t, c.RevokedAt)
	}
}

func TestATokenIsThePrefixAndTheSecretAndOnlyItsDigestIdentifiesIt(t *testing.T) {
	t.Parallel()
	c, err := domain.MintCredential(domain.Session{ID: 1}, credentialID, secret, credentialNow, domain.MintOptions{})
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(c.Token, rules.SessionCredentialPrefix))
	got, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(c.Token, rules.SessionCredentialPrefix))
	require.NoError(t, err)
	require.Equal(t, secret, got)
	require.Len(t, c.Token, len(rules.SessionCredentialPrefix)+43)

	require.Len(t, domain.TokenDigest(c.Token), 32)
	require.NotEqual(t, domain.TokenDigest(c.Token), domain.TokenDigest(c.Token+"x"))

	_, err = domain.MintCredential(domain.Session{ID: 1}, credentialID, secret[:16], credentialNow, domain.MintOptions{})
	require.ErrorContains(t, err, "16 bytes")
}

func TestAnArchivedSessionGetsNoCredential(t *testing.T) {
	t.Parallel()
	_, err := domain.MintCredential(domain.Session{ID: 7, Status: domain.StatusArchived}, credentialID, secret, credentialNow, domain.MintOptions{})
	require.ErrorIs(t, err, domain.ErrPrecondition)
	require.EqualError(t, err, "session #7 is archived, and archiving revoked its credentials; restore it (unarchive) before minting one")
}

func TestRevocationIsOnceAndNamesWhy(t *testing.T) {
	t.Parallel()
	c := domain.Credential{ID: credentialID, SessionID: 12, CreatedAt: credentialNow}
	require.NoError(t, c.Usable(credentialNow))

	later := credentialNow.Add(time.Hour)
	revoked := c.Revoke(domain.RevokedByArchive(12), later)
	require.Equal(t, later, *revoked.RevokedAt)
	err := revoked.Usable(credentialNow)
	require.ErrorIs(t, err, domain.ErrUnauthenticated)
	require.EqualError(t, err, "credential revoked: session #12 was archived")

	again := revoked.Revoke(domain.RevokedBy("admin key …abcd"), later.Add(time.Hour))
	require.Equal(t, revoked, again, "the first revocation stands")

	require.EqualError(t, c.Revoke(domain.RevokedByDelete(12), later).Usable(credentialNow), "credential revoked: session #12 was deleted")
	require.EqualError(t, c.Revoke(domain.RevokedBy("admin key …abcd"), later).Usable(credentialNow), "credential revoked: admin key …abcd revoked it")
	require.ErrorIs(t, domain.UnknownCredential(), domain.ErrUnauthenticated)
}

func TestCredentialLinesNameTheCredentialNeverTheToken(t *testing.T) {
	t.Parallel()
	c, err := domain.MintCredential(domain.Session{ID: 3, MCPToolGroups: []string{"sessions"}}, credentialID, secret, credentialNow, domain.MintOptions{})
	require.NoError(t, err)
	minted := domain.CredentialMintedLine(c.Credential, "admin key …abcd")
	require.Equal(t, domain.TimelineNote, minted.Kind)
	require.Equal(t, "[Credentials] session credential "+credentialID+" minted (scopes: self, sessions.read, sessions.start) (by admin key …abcd)", minted.Message)
	require.NotContains(t, minted.Message, c.Token)

	revoked := domain.CredentialRevokedLine(c.Revoke(domain.RevokedBy("admin key …abcd"), credentialNow))
	require.Equal(t, "[Credentials] session credential "+credentialID+" revoked: admin key …abcd revoked it", revoked.Message)
}

// Archive writes the revocation lines in SQL with format(); the template
// must read exactly as the line, whatever the reason holds.
func TestTheRevocationTemplateReadsAsTheLine(t *testing.T) {
	t.Parallel()
	for _, reason := range []string{domain.RevokedByArchive(12), "100% revoked by %s"} {
		c := domain.Credential{ID: credentialID}.Revoke(reason, credentialNow)
		tmpl := domain.CredentialRevokedTemplate(reason)
		// Postgres format() reads %s and %% as Go's Sprintf does.
		require.Equal(t, domain.CredentialRevokedLine(c).Message, fmt.Sprintf(tmpl, credentialID))
	}
}

func TestToolGroupsAreKnownAndKeptInOrder(t *testing.T) {
	t.Parallel()
	n := valid()
	n.MCPToolGroups = []string{"sessions", "admin", "self_session", ""}
	var verr *validation.Error
	require.True(t, errors.As(n.Validate(), &verr))
	require.Equal(t, []validation.FieldViolation{
		{Field: "mcp_tool_groups[1]", Reason: `"admin" is not a tool group; use self_session or sessions`},
		{Field: "mcp_tool_groups[3]", Reason: `"" is not a tool group; use self_session or sessions`},
	}, verr.Violations)

	require.Equal(t, []string{"sessions"}, domain.NormalizeToolGroups(nil))
	require.Equal(t, []string{"self_session", "sessions"}, domain.NormalizeToolGroups([]string{"sessions", "self_session", "sessions"}))
	require.Equal(t, []string{"self_session"}, domain.NormalizeToolGroups([]string{"self_session"}))

	n.MCPToolGroups = []string{"self_session"}
	require.NoError(t, n.Validate())
	s, err := n.Build(nil, credentialNow)
	require.NoError(t, err)
	require.Equal(t, []string{"self_session"}, s.MCPToolGroups)
	n.MCPToolGroups = nil
	s, err = n.Build(nil, credentialNow)
	require.NoError(t, err)
	require.Equal(t, []string{"sessions"}, s.MCPToolGroups)
}

func TestASessionCredentialEditsOnlyWhatItsSelfToolsEdit(t *testing.T) {
	t.Parallel()
	title, notes, slug := "t", "n", "s"
	on, prec := true, int32(9)
	require.NoError(t, domain.Patch{Title: &title, Notes: &notes, HeartbeatEnabled: &on}.SelfEditable(5))
	err := domain.Patch{Title: &title, Slug: &slug, Precedence: &prec, CustomMetadata: map[string]any{"a": 1}}.SelfEditable(5)
	require.ErrorIs(t, err, domain.ErrForbidden)
	require.EqualError(t, err, "session #5's credential may edit only its title, notes and heartbeat; slug, precedence, custom_metadata need an operator key")
	err = domain.Patch{PushNotifications: &on}.SelfEditable(5)
	require.EqualError(t, err, "session #5's credential may edit only its title, notes and heartbeat; push_notifications need an operator key",
		"muting the operator's pushes is the operator's call")
}

func TestCredentialIDsAreUUIDs(t *testing.T) {
	t.Parallel()
	require.NoError(t, domain.ParseCredentialID(credentialID))
	require.NoError(t, domain.ParseCredentialID(strings.ToUpper(credentialID)))
	for _, bad := range []string{"", "42", credentialID + "0", strings.ReplaceAll(credentialID, "-", "x")} {
		require.Error(t, domain.ParseCredentialID(bad), bad)
	}
}

func TestATurnsCredentialExpiresAndNamesItsTurn(t *testing.T) {
	t.Parallel()
	turn := &domain.CredentialTurn{Node: "local", Incarnation: "inc-1", TurnID: "session-12/turn-1"}
	c, err := domain.MintCredential(domain.Session{ID: 12, Status: domain.StatusRunning}, credentialID, secret, credentialNow,
		domain.MintOptions{TTL: time.Hour, Turn: turn})
	require.NoError(t, err)
	require.Equal(t, credentialNow.Add(time.Hour), *c.ExpiresAt)
	require.Equal(t, turn, c.Turn)
	require.NoError(t, c.Usable(credentialNow.Add(time.Hour-time.Nanosecond)))
	err = c.Usable(credentialNow.Add(time.Hour))
	require.ErrorIs(t, err, domain.ErrUnauthenticated)
	require.EqualError(t, err, "credential expired at 2026-03-01T13:00:00Z; a turn's credential lives no longer than a turn may run")
	require.EqualError(t, c.Revoke(domain.RevokedByTurnEnd(turn.TurnID), credentialNow).Usable(credentialNow),
		"credential revoked: its turn session-12/turn-1 ended")
	require.EqualError(t, c.Revoke(domain.RevokedByNodeRestart("local"), credentialNow).Usable(credentialNow),
		`credential revoked: the runner of node "local" restarted, so the turn it was minted for is no longer running`)

	forever, err := domain.MintCredential(domain.Session{ID: 12}, credentialID, secret, credentialNow, domain.MintOptions{})
	require.NoError(t, err)
	require.Nil(t, forever.ExpiresAt, "no lifetime asked: it lives until revoked")
	require.NoError(t, forever.Usable(credentialNow.Add(100*365*24*time.Hour)))
}

func TestMintOptionsAreChecked(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		opts domain.MintOptions
		want string
	}{
		{domain.MintOptions{TTL: -time.Second}, "ttl: is -1s; give a lifetime above 0 and at most 720h0m0s, or none for a credential that lives until revoked"},
		{domain.MintOptions{TTL: domain.MaxCredentialTTL + 1}, "ttl: is 720h0m0.000000001s; give a lifetime above 0 and at most 720h0m0s, or none for a credential that lives until revoked"},
		{domain.MintOptions{Turn: &domain.CredentialTurn{Node: " ", Incarnation: "i", TurnID: "t"}}, "turn.node: is required for a turn's credential"},
		{domain.MintOptions{Turn: &domain.CredentialTurn{Node: "n", Incarnation: "i", TurnID: strings.Repeat("t", 256)}}, "turn.turn_id: is longer than 255 characters"},
	} {
		_, err := domain.MintCredential(domain.Session{ID: 1}, credentialID, secret, credentialNow, tc.opts)
		var verr *validation.Error
		require.ErrorAs(t, err, &verr, "%+v", tc.opts)
		require.EqualError(t, err, tc.want)
	}
	require.EqualError(t, domain.ParseTurnID(""), "turn_id: is required: the turn whose credentials end")
	require.EqualError(t, domain.ParseNodeSweep("n", ""), "incarnation: is required: the runner node and the incarnation asking, whose credentials are kept")
}

// A turn's credential is one line, its mint's, which says the turn's end
// revokes it: a service's revocation of it writes none. Any other
// revocation is a line, of any credential.
func TestATurnCredentialsRevocationByItsRunnerIsNoLine(t *testing.T) {
	t.Parallel()
	turn := &domain.CredentialTurn{Node: "n1", Incarnation: "i1", TurnID: "session-3/turn-1"}
	c, err := domain.MintCredential(domain.Session{ID: 3, MCPToolGroups: []string{"sessions"}}, credentialID, secret, credentialNow,
		domain.MintOptions{TTL: time.Hour, Turn: turn})
	require.NoError(t, err)
	require.Equal(t, "[Credentials] session credential "+credentialID+" minted (scopes: self, sessions.read, sessions.start) "+
		"for turn session-3/turn-1, whose end revokes it (by the runner)", domain.CredentialMintedLine(c.Credential, "the runner").Message)

	for _, tc := range []struct {
		name      string
		turn      *domain.CredentialTurn
		byService bool
		line      bool
	}{
		{"a turn's, by its runner", turn, true, false},
		{"a turn's, by an admin", turn, false, true},
		{"an admin's, by a service", nil, true, true},
		{"an admin's, by an admin", nil, false, true},
	} {
		c := domain.Credential{ID: credentialID, Turn: tc.turn}.Revoke(domain.RevokedBy("x"), credentialNow)
		line, ok := domain.RevocationLine(c, tc.byService)
		require.Equal(t, tc.line, ok, tc.name)
		if ok {
			require.Equal(t, domain.CredentialRevokedLine(c), line, tc.name)
		}
	}
}
