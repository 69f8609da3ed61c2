package grpcapi

import (
	"context"
	"errors"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zimmerhq/zimmer/services/lineage/internal/domain"
)

// toStatus is the one mapping from errors to gRPC codes. Only errors meant
// for the caller keep their text; anything else is logged here and reported
// as "internal error", so no query or driver detail leaks.
func (s *Server) toStatus(ctx context.Context, err error) error {
	var invalid *domain.ValidationError
	switch {
	case errors.Is(err, domain.ErrNotFound):
		return status.Error(codes.NotFound, err.Error())
	case errors.As(err, &invalid):
		st := status.New(codes.InvalidArgument, invalid.Error())
		if detailed, derr := st.WithDetails(&errdetails.BadRequest{
			FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: invalid.Field, Description: invalid.Reason}},
		}); derr == nil {
			st = detailed
		}
		return st.Err()
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, "request canceled")
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, "deadline exceeded")
	}
	s.logger.ErrorContext(ctx, "request failed", "error", err.Error())
	return status.Error(codes.Internal, "internal error")
}
