package service_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/grpcserver"
	"github.com/zimmerhq/zimmer/services/platform/principal"
	"github.com/zimmerhq/zimmer/services/platform/servicetest"
)

// credBundle holds a lifecycle service and a client per principal kind:
// an operator key, an admin key, and the gateway, which reaches lifecycle
// for a client presenting a session credential as a service, resolving
// the token with AuthenticateSessionCredential and forwarding the
// principal it found.
type credBundle struct {
	operator, admin lifecyclev1.LifecycleServiceClient
	gw              asGateway
}

func setupCredentials(t *testing.T) credBundle {
	t.Helper()
	addr := setup(t, "").svc.Addr()
	return credBundle{
		operator: lifecyclev1.NewLifecycleServiceClient(servicetest.DialOperator(t, addr)),
		admin:    lifecyclev1.NewLifecycleServiceClient(servicetest.DialAdmin(t, addr)),
		gw: asGateway{
			client:   lifecyclev1.NewLifecycleServiceClient(servicetest.DialAsService(t, addr, "gateway")),
			triggers: lifecyclev1.NewTriggerServiceClient(servicetest.DialAsService(t, addr, "gateway")),
		},
	}
}

type asGateway struct {
	client   lifecyclev1.LifecycleServiceClient
	triggers lifecyclev1.TriggerServiceClient
}

// session returns a context whose calls act as the credential token is.
func (g asGateway) session(t *testing.T, token string) context.Context {
	t.Helper()
	resp, err := g.client.AuthenticateSessionCredential(context.Background(), &lifecyclev1.AuthenticateSessionCredentialRequest{Token: token})
	require.NoError(t, err)
	c := resp.GetCredential()
	ctx, err := principal.Outgoing(context.Background(), principal.Principal{
		Kind: principal.Session, SessionID: c.GetSessionId(), CredentialID: c.GetId(), Scopes: c.GetScopes(),
	})
	require.NoError(t, err)
	return ctx
}

func create(t *testing.T, client lifecyclev1.LifecycleServiceClient, groups ...string) *lifecyclev1.Session {
	t.Helper()
	resp, err := client.CreateSession(context.Background(), &lifecyclev1.CreateSessionRequest{
		Prompt: "p", GitRoot: "/repo", McpToolGroups: groups,
	})
	require.NoError(t, err)
	return resp.GetSession()
}

func mint(t *testing.T, b credBundle, id int64) *lifecyclev1.MintedSessionCredential {
	t.Helper()
	resp, err := b.admin.MintSessionCredential(context.Background(), &lifecyclev1.MintSessionCredentialRequest{SessionId: fmt.Sprint(id)})
	require.NoError(t, err)
	return resp.GetCredential()
}

func requireStatus(t *testing.T, err error, code codes.Code, msg string) {
	t.Helper()
	require.Error(t, err)
	st := status.Convert(err)
	require.Equal(t, code, st.Code(), st.Message())
	require.Equal(t, msg, st.Message())
}

func timeline(t *testing.T, b credBundle, id int64) []*lifecyclev1.TimelineLine {
	t.Helper()
	resp, err := b.operator.GetSessionTimeline(context.Background(), &lifecyclev1.GetSessionTimelineRequest{SessionId: fmt.Sprint(id)})
	require.NoError(t, err)
	return resp.GetTimeline()
}

// The rules, the principal model and the gRPC server spell the scopes and
// the token's prefix alike.
func TestCredentialWordsAgreeAcrossPackages(t *testing.T) {
	t.Parallel()
	require.Equal(t, principal.ScopeSelf, rules.ScopeSelf)
	require.Equal(t, principal.ScopeSessionsRead, rules.ScopeSessionsRead)
	require.Equal(t, principal.ScopeSessionsStart, rules.ScopeSessionsStart)
	require.Equal(t, grpcserver.SessionTokenPrefix, rules.SessionCredentialPrefix)
}

