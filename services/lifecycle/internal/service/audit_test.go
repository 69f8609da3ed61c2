package service_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/platform/servicetest"
	"github.com/zimmerhq/zimmer/services/platform/surface"
)

// TestTimelineLinesNameThePrincipalNeverTheSecret drives one session with
// each kind of principal — an operator key, an admin key, the runner (a
// service), and a session's own credential relayed by the gateway — and
// reads the lines each call wrote: every one ends naming who made the
// call, after the line as the spec words it, and none contains a key, the
// internal token or a credential's token.
func TestTimelineLinesNameThePrincipalNeverTheSecret(t *testing.T) {
	t.Parallel()
	addr := setup(t, "").svc.Addr()
	b := credBundle{
		operator: lifecyclev1.NewLifecycleServiceClient(servicetest.DialOperator(t, addr)),
		admin:    lifecyclev1.NewLifecycleServiceClient(servicetest.DialAdmin(t, addr)),
		gw:       asGateway{client: lifecyclev1.NewLifecycleServiceClient(servicetest.DialAsService(t, addr, "gateway"))},
	}
	runner := lifecyclev1.NewLifecycleServiceClient(servicetest.DialAsService(t, addr, "runner"))
	ctx := context.Background()
	operator := "(by operator key …" + servicetest.OperatorKey[len(servicetest.OperatorKey)-4:] + ")"
	admin := "(by admin key …" + servicetest.AdminKey[len(servicetest.AdminKey)-4:] + ")"

	s := create(t, b.operator)
	id := fmt.Sprint(s.GetId())
	_, err := b.operator.UpdateSession(ctx, &lifecyclev1.UpdateSessionRequest{SessionId: id, Notes: ptr("tried X")})
	require.NoError(t, err)
	_, err = b.admin.TransitionSession(ctx, &lifecyclev1.TransitionSessionRequest{SessionId: id, Event: "start"})
	require.NoError(t, err)
	_, err = runner.TransitionSession(ctx, &lifecyclev1.TransitionSessionRequest{SessionId: id, Event: "fail", FailureReason: "clone vanished"})
	require.NoError(t, err)
	_, err = b.operator.ArchiveSession(surface.Outgoing(ctx, surface.REST), &lifecyclev1.ArchiveSessionRequest{SessionId: id})
	require.NoError(t, err)
	_, err = b.operator.ArchiveSession(surface.Outgoing(ctx, surface.REST), &lifecyclev1.ArchiveSessionRequest{SessionId: id})
	require.Error(t, err, "archived already: refused, and the refusal is a line")

	var got []string
	for _, l := range timeline(t, b, s.GetId()) {
		got = append(got, l.GetMessage())
	}
	require.Equal(t, []string{
		"[Session] updated notes " + operator,
		"[State Machine] waiting → running (start) " + admin,
		"[State Machine] running → failed (fail) (by the runner)",
		"[State Machine] failure reason: clone vanished (by the runner)",
		"[State Machine] Session moved to trash by a caller of the REST API " + operator,
		"[State Machine] refused: cannot archive session " + id + ": it is archived, and archive is only possible from waiting or running or needs_input or failed " + operator,
	}, got)

	// A session archiving itself through the gateway, with its credential.
	own := create(t, b.operator)
	token := mint(t, b, own.GetId()).GetToken()
	self := surface.Outgoing(b.gw.session(t, token), surface.MCPSelf)
	_, err = b.gw.client.ArchiveSession(self, &lifecyclev1.ArchiveSessionRequest{SessionId: fmt.Sprint(own.GetId()), ActingSessionId: ptr(own.GetId())})
	require.NoError(t, err)
	var archive string
	for _, l := range timeline(t, b, own.GetId()) {
		got = append(got, l.GetMessage())
		if strings.Contains(l.GetMessage(), "moved to trash") {
			archive = l.GetMessage()
		}
	}
	require.Equal(t, fmt.Sprintf("[State Machine] Session moved to trash by session #%d via the self-session MCP server (by session #%d's credential)", own.GetId(), own.GetId()), archive)

	for _, line := range got {
		for _, secret := range []string{servicetest.OperatorKey, servicetest.AdminKey, servicetest.InternalToken, token} {
			require.NotContains(t, line, secret)
		}
	}
}

// byAdmin is lines as the calls of the tests' admin key write them: each
// ending naming the key (issue 10's audit), after the spec's words.
func byAdmin(lines ...string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l + " (by admin key …" + servicetest.AdminKey[len(servicetest.AdminKey)-4:] + ")"
	}
	return out
}
