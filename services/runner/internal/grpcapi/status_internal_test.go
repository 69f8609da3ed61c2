package grpcapi

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zimmerhq/zimmer/services/platform/validation"
	"github.com/zimmerhq/zimmer/services/runner/internal/workspace"
)

// toStatus is the one mapping: a handler's refusal keeps its code and
// words, the shared errors map as everywhere, and anything else reaches the
// caller as "internal error" while its Error (which the interceptor logs)
// is the real one.
func TestToStatusSendsNoInternalsToTheCaller(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		err  error
		code codes.Code
		msg  string
	}{
		{"a refusal", refuse(codes.PermissionDenied, "not yours"), codes.PermissionDenied, "not yours"},
		{"a wrapped refusal", fmt.Errorf("op: %w", refuse(codes.Unavailable, "Temporal is away")), codes.Unavailable, "Temporal is away"},
		{"a validation error", validation.Invalid("session_id", "must be positive"), codes.InvalidArgument, ""},
		{"a cancelled call", fmt.Errorf("read: %w", context.Canceled), codes.Canceled, "request canceled"},
		{"no clone", fmt.Errorf("read the clone of session 7: %w", workspace.ErrNotFound), codes.NotFound, ""},
		{"anything else", errors.New("pq: password authentication failed"), codes.Internal, "internal error"},
	} {
		err := toStatus(c.err)
		st, ok := status.FromError(err)
		require.True(t, ok, c.name)
		require.Equal(t, c.code, st.Code(), c.name)
		if c.msg != "" {
			require.Equal(t, c.msg, st.Message(), c.name)
		}
	}
	require.Contains(t, toStatus(errors.New("pq: password authentication failed")).Error(), "pq: password",
		"the interceptor logs the real error")
}
