package service_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/platform/servicetest"
)

// turnCreds is a lifecycle service as the runner reaches it, beside the
// credential bundle's clients.
type turnCreds struct {
	credBundle
	runner lifecyclev1.LifecycleServiceClient
}

func setupTurnCredentials(t *testing.T) turnCreds {
	t.Helper()
	addr := setup(t, "").svc.Addr()
	return turnCreds{
		credBundle: credBundle{
			operator: lifecyclev1.NewLifecycleServiceClient(servicetest.DialOperator(t, addr)),
			admin:    lifecyclev1.NewLifecycleServiceClient(servicetest.DialAdmin(t, addr)),
			gw:       asGateway{client: lifecyclev1.NewLifecycleServiceClient(servicetest.DialAsService(t, addr, "gateway"))},
		},
		runner: lifecyclev1.NewLifecycleServiceClient(servicetest.DialAsService(t, addr, "runner")),
	}
}

// mintForTurn mints a credential as the runner does for a turn.
func (b turnCreds) mintForTurn(t *testing.T, session int64, node, incarnation, turn string, ttl time.Duration) *lifecyclev1.MintedSessionCredential {
	t.Helper()
	resp, err := b.runner.MintSessionCredential(context.Background(), &lifecyclev1.MintSessionCredentialRequest{
		SessionId: fmt.Sprint(session), Ttl: durationpb.New(ttl),
		Turn: &lifecyclev1.CredentialTurn{Node: node, Incarnation: incarnation, TurnId: turn},
	})
	require.NoError(t, err)
	return resp.GetCredential()
}

func (b turnCreds) authenticate(token string) (*lifecyclev1.SessionCredential, error) {
	resp, err := b.gw.client.AuthenticateSessionCredential(context.Background(), &lifecyclev1.AuthenticateSessionCredentialRequest{Token: token})
	return resp.GetCredential(), err
}

// A turn's end revokes the credentials minted for that turn, and only
// those: another turn's and an admin's live on. Revoking again is nothing.
func TestATurnsEndRevokesItsCredentials(t *testing.T) {
	t.Parallel()
	b := setupTurnCredentials(t)
	ctx := context.Background()
	s := create(t, b.operator)
	id := fmt.Sprint(s.GetId())
	first := b.mintForTurn(t, s.GetId(), "n1", "i1", "session-1/turn-1", time.Hour)
	second := b.mintForTurn(t, s.GetId(), "n1", "i1", "session-1/turn-2", time.Hour)
	admins := mint(t, b.credBundle, s.GetId())

	got, err := b.authenticate(first.GetToken())
	require.NoError(t, err)
	require.Equal(t, "session-1/turn-1", got.GetTurn().GetTurnId(), "the credential names its turn")
	require.Equal(t, "n1", got.GetTurn().GetNode())
	require.WithinDuration(t, first.GetCreatedAt().AsTime().Add(time.Hour), got.GetExpiresAt().AsTime(), 0, "and its expiry")

	resp, err := b.runner.RevokeTurnCredentials(ctx, &lifecyclev1.RevokeTurnCredentialsRequest{SessionId: id, TurnId: "session-1/turn-1"})
	require.NoError(t, err)
	require.Equal(t, int32(1), resp.GetRevoked())
	_, err = b.authenticate(first.GetToken())
	requireStatus(t, err, codes.Unauthenticated, "credential revoked: its turn session-1/turn-1 ended")
	for _, c := range []*lifecyclev1.MintedSessionCredential{second, admins} {
		_, err = b.authenticate(c.GetToken())
		require.NoError(t, err, "another turn's credential, or an admin's, is not this turn's")
	}
	// One credentials line per turn: the mint's, which says the turn's end
	// revokes it; the revocation is the credential's own record (above).
	lines := timeline(t, b.credBundle, s.GetId())
	require.Equal(t, []string{
		"[Credentials] session credential " + first.GetId() + " minted (scopes: self, sessions.read, sessions.start) " +
			"for turn session-1/turn-1, whose end revokes it (by the runner)",
	}, credentialLinesOf(lines, first.GetId()))

	resp, err = b.runner.RevokeTurnCredentials(ctx, &lifecyclev1.RevokeTurnCredentialsRequest{SessionId: id, TurnId: "session-1/turn-1"})
	require.NoError(t, err, "a retried revocation lands again")
	require.Equal(t, int32(0), resp.GetRevoked())
	require.Len(t, timeline(t, b.credBundle, s.GetId()), len(lines), "and writes nothing")

	_, err = b.runner.RevokeTurnCredentials(ctx, &lifecyclev1.RevokeTurnCredentialsRequest{SessionId: id, TurnId: " "})
	requireStatus(t, err, codes.InvalidArgument, "turn_id: is required: the turn whose credentials end")
	_, err = b.runner.RevokeTurnCredentials(ctx, &lifecyclev1.RevokeTurnCredentialsRequest{SessionId: "999999", TurnId: "t"})
	require.Equal(t, codes.NotFound, status.Code(err))
	// Internal: a key may not.
	_, err = b.admin.RevokeTurnCredentials(ctx, &lifecyclev1.RevokeTurnCredentialsRequest{SessionId: id, TurnId: "session-1/turn-2"})
	require.Equal(t, codes.PermissionDenied, status.Code(err))
}