func TestMintAuthenticateAndRevoke(t *testing.T) {
	t.Parallel()
	b := setupCredentials(t)
	gw := b.gw
	ctx := context.Background()
	s := create(t, b.operator)
	require.Equal(t, []string{"sessions"}, s.GetMcpToolGroups())

	c := mint(t, b, s.GetId())
	require.True(t, strings.HasPrefix(c.GetToken(), "zsc_"))
	require.Equal(t, []string{"self", "sessions.read", "sessions.start"}, c.GetScopes())
	require.NotEmpty(t, c.GetId())

	got, err := gw.client.AuthenticateSessionCredential(ctx, &lifecyclev1.AuthenticateSessionCredentialRequest{Token: c.GetToken()})
	require.NoError(t, err)
	require.Equal(t, c.GetId(), got.GetCredential().GetId())
	require.Equal(t, s.GetId(), got.GetCredential().GetSessionId())
	require.Equal(t, c.GetScopes(), got.GetCredential().GetScopes())

	// Minting and revoking are the admin's; authenticating is internal.
	_, err = b.operator.MintSessionCredential(ctx, &lifecyclev1.MintSessionCredentialRequest{SessionId: fmt.Sprint(s.GetId())})
	require.Equal(t, codes.PermissionDenied, status.Code(err))
	_, err = b.admin.AuthenticateSessionCredential(ctx, &lifecyclev1.AuthenticateSessionCredentialRequest{Token: c.GetToken()})
	require.Equal(t, codes.PermissionDenied, status.Code(err))

	for _, token := range []string{"", "zsc_nope", "an-operator-key", c.GetToken() + "x"} {
		_, err = gw.client.AuthenticateSessionCredential(ctx, &lifecyclev1.AuthenticateSessionCredentialRequest{Token: token})
		requireStatus(t, err, codes.Unauthenticated, "unknown session credential: no credential was minted with this token")
	}

	// The token is shown once: a revocation answers the credential without it.
	revoked, err := b.admin.RevokeSessionCredential(ctx, &lifecyclev1.RevokeSessionCredentialRequest{
		SessionId: fmt.Sprint(s.GetId()), CredentialId: c.GetId(),
	})
	require.NoError(t, err)
	want := "admin key …" + servicetest.AdminKey[len(servicetest.AdminKey)-4:] + " revoked it"
	require.Equal(t, want, revoked.GetCredential().GetRevokedReason())
	require.NotNil(t, revoked.GetCredential().GetRevokedAt())
	_, err = gw.client.AuthenticateSessionCredential(ctx, &lifecyclev1.AuthenticateSessionCredentialRequest{Token: c.GetToken()})
	requireStatus(t, err, codes.Unauthenticated, "credential revoked: "+want)

	// Again: nothing changes, the first revocation stands.
	again, err := b.admin.RevokeSessionCredential(ctx, &lifecyclev1.RevokeSessionCredentialRequest{
		SessionId: fmt.Sprint(s.GetId()), CredentialId: strings.ToUpper(c.GetId()),
	})
	require.NoError(t, err)
	require.Equal(t, revoked.GetCredential().GetRevokedAt().AsTime(), again.GetCredential().GetRevokedAt().AsTime())

	lines := timeline(t, b, s.GetId())
	var credLines []string
	for _, l := range lines {
		if strings.HasPrefix(l.GetMessage(), "[Credentials]") {
			credLines = append(credLines, l.GetMessage())
			require.NotContains(t, l.GetMessage(), c.GetToken())
		}
	}
	require.Equal(t, []string{
		"[Credentials] session credential " + c.GetId() + " minted (scopes: self, sessions.read, sessions.start) (by admin key …" +
			servicetest.AdminKey[len(servicetest.AdminKey)-4:] + ")",
		"[Credentials] session credential " + c.GetId() + " revoked: " + want,
	}, credLines)

	// A credential of another session, an unknown one, a malformed id.
	other := create(t, b.operator)
	_, err = b.admin.RevokeSessionCredential(ctx, &lifecyclev1.RevokeSessionCredentialRequest{
		SessionId: fmt.Sprint(other.GetId()), CredentialId: c.GetId(),
	})
	requireStatus(t, err, codes.NotFound, fmt.Sprintf("session #%d has no credential %s; give an id its mint answered", other.GetId(), c.GetId()))
	_, err = b.admin.RevokeSessionCredential(ctx, &lifecyclev1.RevokeSessionCredentialRequest{SessionId: fmt.Sprint(s.GetId()), CredentialId: "42"})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	_, err = b.admin.MintSessionCredential(ctx, &lifecyclev1.MintSessionCredentialRequest{SessionId: "999999"})
	require.Equal(t, codes.NotFound, status.Code(err))
}

