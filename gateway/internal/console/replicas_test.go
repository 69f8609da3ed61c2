package console_test

import (
	"context"
	"net/http"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zimmerhq/zimmer/gateway/internal/lineagefake"
	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
)

// Two gateway replicas behind a plain load balancer: a browser signed in
// on one is signed in on the other, its CSRF token and flash hold there,
// and signing out on either signs it out on both. (The browser's jar
// sends the cookie to both: cookies ignore the port.)
func TestASignInIsEveryReplicas(t *testing.T) {
	t.Parallel()
	f, signIns := newFakes(), lineagefake.NewSignIns()
	one, two := serve(t, f, signIns.Client()), serve(t, f, signIns.Client())
	c := one.signedIn(t)

	require.Equal(t, http.StatusOK, two.get(t, c, "/console/").code, "signed in on the other replica")
	token := one.csrf(t, c, "/console/sessions/7")
	a := two.post(t, c, "/console/sessions/7/follow-up", url.Values{"csrf": {token}, "prompt": {"go"}})
	require.Equal(t, http.StatusSeeOther, a.code, "replica one's CSRF token holds on two: %s", a.body)
	flash := findCookie(t, a.header, "zimmer_console_flash")
	require.True(t, flash.HttpOnly)
	require.Equal(t, http.SameSiteStrictMode, flash.SameSite)
	require.Equal(t, "/console/", flash.Path)
	require.Positive(t, flash.MaxAge)
	a = one.get(t, c, "/console/sessions/7")
	require.Contains(t, a.body, "Delivered as the next turn.", "two's flash, shown by one")
	require.Negative(t, findCookie(t, a.header, "zimmer_console_flash").MaxAge, "cleared when shown")
	require.NotContains(t, two.get(t, c, "/console/sessions/7").body, "Delivered as the next turn.", "shown once")

	logout := url.Values{"csrf": {two.csrf(t, c, "/console/")}}
	copied := c.Jar.Cookies(mustURL(t, one.srv.URL+"/console/"))
	require.Equal(t, http.StatusSeeOther, two.post(t, c, "/console/logout", logout).code)
	require.Equal(t, 0, signIns.Len())

	// A copy of the cookie taken before the sign-out opens neither replica.
	thief := one.browser(t)
	thief.Jar.SetCookies(mustURL(t, one.srv.URL+"/console/"), copied)
	for _, replica := range []testBundle{one, two} {
		a := replica.get(t, thief, "/console/")
		require.Equal(t, http.StatusSeeOther, a.code)
		require.Equal(t, "/console/login", a.header.Get("Location"))
		require.Equal(t, http.StatusUnauthorized, replica.post(t, thief, "/console/sessions/7/follow-up", url.Values{"csrf": {token}, "prompt": {"go"}}).code)
	}
}

// When lineage cannot answer, the console says so: it neither signs the
// browser out nor lets it in, and a sign-out it could not record is not
// pretended.
func TestSignInsUnreachableIsNotASignOut(t *testing.T) {
	t.Parallel()
	signIns := &flakySignIns{ConsoleSignInServiceClient: lineagefake.NewSignIns().Client()}
	b := serve(t, newFakes(), signIns)
	c := b.signedIn(t)
	logout := url.Values{"csrf": {b.csrf(t, c, "/console/")}}

	signIns.getDown.Store(true)
	a := b.get(t, c, "/console/")
	require.Equal(t, http.StatusServiceUnavailable, a.code, a.body)
	require.Contains(t, a.body, "lineage")
	signIns.getDown.Store(false)
	signIns.endDown.Store(true)
	a = b.post(t, c, "/console/logout", logout)
	require.Equal(t, http.StatusServiceUnavailable, a.code, a.body)
	require.Empty(t, a.header.Values("Set-Cookie"), "the cookie is kept: the sign-in was not ended")

	signIns.endDown.Store(false)
	require.Equal(t, http.StatusOK, b.get(t, c, "/console/").code, "still signed in: the sign-out was not done")
	require.Equal(t, http.StatusSeeOther, b.post(t, c, "/console/logout", logout).code)
	require.Equal(t, http.StatusSeeOther, b.get(t, c, "/console/").code)
}

// flakySignIns answers Unavailable while down.
type flakySignIns struct {
	lineagev1.ConsoleSignInServiceClient
	getDown, endDown atomic.Bool
}

func (f *flakySignIns) GetConsoleSignIn(ctx context.Context, in *lineagev1.GetConsoleSignInRequest, opts ...grpc.CallOption) (*lineagev1.GetConsoleSignInResponse, error) {
	if f.getDown.Load() {
		return nil, status.Error(codes.Unavailable, "connection refused")
	}
	return f.ConsoleSignInServiceClient.GetConsoleSignIn(ctx, in, opts...)
}

func (f *flakySignIns) EndConsoleSignIn(ctx context.Context, in *lineagev1.EndConsoleSignInRequest, opts ...grpc.CallOption) (*lineagev1.EndConsoleSignInResponse, error) {
	if f.endDown.Load() {
		return nil, status.Error(codes.Unavailable, "connection refused")
	}
	return f.ConsoleSignInServiceClient.EndConsoleSignIn(ctx, in, opts...)
}

func mustURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	require.NoError(t, err)
	return u
}
