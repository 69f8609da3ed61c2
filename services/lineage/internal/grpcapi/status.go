package grpcapi

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zimmerhq/zimmer/services/lineage/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/grpcstatus"
	"github.com/zimmerhq/zimmer/services/platform/validation"
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
		// Lineage words its one-field error "invalid f: r"; the status keeps that.
		return grpcstatus.BadRequest(invalid.Error(), validation.FieldViolation{Field: invalid.Field, Reason: invalid.Reason})
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, "request canceled")
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, "deadline exceeded")
	}
	s.logger.ErrorContext(ctx, "request failed", "error", err.Error())
	return status.Error(codes.Internal, "internal error")
}