// A runner's start revokes the turn credentials its node's earlier
// incarnations minted, on every session, and keeps its own, other nodes'
// and admins'.
func TestANodesNextRunnerRevokesItsPredecessorsTurnCredentials(t *testing.T) {
	t.Parallel()
	b := setupTurnCredentials(t)
	ctx := context.Background()
	s1, s2 := create(t, b.operator), create(t, b.operator)
	old1 := b.mintForTurn(t, s1.GetId(), "n1", "before", "session-1/turn-1", time.Hour)
	old2 := b.mintForTurn(t, s2.GetId(), "n1", "before", "session-2/turn-1", time.Hour)
	own := b.mintForTurn(t, s1.GetId(), "n1", "now", "session-1/turn-2", time.Hour)
	other := b.mintForTurn(t, s2.GetId(), "n2", "before", "session-2/turn-2", time.Hour)
	admins := mint(t, b.credBundle, s1.GetId())

	resp, err := b.runner.SweepNodeCredentials(ctx, &lifecyclev1.SweepNodeCredentialsRequest{Node: "n1", Incarnation: "now"})
	require.NoError(t, err)
	require.Equal(t, int32(2), resp.GetRevoked())
	for _, c := range []*lifecyclev1.MintedSessionCredential{old1, old2} {
		_, err = b.authenticate(c.GetToken())
		requireStatus(t, err, codes.Unauthenticated,
			`credential revoked: the runner of node "n1" restarted, so the turn it was minted for is no longer running`)
	}
	for _, c := range []*lifecyclev1.MintedSessionCredential{own, other, admins} {
		_, err = b.authenticate(c.GetToken())
		require.NoError(t, err)
	}
	lines := timeline(t, b.credBundle, s2.GetId())
	require.Len(t, credentialLinesOf(lines, old2.GetId()), 1, "the mint's line only: the sweep's revocation is the credential's record")
	require.True(t, strings.HasPrefix(credentialLinesOf(lines, old2.GetId())[0], "[Credentials] session credential "+old2.GetId()+" minted"))

	resp, err = b.runner.SweepNodeCredentials(ctx, &lifecyclev1.SweepNodeCredentialsRequest{Node: "n1", Incarnation: "now"})
	require.NoError(t, err)
	require.Equal(t, int32(0), resp.GetRevoked())
	_, err = b.runner.SweepNodeCredentials(ctx, &lifecyclev1.SweepNodeCredentialsRequest{Node: "n1"})
	requireStatus(t, err, codes.InvalidArgument, "incarnation: is required: the runner node and the incarnation asking, whose credentials are kept")
	_, err = b.operator.SweepNodeCredentials(ctx, &lifecyclev1.SweepNodeCredentialsRequest{Node: "n1", Incarnation: "x"})
	require.Equal(t, codes.PermissionDenied, status.Code(err))
}

