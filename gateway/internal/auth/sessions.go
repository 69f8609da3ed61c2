package auth

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/principal"
)

// LifecycleSessions resolves session credentials with lifecycle, which
// owns them: one AuthenticateSessionCredential per request, made as the
// gateway itself (the request has no principal yet). Nothing is cached, so
// a revoked credential is refused from the next request on.
func LifecycleSessions(lifecycle lifecyclev1.LifecycleServiceClient) SessionResolver {
	return func(ctx context.Context, token string) (principal.Principal, error) {
		resp, err := lifecycle.AuthenticateSessionCredential(ctx, &lifecyclev1.AuthenticateSessionCredentialRequest{Token: token})
		if err != nil {
			if CredentialRefused(err) {
				// Lifecycle's words: unknown, or revoked and why.
				return principal.Principal{}, errors.New(status.Convert(err).Message())
			}
			return principal.Principal{}, &ResolveError{Err: err}
		}
		c := resp.GetCredential()
		return principal.Principal{Kind: principal.Session, SessionID: c.GetSessionId(), CredentialID: c.GetId(), Scopes: c.GetScopes()}, nil
	}
}

// CredentialRefused reports whether err is lifecycle refusing a session
// credential, which it marks (rules.CredentialRefusedReason): an
// Unauthenticated without the mark is the gateway's own call refused, e.g.
// a wrong internal token.
func CredentialRefused(err error) bool {
	st := status.Convert(err)
	if st.Code() != codes.Unauthenticated {
		return false
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetReason() == rules.CredentialRefusedReason {
			return true
		}
	}
	return false
}

// ResolveError is a session credential that could not be checked, as
// opposed to one that was refused: lifecycle did not answer, or refused
// the gateway itself. Require answers it as the gateway's failure (503
// when lifecycle is unavailable, 500 otherwise), never as a 401 that would
// tell an agent its credential is bad.
type ResolveError struct{ Err error }

func (e *ResolveError) Error() string {
	return fmt.Sprintf("check a session credential with lifecycle: %v", e.Err)
}

func (e *ResolveError) Unwrap() error { return e.Err }