func TestToolGroupsDecideTheScopes(t *testing.T) {
	t.Parallel()
	b := setupCredentials(t)
	gw := b.gw
	self := create(t, b.operator, "self_session")
	require.Equal(t, []string{"self_session"}, self.GetMcpToolGroups())
	c := mint(t, b, self.GetId())
	require.Equal(t, []string{"self"}, c.GetScopes())

	// Without sessions.read and sessions.start it reads only itself and
	// starts nothing.
	ctx := gw.session(t, c.GetToken())
	other := create(t, b.operator)
	_, err := gw.client.GetSession(ctx, &lifecyclev1.GetSessionRequest{SessionId: fmt.Sprint(self.GetId())})
	require.NoError(t, err)
	_, err = gw.client.GetSession(ctx, &lifecyclev1.GetSessionRequest{SessionId: fmt.Sprint(other.GetId())})
	requireStatus(t, err, codes.PermissionDenied, fmt.Sprintf(
		"session #%d's credential may act only on its own session, not on session #%d; that needs an operator key", self.GetId(), other.GetId()))
	_, err = gw.client.GetSessionTimeline(ctx, &lifecyclev1.GetSessionTimelineRequest{SessionId: fmt.Sprint(other.GetId())})
	require.Equal(t, codes.PermissionDenied, status.Code(err))
	_, err = gw.client.ListSessionEvents(ctx, &lifecyclev1.ListSessionEventsRequest{SessionId: fmt.Sprint(other.GetId())})
	require.Equal(t, codes.PermissionDenied, status.Code(err))
	_, err = gw.client.ListSessions(ctx, &lifecyclev1.ListSessionsRequest{})
	require.Equal(t, codes.PermissionDenied, status.Code(err))
	_, err = gw.client.CreateSession(ctx, &lifecyclev1.CreateSessionRequest{Prompt: "p", GitRoot: "/r"})
	require.Equal(t, codes.PermissionDenied, status.Code(err))

	_, err = b.admin.CreateSession(context.Background(), &lifecyclev1.CreateSessionRequest{
		Prompt: "p", GitRoot: "/r", McpToolGroups: []string{"sessions", "admin"},
	})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	require.Contains(t, status.Convert(err).Message(), `"admin" is not a tool group`)
}

