// Package grpcstatus maps the platform's shared errors to gRPC statuses, so
// every service answers them alike.
package grpcstatus

import (
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// InvalidArgument is the status for a request that failed validation: code
// InvalidArgument, the error's text as message and an errdetails.BadRequest
// listing every violation (the gateway names the fields from it).
func InvalidArgument(err *validation.Error) error {
	return BadRequest(err.Error(), err.Violations...)
}

// BadRequest is InvalidArgument with a message of the caller's choosing, for
// a service whose validation error is worded differently. The details are
// left off only if they cannot be encoded; the code and message stay.
func BadRequest(msg string, violations ...validation.FieldViolation) error {
	st := status.New(codes.InvalidArgument, msg)
	br := &errdetails.BadRequest{}
	for _, v := range violations {
		br.FieldViolations = append(br.FieldViolations, &errdetails.BadRequest_FieldViolation{Field: v.Field, Description: v.Reason})
	}
	if withDetails, derr := st.WithDetails(br); derr == nil {
		st = withDetails
	}
	return st.Err()
}
