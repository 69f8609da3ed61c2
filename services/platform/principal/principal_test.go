package principal_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/metadata"

	"github.com/zimmerhq/zimmer/services/platform/principal"
)

func TestDescribeNamesThePrincipalNeverTheSecret(t *testing.T) {
	t.Parallel()
	key := "zk_0123456789abcdefWXYZ"
	for _, tc := range []struct {
		p    principal.Principal
		want string
	}{
		{principal.Principal{Kind: principal.Operator, KeyHint: principal.KeyHint(key)}, "operator key …WXYZ"},
		{principal.Principal{Kind: principal.Admin, KeyHint: principal.KeyHint(key)}, "admin key …WXYZ"},
		{principal.Principal{Kind: principal.Operator, KeyHint: principal.KeyHint("short")}, "operator key"},
		{principal.Principal{Kind: principal.Session, SessionID: 12}, "session #12's credential"},
		{principal.Principal{Kind: principal.Service, Service: "runner"}, "the runner"},
		{principal.Principal{}, "an unauthenticated caller"},
	} {
		require.Equal(t, tc.want, tc.p.Describe())
		require.NotContains(t, tc.p.Describe(), key)
	}
}

func TestSessionCredentialsActOnlyAsTheirSessionWithinTheirScopes(t *testing.T) {
	t.Parallel()
	s := principal.Principal{Kind: principal.Session, SessionID: 7, Scopes: []string{principal.ScopeSelf, principal.ScopeSessionsRead}}
	require.True(t, s.MayActOn(7))
	require.False(t, s.MayActOn(8))
	require.True(t, s.Has(principal.ScopeSessionsRead))
	require.False(t, s.Has(principal.ScopeSessionsStart))

	op := principal.Principal{Kind: principal.Operator}
	require.True(t, op.MayActOn(8))
	require.True(t, op.Has(principal.ScopeSessionsStart))

	svc := principal.Principal{Kind: principal.Service, Service: "runner"}
	require.False(t, svc.MayActOn(8), "a service acts through internal methods, not as a session-scoped caller")
}

func TestForwardedRoundTrip(t *testing.T) {
	t.Parallel()
	p := principal.Principal{Kind: principal.Session, SessionID: 3, CredentialID: "c1", Scopes: []string{principal.ScopeSelf}}
	out, err := principal.Outgoing(context.Background(), p)
	require.NoError(t, err)
	md, _ := metadata.FromOutgoingContext(out)
	got, ok, err := principal.Forwarded(metadata.NewIncomingContext(context.Background(), md))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, p, got)

	_, ok, err = principal.Forwarded(context.Background())
	require.NoError(t, err)
	require.False(t, ok)

	twice := metadata.Pairs(principal.MetadataKey, "{}", principal.MetadataKey, "{}")
	_, _, err = principal.Forwarded(metadata.NewIncomingContext(context.Background(), twice))
	require.Error(t, err)
	bad := metadata.Pairs(principal.MetadataKey, "{")
	_, _, err = principal.Forwarded(metadata.NewIncomingContext(context.Background(), bad))
	require.Error(t, err)
}

func TestOneReadRuleAndOneActingRule(t *testing.T) {
	t.Parallel()
	reader := principal.Principal{Kind: principal.Session, SessionID: 7, Scopes: []string{principal.ScopeSelf, principal.ScopeSessionsRead}}
	self := principal.Principal{Kind: principal.Session, SessionID: 7, Scopes: []string{principal.ScopeSelf}}
	for _, tc := range []struct {
		p        principal.Principal
		own, any bool
	}{
		{reader, true, true},
		{self, true, false},
		{principal.Principal{Kind: principal.Operator}, true, true},
		{principal.Principal{Kind: principal.Admin}, true, true},
		{principal.Principal{Kind: principal.Service, Service: "runner"}, true, true},
		{principal.Principal{}, false, false},
	} {
		require.Equal(t, tc.own, tc.p.MayRead(7), tc.p.Describe())
		require.Equal(t, tc.any, tc.p.MayRead(8), tc.p.Describe())
	}

	for _, declared := range []int64{0, 7} {
		got, err := self.ActingAs(declared)
		require.NoError(t, err)
		require.Equal(t, int64(7), got, "a credential acts as its own session")
	}
	_, err := self.ActingAs(8)
	require.EqualError(t, err, "acting_session_id 8 is not the session this credential belongs to (#7); leave it out: the credential says who acts")
	got, err := principal.Principal{Kind: principal.Operator}.ActingAs(8)
	require.NoError(t, err)
	require.Equal(t, int64(8), got, "a key declares whom it acts for")
}
