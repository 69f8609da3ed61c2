package auth_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/zimmerhq/zimmer/gateway/internal/auth"
	"github.com/zimmerhq/zimmer/gateway/internal/grpctest"
	"github.com/zimmerhq/zimmer/gateway/internal/lifecyclefake"
	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/apikey"
)

// refusedCredential is lifecycle's refusal of a credential, marked as it
// marks it.
func refusedCredential(t *testing.T, msg string) error {
	t.Helper()
	st, err := status.New(codes.Unauthenticated, msg).WithDetails(&errdetails.ErrorInfo{Reason: rules.CredentialRefusedReason, Domain: "lifecycle.zimmer"})
	require.NoError(t, err)
	return st.Err()
}

func TestSessionCredentialsResolveThroughLifecycle(t *testing.T) {
	t.Parallel()
	fake := lifecyclefake.New()
	client := lifecyclev1.NewLifecycleServiceClient(grpctest.DialAsService(t, grpctest.Serve(t, fake.Register)))
	var logs bytes.Buffer
	a := &auth.Authenticator{
		Operators: apikey.Parse(operatorKey), Sessions: auth.LifecycleSessions(client),
		Logger: slog.New(slog.NewJSONHandler(&logs, nil)),
	}
	h := auth.Require(a, whoami)
	const token = "zsc_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"

	fake.Answer("AuthenticateSessionCredential", &lifecyclev1.AuthenticateSessionCredentialResponse{Credential: &lifecyclev1.SessionCredential{
		Id: "c1", SessionId: 12, Scopes: []string{"self", "sessions.read"},
	}}, nil)
	for _, header := range [][]string{{"X-API-Key", token}, {"Authorization", "Bearer " + token}} {
		w := serve(h, header...)
		require.Equal(t, http.StatusOK, w.Code, w.Body.String())
		require.Equal(t, "session #12's credential", w.Body.String())
	}
	calls := fake.Calls("AuthenticateSessionCredential")
	require.Len(t, calls, 2, "every request asks lifecycle: nothing is cached past a revocation")
	require.True(t, proto.Equal(&lifecyclev1.AuthenticateSessionCredentialRequest{Token: token}, calls[0].Request))
	require.Equal(t, http.StatusOK, serve(h, "X-API-Key", operatorKey).Code)
	require.Len(t, fake.Calls("AuthenticateSessionCredential"), 2, "keys are checked by the gateway alone")

	// Refused: 401 in lifecycle's words.
	fake.Answer("AuthenticateSessionCredential", nil, refusedCredential(t, "credential revoked: session #12 was archived"))
	w := serve(h, "X-API-Key", token)
	require.Equal(t, http.StatusUnauthorized, w.Code)
	require.JSONEq(t, `{"error":"Unauthorized","message":"credential revoked: session #12 was archived",
		"messages":["credential revoked: session #12 was archived"]}`, w.Body.String())
	require.Equal(t, `Bearer realm="zimmer"`, w.Header().Get("WWW-Authenticate"))

	// Not checked: never a 401 that would tell the agent its credential is
	// bad. Lifecycle refusing the gateway itself is an internal error,
	// logged; lifecycle unavailable is a retry.
	fake.Answer("AuthenticateSessionCredential", nil, status.Error(codes.Unauthenticated, "invalid internal token"))
	w = serve(h, "X-API-Key", token)
	require.Equal(t, http.StatusInternalServerError, w.Code, w.Body.String())
	require.NotContains(t, w.Body.String(), "internal token")
	require.Contains(t, logs.String(), "ZIMMER_INTERNAL_TOKEN")
	fake.Answer("AuthenticateSessionCredential", nil, status.Error(codes.Unavailable, "down"))
	w = serve(h, "X-API-Key", token)
	require.Equal(t, http.StatusServiceUnavailable, w.Code)
	require.Contains(t, w.Body.String(), "the lifecycle service is unavailable; retry shortly")
}
