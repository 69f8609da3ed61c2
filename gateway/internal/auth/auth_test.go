package auth_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/zimmerhq/zimmer/gateway/internal/auth"
	"github.com/zimmerhq/zimmer/services/platform/apikey"
	"github.com/zimmerhq/zimmer/services/platform/principal"
)

// whoami answers 200 with the principal Require put on the request.
var whoami = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	p, ok := principal.FromContext(r.Context())
	if !ok {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	_, _ = w.Write([]byte(p.Describe()))
})

func serve(h http.Handler, header ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, "/api/v1/sessions", nil)
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

const (
	operatorKey = "operator-key-0123456789abcd"
	adminKey    = "admin-key-0123456789wxyz"
)

func TestRequireResolvesEachCredentialToItsPrincipal(t *testing.T) {
	t.Parallel()
	a := &auth.Authenticator{
		Operators: apikey.Parse("k1," + operatorKey),
		Admins:    apikey.Parse(adminKey),
		Sessions: func(_ context.Context, token string) (principal.Principal, error) {
			if token == "zsc_revoked" {
				return principal.Principal{}, errors.New("session credential revoked: session #3 was archived")
			}
			return principal.Principal{Kind: principal.Session, SessionID: 3, Scopes: []string{principal.ScopeSelf}}, nil
		},
	}
	h := auth.Require(a, whoami)

	w := serve(h)
	require.Equal(t, http.StatusUnauthorized, w.Code)
	require.JSONEq(t, `{"error":"Unauthorized","message":"`+auth.Message+`","messages":["`+auth.Message+`"]}`, w.Body.String())
	require.Equal(t, `Bearer realm="zimmer"`, w.Header().Get("WWW-Authenticate"))
	require.Equal(t, http.StatusUnauthorized, serve(h, "X-API-Key", "k3").Code)

	for _, tc := range []struct {
		header []string
		want   string
	}{
		{[]string{"X-API-Key", "k1"}, "operator key"},
		{[]string{"Authorization", "Bearer " + operatorKey}, "operator key …abcd"},
		{[]string{"X-API-Key", adminKey}, "admin key …wxyz"},
		{[]string{"Authorization", "Bearer zsc_good"}, "session #3's credential"},
	} {
		w := serve(h, tc.header...)
		require.Equal(t, http.StatusOK, w.Code, tc.header)
		require.Equal(t, tc.want, w.Body.String())
	}

	w = serve(h, "X-API-Key", "zsc_revoked")
	require.Equal(t, http.StatusUnauthorized, w.Code)
	require.Contains(t, w.Body.String(), "session #3 was archived", "a refused credential's 401 says why")
}

func TestSessionCredentialsNeedAResolver(t *testing.T) {
	t.Parallel()
	h := auth.Require(&auth.Authenticator{Operators: apikey.Parse("k1")}, whoami)
	w := serve(h, "X-API-Key", "zsc_anything")
	require.Equal(t, http.StatusUnauthorized, w.Code)
	require.Contains(t, w.Body.String(), "session credentials are not accepted")
}

func TestRequireWithoutKeysLetsEverythingThroughAsAdmin(t *testing.T) {
	t.Parallel()

	// Development only: the server logs a warning at start.
	h := auth.Require(&auth.Authenticator{}, whoami)
	require.Equal(t, "admin key", serve(h).Body.String())
	require.Equal(t, "admin key", serve(h, "X-API-Key", "anything").Body.String())
}

// A call made with a request's context forwards the request's principal,
// once; a call without one (health, the supervisor) is the gateway's own.
func TestForwardPrincipal(t *testing.T) {
	t.Parallel()
	var sent metadata.MD
	invoker := func(ctx context.Context, _ string, _, _ any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
		sent, _ = metadata.FromOutgoingContext(ctx)
		return nil
	}
	p := principal.Principal{Kind: principal.Operator, KeyHint: "abcd"}
	ctx := principal.NewContext(context.Background(), p)
	require.NoError(t, auth.ForwardPrincipal(ctx, "/m", nil, nil, nil, invoker))
	got, ok, err := principal.Forwarded(metadata.NewIncomingContext(context.Background(), sent))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, p, got)

	// Already forwarded: not twice.
	ctx, err = principal.Outgoing(ctx, p)
	require.NoError(t, err)
	require.NoError(t, auth.ForwardPrincipal(ctx, "/m", nil, nil, nil, invoker))
	require.Len(t, sent.Get(principal.MetadataKey), 1)

	require.NoError(t, auth.ForwardPrincipal(context.Background(), "/m", nil, nil, nil, invoker))
	require.Empty(t, sent.Get(principal.MetadataKey))
}