func TestASessionCredentialActsOnlyAsItsSession(t *testing.T) {
	t.Parallel()
	b := setupCredentials(t)
	gw := b.gw
	own := create(t, b.operator)
	_, err := b.admin.UpdateSession(context.Background(), &lifecyclev1.UpdateSessionRequest{SessionId: fmt.Sprint(own.GetId()), Slug: ptr("own-one")})
	require.NoError(t, err)
	other := create(t, b.operator)
	_, err = b.admin.UpdateSession(context.Background(), &lifecyclev1.UpdateSessionRequest{SessionId: fmt.Sprint(other.GetId()), Slug: ptr("other-one")})
	require.NoError(t, err)
	c := mint(t, b, own.GetId())
	ctx := gw.session(t, c.GetToken())
	notYours := fmt.Sprintf("session #%d's credential may act only on its own session, not on session %%s; that needs an operator key", own.GetId())

	// Reads: any session, with sessions.read.
	for _, ref := range []string{fmt.Sprint(other.GetId()), "other-one"} {
		_, err = gw.client.GetSession(ctx, &lifecyclev1.GetSessionRequest{SessionId: ref})
		require.NoError(t, err)
		_, err = gw.client.GetSessionTimeline(ctx, &lifecyclev1.GetSessionTimelineRequest{SessionId: ref})
		require.NoError(t, err)
	}
	_, err = gw.client.ListSessions(ctx, &lifecyclev1.ListSessionsRequest{})
	require.NoError(t, err)
	// One rule for every read (principal.MayRead): the triggers of another
	// session read like its timeline (they were 403, issue 20 item 12), and
	// a credential without sessions.read reads neither.
	for _, ref := range []string{fmt.Sprint(other.GetId()), "other-one"} {
		_, err = gw.triggers.ListTriggers(ctx, &lifecyclev1.ListTriggersRequest{SessionId: ref})
		require.NoError(t, err, ref)
	}
	narrow := create(t, b.operator, "self_session")
	narrowCtx := gw.session(t, mint(t, b, narrow.GetId()).GetToken())
	_, err = gw.triggers.ListTriggers(narrowCtx, &lifecyclev1.ListTriggersRequest{SessionId: fmt.Sprint(narrow.GetId())})
	require.NoError(t, err)
	for _, ref := range []string{fmt.Sprint(other.GetId()), "other-one"} {
		_, err = gw.triggers.ListTriggers(narrowCtx, &lifecyclev1.ListTriggersRequest{SessionId: ref})
		require.Equal(t, codes.PermissionDenied, status.Code(err), "%s: %v", ref, err)
		_, err = gw.client.GetSessionTimeline(narrowCtx, &lifecyclev1.GetSessionTimelineRequest{SessionId: ref})
		require.Equal(t, codes.PermissionDenied, status.Code(err), "%s: %v", ref, err)
		_, err = gw.client.GetSession(narrowCtx, &lifecyclev1.GetSessionRequest{SessionId: ref})
		require.Equal(t, codes.PermissionDenied, status.Code(err), "%s: %v", ref, err)
	}

	// Writes: its own session only, by id or slug.
	_, err = gw.client.UpdateSession(ctx, &lifecyclev1.UpdateSessionRequest{SessionId: fmt.Sprint(other.GetId()), Notes: ptr("x")})
	requireStatus(t, err, codes.PermissionDenied, fmt.Sprintf(notYours, fmt.Sprintf("#%d", other.GetId())))
	_, err = gw.client.UpdateSession(ctx, &lifecyclev1.UpdateSessionRequest{SessionId: "other-one", Notes: ptr("x")})
	requireStatus(t, err, codes.PermissionDenied, fmt.Sprintf(notYours, `"other-one"`))
	_, err = gw.client.SetSessionHeartbeat(ctx, &lifecyclev1.SetSessionHeartbeatRequest{SessionId: fmt.Sprint(other.GetId()), Enabled: ptr(true)})
	require.Equal(t, codes.PermissionDenied, status.Code(err))
	_, err = gw.client.ArchiveSession(ctx, &lifecyclev1.ArchiveSessionRequest{SessionId: "other-one"})
	require.Equal(t, codes.PermissionDenied, status.Code(err))

	_, err = gw.client.UpdateSession(ctx, &lifecyclev1.UpdateSessionRequest{SessionId: "own-one", Notes: ptr("mine"), Title: ptr("T")})
	require.NoError(t, err)
	_, err = gw.client.SetSessionHeartbeat(ctx, &lifecyclev1.SetSessionHeartbeatRequest{SessionId: fmt.Sprint(own.GetId()), Enabled: ptr(true)})
	require.NoError(t, err)
	_, err = gw.client.UpdateSession(ctx, &lifecyclev1.UpdateSessionRequest{SessionId: "own-one", Precedence: ptr(int32(100)), SchedulingClass: ptr("priority")})
	requireStatus(t, err, codes.PermissionDenied, fmt.Sprintf(
		"session #%d's credential may edit only its title, notes and heartbeat; scheduling_class, precedence need an operator key", own.GetId()))
	_, err = gw.client.UpdateSession(ctx, &lifecyclev1.UpdateSessionRequest{SessionId: "own-one", PushNotifications: ptr(false)})
	requireStatus(t, err, codes.PermissionDenied, fmt.Sprintf(
		"session #%d's credential may edit only its title, notes and heartbeat; push_notifications need an operator key", own.GetId()))

	// The verbs on any session, the driver, hard delete: not for it.
	_, err = gw.client.PauseSession(ctx, &lifecyclev1.PauseSessionRequest{SessionId: fmt.Sprint(own.GetId())})
	require.Equal(t, codes.PermissionDenied, status.Code(err))
	_, err = gw.client.TransitionSession(ctx, &lifecyclev1.TransitionSessionRequest{SessionId: fmt.Sprint(own.GetId()), Event: "start"})
	require.Equal(t, codes.PermissionDenied, status.Code(err))
	_, err = gw.client.DeleteSession(ctx, &lifecyclev1.DeleteSessionRequest{SessionId: fmt.Sprint(own.GetId())})
	require.Equal(t, codes.PermissionDenied, status.Code(err))
	_, err = gw.client.MintSessionCredential(ctx, &lifecyclev1.MintSessionCredentialRequest{SessionId: fmt.Sprint(own.GetId())})
	require.Equal(t, codes.PermissionDenied, status.Code(err))

	// It starts children of its own session only.
	child, err := gw.client.CreateSession(ctx, &lifecyclev1.CreateSessionRequest{Prompt: "p", GitRoot: "/r"})
	require.NoError(t, err)
	require.Equal(t, own.GetId(), child.GetSession().GetParentSessionId())
	// A child never gets more than its creator may set on itself (a child
	// with precedence 1000 was created, issue 20 item 12).
	before, err := gw.client.ListSessions(ctx, &lifecyclev1.ListSessionsRequest{})
	require.NoError(t, err)
	_, err = gw.client.CreateSession(ctx, &lifecyclev1.CreateSessionRequest{Prompt: "p", GitRoot: "/r", Precedence: 1000})
	requireStatus(t, err, codes.PermissionDenied, fmt.Sprintf(
		"session #%d's credential may not set on its child what it may not set on itself; leave precedence out (the operator's defaults apply) "+
			"or start the session with an operator key", own.GetId()))
	_, err = gw.client.CreateSession(ctx, &lifecyclev1.CreateSessionRequest{Prompt: "p", GitRoot: "/r", SchedulingClass: "priority", PushNotifications: ptr(false)})
	require.Equal(t, codes.PermissionDenied, status.Code(err), "%v", err)
	require.Contains(t, status.Convert(err).Message(), "leave scheduling_class, push_notifications out")
	after, err := gw.client.ListSessions(ctx, &lifecyclev1.ListSessionsRequest{})
	require.NoError(t, err)
	require.Equal(t, len(before.GetSessions()), len(after.GetSessions()), "a refused child is not written")
	_, err = gw.client.CreateSession(ctx, &lifecyclev1.CreateSessionRequest{Prompt: "p", GitRoot: "/r", ParentSessionId: ptr(other.GetId())})
	requireStatus(t, err, codes.PermissionDenied, fmt.Sprintf(
		"session #%d's credential starts only children of its own session; parent_session_id %d names another (leave it out)", own.GetId(), other.GetId()))

	// It acts as its own session, whatever it declares.
	_, err = gw.client.ArchiveSession(ctx, &lifecyclev1.ArchiveSessionRequest{SessionId: "own-one", ActingSessionId: ptr(other.GetId())})
	requireStatus(t, err, codes.PermissionDenied, fmt.Sprintf(
		"acting_session_id %d is not the session this credential belongs to (#%d); leave it out: the credential says who acts", other.GetId(), own.GetId()))
	archived, err := gw.client.ArchiveSession(ctx, &lifecyclev1.ArchiveSessionRequest{SessionId: "own-one"})
	require.NoError(t, err)
	require.Equal(t, "archived", archived.GetSession().GetStatus())

	// Archive revoked it: every later call is refused naming why, and the
	// timeline says so right after the archive line.
	revoked := fmt.Sprintf("credential revoked: session #%d was archived", own.GetId())
	_, err = gw.client.AuthenticateSessionCredential(context.Background(), &lifecyclev1.AuthenticateSessionCredentialRequest{Token: c.GetToken()})
	requireStatus(t, err, codes.Unauthenticated, revoked)
	// A write still forwarding the principal (authenticated before the
	// archive) is refused inside its transaction.
	_, err = gw.client.CreateSession(ctx, &lifecyclev1.CreateSessionRequest{Prompt: "p", GitRoot: "/r"})
	requireStatus(t, err, codes.Unauthenticated, revoked)
	_, err = b.admin.UnarchiveSession(context.Background(), &lifecyclev1.UnarchiveSessionRequest{SessionId: "own-one"})
	require.NoError(t, err)
	_, err = gw.client.UpdateSession(ctx, &lifecyclev1.UpdateSessionRequest{SessionId: "own-one", Notes: ptr("back")})
	requireStatus(t, err, codes.Unauthenticated, revoked)

	lines := timeline(t, b, own.GetId())
	var archiveAt int
	for i, l := range lines {
		if strings.Contains(l.GetMessage(), "moved to trash") {
			archiveAt = i
		}
	}
	require.NotZero(t, archiveAt)
	require.Contains(t, lines[archiveAt].GetMessage(), fmt.Sprintf("session #%d's credential", own.GetId()), "the archive is attributed to the credential")
	require.Equal(t, fmt.Sprintf("[Credentials] session credential %s revoked: session #%d was archived", c.GetId(), own.GetId()),
		lines[archiveAt+1].GetMessage())

	// An archived session gets no new credential; restored, it may.
	_, err = b.admin.ArchiveSession(context.Background(), &lifecyclev1.ArchiveSessionRequest{SessionId: "own-one"})
	require.NoError(t, err)
	_, err = b.admin.MintSessionCredential(context.Background(), &lifecyclev1.MintSessionCredentialRequest{SessionId: "own-one"})
	require.Equal(t, codes.FailedPrecondition, status.Code(err))
}

