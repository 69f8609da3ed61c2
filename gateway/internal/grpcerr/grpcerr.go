// Package grpcerr turns a service's gRPC error into what the gateway tells a
// caller: an HTTP status and a message saying what was wrong and what to do.
// REST and MCP share it so both surfaces report a failure the same way. The
// gateway's departures from grpc-gateway's mapping are written here once:
// overrides (status codes) and messages (wording).
package grpcerr

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
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

// From describes err, returned by a call to service ("lifecycle", ...). The
// status is grpc-gateway's mapping (runtime.HTTPStatusFromCode) but for
// FailedPrecondition, which the gateway answers 422 (see overrides); the
// message is the service's own words, except where messages says
// otherwise.
func From(service string, err error) Problem {
	st := status.Convert(err)
	p := Problem{Code: st.Code(), HTTPStatus: runtime.HTTPStatusFromCode(st.Code())}
	if override, ok := overrides[p.Code]; ok {
		p.HTTPStatus = override
	}
	if p.HTTPStatus >= http.StatusInternalServerError && messages[p.Code] == nil {
		// Internal, Unknown, DataLoss: the text may carry details a caller
		// must not see.
		p.Message = "internal error"
		return p
	}
	p.Message = st.Message()
	if words := messages[p.Code]; words != nil {
		p.Message = words(service, st)
	}
	if p.Message == "" {
		p.Message = strings.ToLower(http.StatusText(p.HTTPStatus))
	}
	return p
}

// overrides are the gateway's departures from grpc-gateway's status codes.
var overrides = map[codes.Code]int{
	// A request the state refuses (an event from the wrong state) is
	// well-formed: 422, not grpc-gateway's 400, so a client can tell "fix
	// your request" from "the session is not in a state that allows it".
	codes.FailedPrecondition: http.StatusUnprocessableEntity,
}

// messages are the codes whose message the gateway words itself, given
// the service called and its status.
var messages = map[codes.Code]func(service string, st *status.Status) string{
	codes.InvalidArgument: func(_ string, st *status.Status) string { return withFields(st.Message(), st) },
	codes.OutOfRange:      func(_ string, st *status.Status) string { return withFields(st.Message(), st) },
	codes.Aborted: func(_ string, st *status.Status) string {
		return orDefault(st.Message(), "a concurrent change conflicted with this one; retry")
	},
	codes.ResourceExhausted: func(_ string, st *status.Status) string {
		return orDefault(st.Message(), "too many requests; retry later")
	},
	codes.Canceled: func(string, *status.Status) string { return "request canceled" },
	codes.Unavailable: func(service string, _ *status.Status) string {
		return fmt.Sprintf("the %s service is unavailable; retry shortly", service)
	},
	codes.DeadlineExceeded: func(service string, _ *status.Status) string {
		return fmt.Sprintf("the %s service did not answer in time; retry shortly", service)
	},
	codes.Unimplemented: func(service string, _ *status.Status) string {
		return fmt.Sprintf("the %s service does not implement this call yet", service)
	},
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
