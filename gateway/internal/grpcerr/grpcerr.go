// Package grpcerr turns a service's gRPC error into what the gateway tells a
// caller: an HTTP status, the kind of failure, and a message saying what was
// wrong and what to do. REST and MCP share it so both surfaces report a
// failure the same way. The gateway's departures from grpc-gateway's
// mapping are written here once: overrides (status codes), kinds and
// messages (wording). No text gRPC itself wrote ever reaches a caller.
package grpcerr

import (
	"fmt"
	"net/http"
	"strings"
	"unicode"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zimmerhq/zimmer/gateway/internal/jsonhttp"
)

// Problem is a failure as a caller sees it.
type Problem struct {
	// Code is the service's gRPC code (Unknown for a non-gRPC error).
	Code codes.Code
	// HTTPStatus is the REST status for Code.
	HTTPStatus int
	// Kind names the failure: "Validation failed", "Cannot trash", "Not
	// found", ... (the REST body's error).
	Kind string
	// Message is safe to show: the service's own words for the codes a
	// caller can act on, a fixed text for the rest.
	Message string
	// Messages has one entry per problem: each field violation of a
	// validation failure, otherwise Message alone.
	Messages []string
	// Reason is the service's code for a refusal a caller can act on (an
	// errdetails.ErrorInfo's reason, e.g. "wake_at_too_soon"), or "".
	Reason string
}

// Internal reports whether the failure is the system's, not the caller's:
// the gateway logs those with the original error.
func (p Problem) Internal() bool { return p.HTTPStatus >= 500 }

// From describes err, returned by a call to service ("lifecycle", ...). The
// status is grpc-gateway's mapping (runtime.HTTPStatusFromCode) but where
// overrides says otherwise; the message is the service's own words, except
// where messages says otherwise.
func From(service string, err error) Problem {
	return from(service, "", err)
}

// FromCall is From for a call of the gRPC method fullMethod
// ("/zimmer.lifecycle.v1.LifecycleService/ArchiveSession"): the service is
// the method's context, and a refusal names what was refused ("Cannot
// trash").
func FromCall(fullMethod string, err error) Problem {
	service, method := "backend", ""
	if svc, name, ok := strings.Cut(strings.TrimPrefix(fullMethod, "/"), "/"); ok {
		method = name
		if parts := strings.Split(svc, "."); len(parts) >= 3 && parts[0] == "zimmer" {
			service = parts[1]
		}
	}
	return from(service, method, err)
}

func from(service, method string, err error) Problem {
	st := status.Convert(err)
	p := Problem{Code: st.Code(), HTTPStatus: runtime.HTTPStatusFromCode(st.Code())}
	if override, ok := overrides[p.Code]; ok {
		p.HTTPStatus = override
	}
	p.Kind = jsonhttp.Kind(p.HTTPStatus)
	if kind := kinds[p.Code]; kind != nil {
		p.Kind = kind(method)
	}
	switch words := messages[p.Code]; {
	case words != nil:
		p.Message = words(service, st)
	case p.HTTPStatus >= http.StatusInternalServerError:
		// Internal, Unknown, DataLoss: the text may carry details a caller
		// must not see.
		p.Message = "internal error"
	case written(st.Message()):
		p.Message = st.Message()
	}
	if p.Message == "" {
		p.Message = strings.ToLower(http.StatusText(p.HTTPStatus))
	}
	p.Messages = []string{p.Message}
	if vs := violations(st); len(vs) > 0 && (p.Code == codes.InvalidArgument || p.Code == codes.OutOfRange) {
		p.Messages = vs
	}
	if reasoned[p.Code] {
		p.Reason = reason(st)
	}
	return p
}

// reasoned are the codes whose ErrorInfo reason a caller is shown: the
// refusals of a well-formed request (422), which a script branches on.
var reasoned = map[codes.Code]bool{codes.InvalidArgument: true, codes.FailedPrecondition: true}

// reason is the reason of st's errdetails.ErrorInfo, or "".
func reason(st *status.Status) string {
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info.GetReason()
		}
	}
	return ""
}

