package grpcapi

import (
	"context"
	"errors"
	"fmt"

	"github.com/zimmerhq/zimmer/services/platform/principal"
)

// forbiddenError is a call whose principal may not make it, although the
// method's access class let it in; toStatus maps it to PermissionDenied.
type forbiddenError struct{ msg string }

func (e *forbiddenError) Error() string { return e.msg }

func forbidden(format string, args ...any) error {
	return &forbiddenError{msg: fmt.Sprintf(format, args...)}
}

func isForbidden(err error) bool {
	var f *forbiddenError
	return errors.As(err, &f)
}

// serviceItself refuses method unless a Zimmer service makes the call for
// itself. The roster decides who counts as a human, so it is reached only
// through the gateway's supervisor (HTTP Basic), which calls as the gateway:
// a service relaying one of its clients (the gateway forwarding an
// operator key or a session credential) is refused here even though the
// method's internal class let the relaying service in.
func serviceItself(ctx context.Context, method string) error {
	p, ok := principal.FromContext(ctx)
	switch {
	case !ok:
		return forbidden("%s: the call carries no authenticated principal", method)
	case p.Kind != principal.Service:
		return forbidden("%s is the roster's, reached only through the operator's supervisor (HTTP Basic); %s may not call it", method, p.Describe())
	}
	return nil
}

// mayRead refuses a session credential asking about another session
// without the sessions.read scope. Keys and services read any session.
func mayRead(ctx context.Context, sessionID int64) error {
	p, ok := principal.FromContext(ctx)
	if !ok || p.MayRead(sessionID) {
		return nil
	}
	return forbidden("%s reads only its own session's provenance (session #%d) without the %q scope; it asked about session #%d",
		p.Describe(), p.SessionID, principal.ScopeSessionsRead, sessionID)
}

// auditBy is who made the call, for the timeline lines it writes: the
// effective principal as principal.Describe says it ("operator key …abcd",
// "session #12's credential", "the runner"), never a secret; empty when
// the call carries none (then the line names no one rather than guess).
func auditBy(ctx context.Context) string {
	if p, ok := principal.FromContext(ctx); ok {
		return p.Describe()
	}
	return ""
}