// A credential with a lifetime opens nothing past it, even unrevoked: not
// at authentication, and not in a write whose caller authenticated
// before it expired.
func TestACredentialOpensNothingPastItsExpiry(t *testing.T) {
	t.Parallel()
	b := setupTurnCredentials(t)
	ctx := context.Background()
	s := create(t, b.operator)
	const ttl = 1500 * time.Millisecond
	c := b.mintForTurn(t, s.GetId(), "n1", "i1", "session-1/turn-1", ttl)
	asAgent := b.gw.session(t, c.GetToken())
	title := "mine"
	_, err := b.gw.client.UpdateSession(asAgent, &lifecyclev1.UpdateSessionRequest{SessionId: fmt.Sprint(s.GetId()), Title: &title})
	require.NoError(t, err)

	time.Sleep(time.Until(c.GetCreatedAt().AsTime().Add(ttl + 100*time.Millisecond)))
	_, err = b.authenticate(c.GetToken())
	require.Equal(t, codes.Unauthenticated, status.Code(err))
	require.Contains(t, status.Convert(err).Message(), "credential expired at ")
	_, err = b.gw.client.UpdateSession(asAgent, &lifecyclev1.UpdateSessionRequest{SessionId: fmt.Sprint(s.GetId()), Title: &title})
	require.Equal(t, codes.Unauthenticated, status.Code(err), "a write re-checks the credential")

	for _, ttl := range []*durationpb.Duration{{Seconds: 0}, {Seconds: -1}, {Seconds: 31 * 24 * 3600}} {
		_, err = b.runner.MintSessionCredential(ctx, &lifecyclev1.MintSessionCredentialRequest{SessionId: fmt.Sprint(s.GetId()), Ttl: ttl})
		require.Equal(t, codes.InvalidArgument, status.Code(err), "ttl %v", ttl)
	}
	_, err = b.runner.MintSessionCredential(ctx, &lifecyclev1.MintSessionCredentialRequest{
		SessionId: fmt.Sprint(s.GetId()), Turn: &lifecyclev1.CredentialTurn{Node: "n1", TurnId: "t"},
	})
	requireStatus(t, err, codes.InvalidArgument, "turn.incarnation: is required for a turn's credential")
}

// credentialLinesOf are the timeline lines naming credential id.
func credentialLinesOf(lines []*lifecyclev1.TimelineLine, id string) []string {
	var out []string
	for _, l := range lines {
		if strings.Contains(l.GetMessage(), id) {
			out = append(out, l.GetMessage())
		}
	}
	return out
}

// A turn's credential is one timeline line, its mint's: the runner's own
// revocation as its agent exits (RevokeSessionCredential as a service)
// writes none, as the turn's end and the node sweep do not. An admin's
// revocation of one is a line, as of any credential.
func TestATurnCredentialIsOneTimelineLine(t *testing.T) {
	t.Parallel()
	b := setupTurnCredentials(t)
	ctx := context.Background()
	s := create(t, b.operator)
	id := fmt.Sprint(s.GetId())
	byRunner := b.mintForTurn(t, s.GetId(), "n1", "i1", "session-1/turn-1", time.Hour)
	byAdmin := b.mintForTurn(t, s.GetId(), "n1", "i1", "session-1/turn-2", time.Hour)

	_, err := b.runner.RevokeSessionCredential(ctx, &lifecyclev1.RevokeSessionCredentialRequest{SessionId: id, CredentialId: byRunner.GetId()})
	require.NoError(t, err)
	_, err = b.authenticate(byRunner.GetToken())
	requireStatus(t, err, codes.Unauthenticated, "credential revoked: the runner revoked it")
	_, err = b.admin.RevokeSessionCredential(ctx, &lifecyclev1.RevokeSessionCredentialRequest{SessionId: id, CredentialId: byAdmin.GetId()})
	require.NoError(t, err)

	lines := timeline(t, b.credBundle, s.GetId())
	got := credentialLinesOf(lines, byRunner.GetId())
	require.Len(t, got, 1, "%v", got)
	require.Contains(t, got[0], "minted (scopes: self, sessions.read, sessions.start) for turn session-1/turn-1, whose end revokes it")
	got = credentialLinesOf(lines, byAdmin.GetId())
	require.Len(t, got, 2, "%v", got)
	require.Contains(t, got[1], "[Credentials] session credential "+byAdmin.GetId()+" revoked: admin key")
}
