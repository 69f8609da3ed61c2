// Package grpcstatus maps the platform's shared errors to gRPC statuses, so
// every service answers them alike. A service's toStatus asks Common first,
// then maps its own domain errors, and logs anything left as Internal.
package grpcstatus

import (
	"context"
	"errors"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zimmerhq/zimmer/services/platform/pgdb"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// Common maps the errors every service shares: a *validation.Error anywhere
// in err's chain to InvalidArgument, the context's cancellation and
// deadline to Canceled and DeadlineExceeded, a database that cannot be
// reached to Unavailable (retryable: REST 503, "retry shortly"), and a
// refusal another service answered this one's call with (Refusal). ok is
// false for any other error, which is the service's to map.
func Common(err error) (st error, ok bool) {
	var verr *validation.Error
	if st, ok := Refusal(err); ok {
		return st, true
	}
	switch {
	case errors.As(err, &verr):
		return InvalidArgument(verr), true
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, "request canceled"), true
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, "deadline exceeded"), true
	case pgdb.Unavailable(err):
		return status.Error(codes.Unavailable, "the database is unavailable; retry shortly"), true
	}
	return nil, false
}

// passedOn are the codes of a callee's refusal that its caller answers
// with in turn: the request (InvalidArgument), the state of what it names
// (FailedPrecondition) or its absence (NotFound) is the reason, which the
// caller's own caller can act on, so it is never the caller's Internal.
var passedOn = map[codes.Code]bool{codes.InvalidArgument: true, codes.FailedPrecondition: true, codes.NotFound: true}

// Refusal is the status a service answers with when err carries another
// service's refusal of its call (a gRPC status error anywhere in err's
// chain, with a code of passedOn): the same code, the callee's own message
// and details (a BadRequest's field violations among them), without the
// caller's wrapping, which names its internals. ok is false for anything
// else, a callee's Unavailable or Internal among them: those are the
// caller's to judge.
func Refusal(err error) (st error, ok bool) {
	var callee interface{ GRPCStatus() *status.Status }
	if !errors.As(err, &callee) {
		return nil, false
	}
	s := callee.GRPCStatus()
	if s == nil || !passedOn[s.Code()] {
		return nil, false
	}
	return status.ErrorProto(s.Proto()), true
}

// InvalidArgument is the status for a request that failed validation: code
// InvalidArgument, the error's text as message and an errdetails.BadRequest
// listing every violation (the gateway names the fields from it). The
// details are left off only if they cannot be encoded; the code and message
// stay.
func InvalidArgument(err *validation.Error) error {
	st := status.New(codes.InvalidArgument, err.Error())
	br := &errdetails.BadRequest{}
	for _, v := range err.Violations {
		br.FieldViolations = append(br.FieldViolations, &errdetails.BadRequest_FieldViolation{Field: v.Field, Description: v.Reason})
	}
	if withDetails, derr := st.WithDetails(br); derr == nil {
		st = withDetails
	}
	return st.Err()
}
