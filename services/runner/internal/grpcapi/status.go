package grpcapi

import (
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zimmerhq/zimmer/services/platform/grpcstatus"
	"github.com/zimmerhq/zimmer/services/runner/internal/workspace"
)

// toStatus is the runner API's one mapping of errors to gRPC statuses, as
// every service's grpcapi has: a refusal a handler decided (refuse) keeps
// its code and words; the platform's shared errors map alike everywhere
// (grpcstatus.Common); a clone the runner never made is NotFound; anything
// else is Internal, answered as "internal error" — the caller is never sent
// the runner's internals, which the gRPC interceptor logs in full (an
// internalError's Error is the real error).
func toStatus(err error) error {
	var r *refusal
	if errors.As(err, &r) {
		return status.Error(r.code, r.message)
	}
	if st, ok := grpcstatus.Common(err); ok {
		return st
	}
	if errors.Is(err, workspace.ErrNotFound) {
		return status.Error(codes.NotFound, err.Error())
	}
	return &internalError{err: err}
}

// refusal is an answer a handler decided itself: the code, and the words
// the caller is told.
type refusal struct {
	code    codes.Code
	message string
}

func (r *refusal) Error() string { return r.message }

// refuse is a refusal with code, its message formatted as fmt.Sprintf.
func refuse(code codes.Code, format string, args ...any) error {
	return &refusal{code: code, message: fmt.Sprintf(format, args...)}
}

// internalError answers Internal "internal error" on the wire
// (GRPCStatus), and is the real error to the interceptor that logs the
// call (Error).
type internalError struct{ err error }

func (e *internalError) Error() string { return e.err.Error() }

func (e *internalError) Unwrap() error { return e.err }

// GRPCStatus is what gRPC sends the caller.
func (e *internalError) GRPCStatus() *status.Status {
	return status.New(codes.Internal, "internal error")
}
