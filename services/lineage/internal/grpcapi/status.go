package grpcapi

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zimmerhq/zimmer/services/lineage/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/grpcstatus"
)

// toStatus is the one mapping from errors to gRPC codes: the errors every
// service shares (validation, the context's) as grpcstatus maps them, then
// lineage's own. Only errors meant for the caller keep their text; anything
// else is logged here and reported as "internal error", so no query or
// driver detail leaks.
func (s *Server) toStatus(ctx context.Context, err error) error {
	if st, ok := grpcstatus.Common(err); ok {
		return st
	}
	if errors.Is(err, domain.ErrNotFound) {
		return status.Error(codes.NotFound, err.Error())
	}
	s.logger.ErrorContext(ctx, "request failed", "error", err.Error())
	return status.Error(codes.Internal, "internal error")
}
