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
// deadline to Canceled and DeadlineExceeded, and a database that cannot be
// reached to Unavailable (retryable: REST 503, "retry shortly"). ok is false
// for any other error, which is the service's to map.
func Common(err error) (st error, ok bool) {
	var verr *validation.Error
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
