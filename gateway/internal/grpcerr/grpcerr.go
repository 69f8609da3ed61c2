// Package grpcerr turns a service's gRPC error into what the gateway tells a
// caller: an HTTP status and a message saying what was wrong and what to do.
// REST and MCP share it so both surfaces report a failure the same way.
package grpcerr

import (
	"fmt"
	"net/http"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Problem is a failure as a caller sees it.
type Problem struct {
	// Code is the service's gRPC code (Unknown for a non-gRPC error).
	Code codes.Code
	// HTTPStatus is the REST status for Code.
	HTTPStatus int
	// Message is safe to show: the service's own words for the codes a
	// caller can act on, a fixed text for the rest.
	Message string
}

// Internal reports whether the failure is the system's, not the caller's:
// the gateway logs those with the original error.
func (p Problem) Internal() bool { return p.HTTPStatus >= 500 }

// From describes err, returned by a call to service ("lifecycle", ...).
func From(service string, err error) Problem {
	st := status.Convert(err)
	msg := st.Message()
	p := Problem{Code: st.Code()}
	switch st.Code() {
	case codes.InvalidArgument, codes.OutOfRange:
		p.HTTPStatus, p.Message = http.StatusBadRequest, withFields(msg, st)
	case codes.Unauthenticated:
		p.HTTPStatus, p.Message = http.StatusUnauthorized, msg
	case codes.PermissionDenied:
		p.HTTPStatus, p.Message = http.StatusForbidden, msg
	case codes.NotFound:
		p.HTTPStatus, p.Message = http.StatusNotFound, msg
	case codes.AlreadyExists:
		p.HTTPStatus, p.Message = http.StatusConflict, msg
	case codes.Aborted:
		p.HTTPStatus, p.Message = http.StatusConflict, orDefault(msg, "a concurrent change conflicted with this one; retry")
	case codes.FailedPrecondition:
		p.HTTPStatus, p.Message = http.StatusUnprocessableEntity, msg
	case codes.ResourceExhausted:
		p.HTTPStatus, p.Message = http.StatusTooManyRequests, orDefault(msg, "too many requests; retry later")
	case codes.Canceled:
		p.HTTPStatus, p.Message = 499, "request canceled"
	case codes.Unavailable:
		p.HTTPStatus, p.Message = http.StatusServiceUnavailable, fmt.Sprintf("the %s service is unavailable; retry shortly", service)
	case codes.DeadlineExceeded:
		p.HTTPStatus, p.Message = http.StatusGatewayTimeout, fmt.Sprintf("the %s service did not answer in time; retry shortly", service)
	case codes.Unimplemented:
		p.HTTPStatus, p.Message = http.StatusNotImplemented, fmt.Sprintf("the %s service does not implement this call yet", service)
	default: // Internal, Unknown, DataLoss: the text may carry details a caller must not see.
		p.HTTPStatus, p.Message = http.StatusInternalServerError, "internal error"
	}
	if p.Message == "" {
		p.Message = strings.ToLower(http.StatusText(p.HTTPStatus))
	}
	return p
}

// withFields keeps the service's message when it already names every field
// its errdetails.BadRequest lists (lifecycle's does: "prompt: is required
// ..."), and otherwise spells the violations out so the caller knows which
// fields to fix.
func withFields(msg string, st *status.Status) string {
	var violations []*errdetails.BadRequest_FieldViolation
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			violations = append(violations, br.GetFieldViolations()...)
		}
	}
	missing := false
	for _, v := range violations {
		if !strings.Contains(msg, v.GetField()) {
			missing = true
		}
	}
	if !missing {
		return msg
	}
	parts := make([]string, len(violations))
	for i, v := range violations {
		parts[i] = v.GetField() + ": " + v.GetDescription()
	}
	if msg == "" {
		return strings.Join(parts, "; ")
	}
	return msg + " (" + strings.Join(parts, "; ") + ")"
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
