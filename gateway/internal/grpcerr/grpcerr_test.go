package grpcerr_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zimmerhq/zimmer/gateway/internal/grpcerr"
)

func TestFrom(t *testing.T) {
	t.Parallel()

	tests := []struct {
		err        error
		wantStatus int
		wantMsg    string
	}{
		{status.Error(codes.InvalidArgument, "prompt: is required"), http.StatusUnprocessableEntity, "prompt: is required"},
		{status.Error(codes.Unauthenticated, "missing key"), http.StatusUnauthorized, "missing key"},
		{status.Error(codes.NotFound, "session #9 not found"), http.StatusNotFound, "session #9 not found"},
		{status.Error(codes.AlreadyExists, "slug taken"), http.StatusConflict, "slug taken"},
		{status.Error(codes.Aborted, ""), http.StatusConflict, "a concurrent change conflicted with this one; retry"},
		{status.Error(codes.FailedPrecondition, "archived; unarchive first"), http.StatusUnprocessableEntity, "archived; unarchive first"},
		{status.Error(codes.Unavailable, "dial tcp 10.0.0.1:9101: connection refused"), http.StatusServiceUnavailable, "the lifecycle service is unavailable; retry shortly"},
		{status.Error(codes.DeadlineExceeded, "deadline"), http.StatusGatewayTimeout, "the lifecycle service did not answer in time; retry shortly"},
		{status.Error(codes.Internal, "pq: relation does not exist"), http.StatusInternalServerError, "internal error"},
		{status.Error(codes.Unknown, "boom"), http.StatusInternalServerError, "internal error"},
		{status.Error(codes.DataLoss, "boom"), http.StatusInternalServerError, "internal error"},
		{errors.New("not a status"), http.StatusInternalServerError, "internal error"},
		{status.Error(codes.Canceled, "context canceled"), 499, "request canceled"},
		{status.Error(codes.PermissionDenied, "not yours"), http.StatusForbidden, "not yours"},
		{status.Error(codes.OutOfRange, "page 9 of 2"), http.StatusUnprocessableEntity, "page 9 of 2"},
		{status.Error(codes.ResourceExhausted, ""), http.StatusTooManyRequests,
			"the lifecycle service could not handle a request or an answer this large, or is overloaded; ask for less (e.g. a smaller per_page) or retry later"},
		{status.Error(codes.Unimplemented, "unknown method"), http.StatusNotImplemented, "the lifecycle service does not implement this call yet"},
		{status.Error(codes.NotFound, ""), http.StatusNotFound, "not found"},
	}
	for _, tt := range tests {
		p := grpcerr.From("lifecycle", tt.err)
		require.Equal(t, tt.wantStatus, p.HTTPStatus, tt.err.Error())
		require.Equal(t, tt.wantMsg, p.Message, tt.err.Error())
		require.Equal(t, tt.wantStatus >= 500, p.Internal())
	}
}

func TestFromNamesBadRequestFields(t *testing.T) {
	t.Parallel()

	withViolations := func(msg string, fields ...string) error {
		br := &errdetails.BadRequest{}
		for _, f := range fields {
			br.FieldViolations = append(br.FieldViolations, &errdetails.BadRequest_FieldViolation{Field: f, Description: "is required"})
		}
		st, err := status.New(codes.InvalidArgument, msg).WithDetails(br)
		require.NoError(t, err)
		return st.Err()
	}

	// The service's message already names its fields: kept as is.
	p := grpcerr.From("lifecycle", withViolations("prompt: is required; git_root: is required", "prompt", "git_root"))
	require.Equal(t, "prompt: is required; git_root: is required", p.Message)

	// A message that does not: the violations are spelled out.
	p = grpcerr.From("lifecycle", withViolations("invalid request", "prompt"))
	require.Equal(t, "invalid request (prompt: is required)", p.Message)
	p = grpcerr.From("lifecycle", withViolations("", "prompt", "git_root"))
	require.Equal(t, "prompt: is required; git_root: is required", p.Message)
}