// overrides are the gateway's departures from grpc-gateway's status codes.
var overrides = map[codes.Code]int{
	// A well-formed request a rule refuses answers 422, as the original
	// system's validations did; a malformed one (JSON that does not parse,
	// a parameter of the wrong type) stays 400, and the REST handler tells
	// the two apart by whether the call reached the service.
	codes.InvalidArgument: http.StatusUnprocessableEntity,
	codes.OutOfRange:      http.StatusUnprocessableEntity,
	// A request the state refuses (an event from the wrong state) is
	// well-formed: 422, not grpc-gateway's 400, so a client can tell "fix
	// your request" from "the session is not in a state that allows it".
	codes.FailedPrecondition: http.StatusUnprocessableEntity,
}

// kinds are the codes whose kind is more than their status's words, given
// the method called ("" when unknown).
var kinds = map[codes.Code]func(method string) string{
	codes.InvalidArgument:    func(string) string { return jsonhttp.KindValidation },
	codes.OutOfRange:         func(string) string { return jsonhttp.KindValidation },
	codes.FailedPrecondition: refusalKind,
}

// refusedActions name, as the original system did, the actions whose
// method name says something else.
var refusedActions = map[string]string{
	"ArchiveSession":      "trash",
	"BulkArchiveSessions": "trash",
	"UnarchiveSession":    "restore",
	// The queue's: "Cannot send enqueued message now" says less.
	"SendEnqueuedMessageNow":       "send now",
	"InterruptWithEnqueuedMessage": "interrupt",
}

// refusalKind names a state refusal by what was refused: "Cannot trash",
// "Cannot pause", "Cannot set heartbeat".
func refusalKind(method string) string {
	if action, ok := refusedActions[method]; ok {
		return "Cannot " + action
	}
	var words []string
	start := 0
	for i, r := range method + "X" {
		if i > 0 && unicode.IsUpper(r) {
			if w := method[start:i]; w != "Session" && w != "Sessions" {
				words = append(words, strings.ToLower(w))
			}
			start = i
		}
	}
	if len(words) == 0 {
		return "Not allowed now"
	}
	return "Cannot " + strings.Join(words, " ")
}

// messages are the codes whose message the gateway words itself, given
// the service called and its status.
var messages = map[codes.Code]func(service string, st *status.Status) string{
	codes.InvalidArgument: func(_ string, st *status.Status) string { return withFields(st) },
	codes.OutOfRange:      func(_ string, st *status.Status) string { return withFields(st) },
	codes.Aborted: func(_ string, st *status.Status) string {
		return orDefault(st.Message(), "a concurrent change conflicted with this one; retry")
	},
	// No service answers ResourceExhausted itself: it is gRPC's, a
	// message over the size limit or a server out of streams, and its text
	// ("grpc: received message larger than max ...") means nothing to a
	// caller.
	codes.ResourceExhausted: func(service string, _ *status.Status) string {
		return fmt.Sprintf("the %s service could not handle a request or an answer this large, or is overloaded; "+
			"ask for less (e.g. a smaller per_page) or retry later", service)
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

// written reports whether msg reads as a service wrote it, not as gRPC's
// own text about the transport ("grpc: ...", "transport: ...",
// "connection error: desc = ..."), which the client side of a call makes
// up under any code and a caller must never see.
func written(msg string) bool {
	for _, prefix := range []string{"grpc: ", "transport: ", "connection error: ", "rpc error: "} {
		if strings.HasPrefix(msg, prefix) {
			return false
		}
	}
	return !strings.Contains(msg, "desc = ")
}

// violations are the field violations of st's errdetails.BadRequest, each
// as "field: description".
func violations(st *status.Status) []string {
	var out []string
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				out = append(out, v.GetField()+": "+v.GetDescription())
			}
		}
	}
	return out
}

// withFields keeps the service's message when it already names every field
// its errdetails.BadRequest lists (lifecycle's does: "prompt: is required
// ..."), and otherwise spells the violations out so the caller knows which
// fields to fix.
func withFields(st *status.Status) string {
	msg := st.Message()
	if !written(msg) {
		msg = ""
	}
	var fields []string
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				fields = append(fields, v.GetField())
			}
		}
	}
	missing := false
	for _, f := range fields {
		if !strings.Contains(msg, f) {
			missing = true
		}
	}
	if !missing {
		return msg
	}
	parts := strings.Join(violations(st), "; ")
	if msg == "" {
		return parts
	}
	return msg + " (" + parts + ")"
}

func orDefault(s, def string) string {
	if s == "" || !written(s) {
		return def
	}
	return s
}