func TestDeleteRevokesAndKeepsTheReason(t *testing.T) {
	t.Parallel()
	b := setupCredentials(t)
	gw := b.gw
	s := create(t, b.operator)
	c1, c2 := mint(t, b, s.GetId()), mint(t, b, s.GetId())
	_, err := b.admin.DeleteSession(context.Background(), &lifecyclev1.DeleteSessionRequest{SessionId: fmt.Sprint(s.GetId())})
	require.NoError(t, err)
	for _, c := range []*lifecyclev1.MintedSessionCredential{c1, c2} {
		_, err = gw.client.AuthenticateSessionCredential(context.Background(), &lifecyclev1.AuthenticateSessionCredentialRequest{Token: c.GetToken()})
		requireStatus(t, err, codes.Unauthenticated, fmt.Sprintf("credential revoked: session #%d was deleted", s.GetId()))
	}
}

// The race: an admin revokes a credential while 50 calls write with it.
// Writes of one session commit in the order of their timeline lines (each
// holds the session's lock from its line to its commit), so: every write
// that succeeded has its line before the revocation's, none after; every
// other is refused as revoked; and none that started after the revocation
// returned succeeded.
func TestNoWriteOfARevokedCredentialCommitsAfterItsRevocation(t *testing.T) {
	t.Parallel()
	b := setupCredentials(t)
	gw := b.gw
	s := create(t, b.operator)
	c := mint(t, b, s.GetId())
	ctx := gw.session(t, c.GetToken())

	const calls = 50
	type result struct {
		notes             string
		err               error
		started, returned time.Time
	}
	results := make([]result, calls)
	var (
		wg        sync.WaitGroup
		revokedAt time.Time
		revokeErr error
	)
	start := make(chan struct{})
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			// Spread the calls over 50 ms, around the revocation.
			time.Sleep(time.Duration(i) * time.Millisecond)
			r := result{notes: fmt.Sprintf("call %d", i), started: time.Now()}
			_, r.err = gw.client.UpdateSession(ctx, &lifecyclev1.UpdateSessionRequest{SessionId: fmt.Sprint(s.GetId()), Notes: &r.notes})
			r.returned = time.Now()
			results[i] = r
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-start
		time.Sleep(15 * time.Millisecond)
		_, revokeErr = b.admin.RevokeSessionCredential(context.Background(), &lifecyclev1.RevokeSessionCredentialRequest{
			SessionId: fmt.Sprint(s.GetId()), CredentialId: c.GetId(),
		})
		revokedAt = time.Now()
	}()
	close(start)
	wg.Wait()
	require.NoError(t, revokeErr)

	revocation, before, after := -1, 0, 0
	for i, l := range timeline(t, b, s.GetId()) {
		switch msg := l.GetMessage(); {
		case strings.Contains(msg, "revoked: admin key"):
			revocation = i
		case strings.HasPrefix(msg, "[Session] updated notes"):
			if revocation < 0 {
				before++
			} else {
				after++
			}
		}
	}
	require.GreaterOrEqual(t, revocation, 0, "the revocation's line")
	require.Zero(t, after, "writes committed after the revocation")

	var succeeded []string
	for _, r := range results {
		if r.err == nil {
			succeeded = append(succeeded, r.notes)
			require.False(t, r.started.After(revokedAt), "%s started after the revocation returned, yet succeeded", r.notes)
			continue
		}
		requireStatus(t, r.err, codes.Unauthenticated, "credential revoked: admin key …"+servicetest.AdminKey[len(servicetest.AdminKey)-4:]+" revoked it")
	}
	t.Logf("%d writes committed before the revocation, %d were refused", len(succeeded), calls-len(succeeded))
	require.Equal(t, len(succeeded), before, "each successful write has its line, before the revocation's")
	require.NotEmpty(t, succeeded, "no write ran before the revocation: the test proved nothing")
	require.Less(t, len(succeeded), calls, "no write ran after the revocation: the test proved nothing")

	final, err := b.admin.GetSession(context.Background(), &lifecyclev1.GetSessionRequest{SessionId: fmt.Sprint(s.GetId())})
	require.NoError(t, err)
	require.Equal(t, int64(1+len(succeeded)), final.GetSession().GetVersion(), "one version per committed write")
	require.Contains(t, succeeded, final.GetSession().GetNotes(), "the notes are a successful write's")
}
