// Package auth authenticates the gateway's REST and MCP callers and
// forwards who they are to the services, which authorize every call by its
// method's access class (services/platform/grpcserver; docs/security.md).
package auth

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/zimmerhq/zimmer/gateway/internal/jsonhttp"
	"github.com/zimmerhq/zimmer/services/platform/apikey"
	"github.com/zimmerhq/zimmer/services/platform/grpcserver"
	"github.com/zimmerhq/zimmer/services/platform/principal"
)

// Message is the 401 text when no credential, or an unknown one, is
// presented.
const Message = "missing or invalid API key: send an operator key (ZIMMER_API_KEYS), an admin key (ZIMMER_ADMIN_API_KEYS) " +
	"or a session credential as X-API-Key or Authorization: Bearer"

// SessionResolver resolves a presented session credential (a token
// starting with grpcserver.SessionTokenPrefix) to its principal, or an
// error saying why it is refused (unknown; revoked, and why), which the
// caller sees as a 401. Lifecycle owns the credentials; the gateway asks
// it (AuthenticateSessionCredential).
type SessionResolver func(ctx context.Context, token string) (principal.Principal, error)

// Authenticator resolves a request's credential to a principal.
type Authenticator struct {
	// Operators are ZIMMER_API_KEYS, Admins ZIMMER_ADMIN_API_KEYS. An admin
	// key that is also an operator key is an admin.
	Operators apikey.Set
	Admins    apikey.Set
	// Sessions resolves session credentials; nil refuses them.
	Sessions SessionResolver
	// Logger logs session credentials that could not be checked (nil: not
	// logged).
	Logger *slog.Logger
}

// Open reports whether no key is configured: the gateway then lets every
// request through as an admin (development only; the server warns at
// start).
func (a *Authenticator) Open() bool { return !a.Operators.Enabled() && !a.Admins.Enabled() }

// Authenticate returns the principal a presented token stands for. This is
// the one place a credential becomes a principal; REST and MCP both go
// through it.
func (a *Authenticator) Authenticate(ctx context.Context, token string) (principal.Principal, error) {
	switch {
	case a.Open():
		return principal.Principal{Kind: principal.Admin}, nil
	case token == "":
		return principal.Principal{}, errors.New(Message)
	case strings.HasPrefix(token, grpcserver.SessionTokenPrefix):
		if a.Sessions == nil {
			return principal.Principal{}, errors.New("session credentials are not accepted by this gateway")
		}
		return a.Sessions(ctx, token)
	case a.Admins.Valid(token):
		return principal.Principal{Kind: principal.Admin, KeyHint: principal.KeyHint(token)}, nil
	case a.Operators.Valid(token):
		return principal.Principal{Kind: principal.Operator, KeyHint: principal.KeyHint(token)}, nil
	}
	return principal.Principal{}, errors.New(Message)
}

// Require lets a request through to next only when its credential (X-API-Key
// or "Authorization: Bearer") authenticates; next finds the principal with
// principal.FromContext, and every gRPC call made with the request's
// context forwards it (ForwardPrincipal).
func Require(a *Authenticator, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := a.Authenticate(r.Context(), apikey.FromRequest(r))
		var unchecked *ResolveError
		if errors.As(err, &unchecked) {
			a.unchecked(w, r, unchecked)
			return
		}
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="zimmer"`)
			jsonhttp.WriteError(w, http.StatusUnauthorized, err.Error())
			return
		}
		next.ServeHTTP(w, r.WithContext(principal.NewContext(r.Context(), p)))
	})
}

// unchecked answers a request whose session credential could not be
// checked: retry shortly when lifecycle is unavailable, an internal error
// (logged) otherwise.
func (a *Authenticator) unchecked(w http.ResponseWriter, r *http.Request, err *ResolveError) {
	switch status.Code(err.Err) {
	case codes.Unavailable, codes.DeadlineExceeded:
		jsonhttp.WriteError(w, http.StatusServiceUnavailable, "the session credential could not be checked: the lifecycle service is unavailable; retry shortly")
		return
	case codes.Canceled:
		jsonhttp.WriteError(w, http.StatusServiceUnavailable, "request canceled")
		return
	}
	if a.Logger != nil {
		a.Logger.ErrorContext(r.Context(), "lifecycle refused to check a session credential for the gateway; "+
			"give the gateway the services' ZIMMER_INTERNAL_TOKEN", "error", err)
	}
	jsonhttp.WriteError(w, http.StatusInternalServerError, "internal error")
}

// ForwardPrincipal is the gateway's client interceptor: a call whose context
// carries a principal (Require put it there) forwards it, so the service
// authorizes the gateway's client rather than the gateway. A call without
// one (health, the supervisor) is the gateway's own.
func ForwardPrincipal(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if p, ok := principal.FromContext(ctx); ok {
		if md, _ := metadata.FromOutgoingContext(ctx); len(md.Get(principal.MetadataKey)) == 0 {
			var err error
			if ctx, err = principal.Outgoing(ctx, p); err != nil {
				return err
			}
		}
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}
