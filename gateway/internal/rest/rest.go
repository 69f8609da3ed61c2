// Package rest serves the REST API (/api/v1/...): grpc-gateway's reverse
// proxy over the services' generated clients, with the gateway's JSON
// (wirejson), its error shape (jsonhttp.Error: {"error", "message",
// "messages"}) and status codes.
package rest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/zimmerhq/zimmer/gateway/internal/auth"
	"github.com/zimmerhq/zimmer/gateway/internal/grpcerr"
	"github.com/zimmerhq/zimmer/gateway/internal/jsonhttp"
	"github.com/zimmerhq/zimmer/gateway/internal/sessionref"
	"github.com/zimmerhq/zimmer/gateway/internal/wirejson"
	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	notificationv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/notification/v1"
	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"
	runnerv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/runner/v1"
	"github.com/zimmerhq/zimmer/services/platform/surface"
)

const (
	// MaxBodyBytes bounds a request body: a prompt of 500,000 characters,
	// escaped as \uXXXX throughout, plus the other fields, fits.
	MaxBodyBytes = 8 << 20
	// CallTimeout bounds one REST call into a service.
	CallTimeout = 30 * time.Second
)

// NewHandler returns the REST API over the lifecycle (LifecycleService and
// TriggerService), queue, notification and runner services' connections.
// The runner's session routes (transcript, clone) are the server's own
// handlers, which resolve a slug first and win over these by being more
// specific; its other routes (the login pools) are served here.
// Authentication is the caller's (the server wraps this handler).
func NewHandler(ctx context.Context, lifecycle, queue, notification, runner grpc.ClientConnInterface, logger *slog.Logger) (http.Handler, error) {
	h := &handler{logger: logger, marshaler: &marshaler{Marshaler: wirejson.NewMarshaler()}}
	none := func(string) (string, bool) { return "", false }
	h.mux = runtime.NewServeMux(
		runtime.WithMarshalerOption(runtime.MIMEWildcard, h.marshaler),
		runtime.WithErrorHandler(h.serviceError),
		runtime.WithRoutingErrorHandler(h.routingError),
		runtime.WithForwardResponseOption(successStatus),
		runtime.WithMiddlewares(checkParams),
		// Tells lifecycle which surface a call came through (the archive
		// line names it). Client headers are never forwarded, so a caller
		// cannot claim another surface.
		runtime.WithMetadata(func(context.Context, *http.Request) metadata.MD {
			return metadata.Pairs(surface.MetadataKey, surface.REST)
		}),
		// The gateway is the trust boundary: callers' headers are not
		// forwarded to the services as metadata, nor the services' metadata
		// to callers.
		runtime.WithIncomingHeaderMatcher(none),
		runtime.WithOutgoingHeaderMatcher(none),
		runtime.WithOutgoingTrailerMatcher(none),
		// One way to call each route: no POST-as-GET, no method override.
		runtime.WithDisablePathLengthFallback(),
		runtime.WithDisableHTTPMethodOverride(),
	)
	client := lifecyclev1.NewLifecycleServiceClient(reachingConn{lifecycle})
	if err := lifecyclev1.RegisterLifecycleServiceHandlerClient(ctx, h.mux, client); err != nil {
		return nil, fmt.Errorf("register lifecycle REST routes: %w", err)
	}
	// The lifecycle process serves the triggers too (its transitions read
	// the armed set in their own transaction), on the same connection.
	triggers := lifecyclev1.NewTriggerServiceClient(reachingConn{lifecycle})
	if err := lifecyclev1.RegisterTriggerServiceHandlerClient(ctx, h.mux, triggers); err != nil {
		return nil, fmt.Errorf("register trigger REST routes: %w", err)
	}
	// The queue resolves a session's slug through lifecycle itself, so its
	// routes take an id or a slug like lifecycle's.
	if err := queuev1.RegisterQueueServiceHandlerClient(ctx, h.mux, queuev1.NewQueueServiceClient(reachingConn{queue})); err != nil {
		return nil, fmt.Errorf("register queue REST routes: %w", err)
	}
	// The inbox and the alerts take a session by its numeric id (the
	// notification service keeps no slugs).
	notifications := notificationv1.NewNotificationServiceClient(reachingConn{notification})
	if err := notificationv1.RegisterNotificationServiceHandlerClient(ctx, h.mux, notifications); err != nil {
		return nil, fmt.Errorf("register notification REST routes: %w", err)
	}
	if err := runnerv1.RegisterRunnerServiceHandlerClient(ctx, h.mux, runnerv1.NewRunnerServiceClient(reachingConn{runner})); err != nil {
		return nil, fmt.Errorf("register runner REST routes: %w", err)
	}
	return h, nil
}

type handler struct {
	mux       *runtime.ServeMux
	marshaler *marshaler
	logger    *slog.Logger
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), CallTimeout)
	defer cancel()
	r = r.Clone(ctx)
	// The caller's key stays here: the service sees the gateway's identity
	// and the principal the key authenticated as (auth.ForwardPrincipal).
	r.Header.Del("Authorization")
	r.Header.Del("X-Api-Key")
	r.Body = &trackedBody{ReadCloser: http.MaxBytesReader(w, r.Body, MaxBodyBytes)}
	r = r.WithContext(context.WithValue(r.Context(), reachedKey{}, new(atomic.Bool)))
	h.mux.ServeHTTP(w, r)
}

// reachedKey marks a request's context with whether a call of it reached
// the service (see reachingConn).
type reachedKey struct{}

// reachingConn records, on the request's context, that a call was sent: an
// error that comes back from the service is the service's (a rule it
// refused: 422), while grpc-gateway reports a parameter it could not parse
// with the same InvalidArgument before calling anything (malformed: 400).
type reachingConn struct{ grpc.ClientConnInterface }

func (c reachingConn) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	if reached, ok := ctx.Value(reachedKey{}).(*atomic.Bool); ok {
		reached.Store(true)
	}
	return c.ClientConnInterface.Invoke(ctx, method, args, reply, opts...)
}

func reachedService(ctx context.Context) bool {
	reached, ok := ctx.Value(reachedKey{}).(*atomic.Bool)
	return ok && reached.Load()
}

// checkParams refuses, before grpc-gateway parses them, path and query
// parameters that no service could take: text that is not UTF-8 (%FF, or
// %ED%A0%80, an encoded surrogate) or holds a NUL. gRPC cannot even send
// such a string (proto strings are UTF-8), and Postgres cannot store a
// NUL; both are the caller's error, named.
func checkParams(next runtime.HandlerFunc) runtime.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, pathParams map[string]string) {
		if tb, ok := r.Body.(*trackedBody); ok {
			tb.pathParams = pathParams // to tell the body's fields from the path's
		}
		names := slices.Sorted(maps.Keys(pathParams))
		for _, name := range names {
			if msg := BadParam("path parameter", name, pathParams[name]); msg != "" {
				jsonhttp.WriteError(w, http.StatusBadRequest, msg)
				return
			}
		}
		query, _ := url.ParseQuery(r.URL.RawQuery) // grpc-gateway reports a malformed query itself
		for _, name := range slices.Sorted(maps.Keys(query)) {
			if msg := BadParam("query parameter name", name, name); msg != "" {
				jsonhttp.WriteError(w, http.StatusBadRequest, msg)
				return
			}
			for _, v := range query[name] {
				if msg := BadParam("query parameter", name, v); msg != "" {
					jsonhttp.WriteError(w, http.StatusBadRequest, msg)
					return
				}
			}
		}
		next(w, r, pathParams)
	}
}

// BadParam says what is wrong with a parameter's value ("" when nothing
// is): a what ("path parameter", "query parameter") named name.
func BadParam(what, name, value string) string {
	shown := strconv.QuoteToASCII(name)
	switch {
	case !utf8.ValidString(value):
		return fmt.Sprintf("%s %s is not valid UTF-8; percent-encode the UTF-8 bytes of the text (e.g. %%C3%%A9 for é)", what, shown)
	case strings.ContainsRune(value, 0):
		return fmt.Sprintf("%s %s contains a NUL character (%%00), which no value may hold; remove it", what, shown)
	}
	return ""
}

// marshaler is wirejson's, with decode failures recorded on the body.
type marshaler struct {
	*wirejson.Marshaler
}

func (m *marshaler) NewDecoder(r io.Reader) runtime.Decoder {
	tb, _ := r.(*trackedBody)
	return runtime.DecoderFunc(func(v any) error {
		err := m.decode(r, v)
		if err != nil && !errors.Is(err, io.EOF) && tb != nil { // EOF: empty body, which is fine
			tb.decodeErr = err
			if msg, ok := v.(proto.Message); ok {
				tb.message = msg.ProtoReflect().Descriptor()
			}
		}
		return err
	})
}

// refLists are the body fields listing session references, each a slug
// or an id, as a string or a number (sessionref), as MCP takes them too.
var refLists = []protoreflect.Name{"session_ids"}

// decodeBytes is decode over body.
func (m *marshaler) decodeBytes(body []byte, v any) error { return m.decode(bytes.NewReader(body), v) }

// decode is wirejson's decoding, with the ids in refLists given as numbers
// written as the strings the protos take.
func (m *marshaler) decode(r io.Reader, v any) error {
	msg, ok := v.(proto.Message)
	var names []string
	if ok {
		fields := msg.ProtoReflect().Descriptor().Fields()
		for _, name := range refLists {
			if fd := fields.ByName(name); fd != nil && fd.IsList() && fd.Kind() == protoreflect.StringKind {
				names = append(names, string(name))
			}
		}
	}
	if len(names) == 0 {
		return m.Marshaler.NewDecoder(r).Decode(v)
	}
	body, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return io.EOF
	}
	return m.Unmarshal(sessionref.NumbersAsStrings(body, names...), v)
}

// Success is one status a successful call answers, and what it means.
type Success struct {
	Status int
	// Description says what the status means ("" for a plain success).
	Description string
	// when picks the responses answered with Status; nil: every one.
	when func(proto.Message) bool
}

// successes are, by response message, the statuses a successful call
// answers when it is not a plain 200: the first whose when holds is
// answered. `make proto` documents every one of them from here.
var successes = map[protoreflect.FullName][]Success{
	(&lifecyclev1.CreateSessionResponse{}).ProtoReflect().Descriptor().FullName(): {{Status: http.StatusCreated}},
	// A credential is created: its token is in this answer only.
	(&lifecyclev1.MintSessionCredentialResponse{}).ProtoReflect().Descriptor().FullName(): {{Status: http.StatusCreated}},
	// 204 carries no body: net/http drops the "{}" the gateway writes.
	(&lifecyclev1.DeleteSessionResponse{}).ProtoReflect().Descriptor().FullName():  {{Status: http.StatusNoContent, Description: "Done; the response has no body."}},
	(&lifecyclev1.CreateCategoryResponse{}).ProtoReflect().Descriptor().FullName(): {{Status: http.StatusCreated}},
	(&lifecyclev1.DeleteCategoryResponse{}).ProtoReflect().Descriptor().FullName(): {{Status: http.StatusNoContent, Description: "Done; the response has no body."}},
	// A follow-up says by its status whether it is the session's turn now
	// or waits in the queue; the body's outcome says the same.
	(&queuev1.FollowUpResponse{}).ProtoReflect().Descriptor().FullName(): {
		{Status: http.StatusOK, Description: "Delivered: the session was idle (or force_immediate stopped its running turn), and the prompt is its turn now (job_id).",
			when: followUpIs(queuev1.FollowUpOutcome_FOLLOW_UP_OUTCOME_DELIVERED)},
		{Status: http.StatusAccepted, Description: "Queued: the session is running, so the prompt waits in its queue (enqueued_message) and is sent " +
			"as its next turn when the current one ends.",
			when: followUpIs(queuev1.FollowUpOutcome_FOLLOW_UP_OUTCOME_QUEUED)},
	},
}

func followUpIs(outcome queuev1.FollowUpOutcome) func(proto.Message) bool {
	return func(m proto.Message) bool {
		r, ok := m.(*queuev1.FollowUpResponse)
		return ok && r.GetOutcome() == outcome
	}
}

// Successes are the statuses a call whose response is the message named
// can answer: 201 for creates, 204 for deletes, 200 or 202 for a
// follow-up; nil for a plain 200.
func Successes(response protoreflect.FullName) []Success { return successes[response] }

// SuccessStatus is the status a call answering resp answers.
func SuccessStatus(resp proto.Message) int {
	for _, s := range successes[resp.ProtoReflect().Descriptor().FullName()] {
		if s.when == nil || s.when(resp) {
			return s.Status
		}
	}
	return http.StatusOK
}

// successStatus is grpc-gateway's forward-response hook: it runs before the
// body is written, so the status it writes is the one answered.
func successStatus(_ context.Context, w http.ResponseWriter, resp proto.Message) error {
	if st := SuccessStatus(resp); st != http.StatusOK {
		w.WriteHeader(st)
	}
	return nil
}

// serviceError answers every failure of a routed call: a malformed body, a
// bad path or query parameter, or the service's own error.
func (h *handler) serviceError(ctx context.Context, _ *runtime.ServeMux, _ runtime.Marshaler, w http.ResponseWriter, r *http.Request, err error) {
	if tb, ok := r.Body.(*trackedBody); ok && tb.decodeErr != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(tb.decodeErr, &tooLarge) {
			jsonhttp.WriteError(w, http.StatusRequestEntityTooLarge,
				fmt.Sprintf("request body too large: the limit is %d bytes; shorten the prompt or goal", tooLarge.Limit))
			return
		}
		example := bodyExample(tb.message, tb.pathParams)
		if problems := bodyProblems(tb.read.Bytes(), tb.message, tb.pathParams, h.marshaler.decodeBytes); len(problems) > 0 {
			// JSON, but not this route's body: which field, what it takes.
			messages := make([]string, len(problems))
			for i, p := range problems {
				messages[i] = p.String()
			}
			jsonhttp.WriteProblem(w, http.StatusUnprocessableEntity, jsonhttp.KindValidation,
				fmt.Sprintf("%s; send e.g. %s", strings.Join(messages, "; "), example), messages...)
			return
		}
		var fields protoreflect.FieldDescriptors
		if tb.message != nil {
			fields = tb.message.Fields()
		}
		jsonhttp.WriteProblem(w, http.StatusBadRequest, jsonhttp.KindMalformedJSON,
			fmt.Sprintf("malformed JSON body: %s; send a JSON object, e.g. %s", decodeDetail(tb.decodeErr, fields), example))
		return
	}
	var httpErr *runtime.HTTPStatusError
	if errors.As(err, &httpErr) {
		jsonhttp.WriteError(w, httpErr.HTTPStatus, fmt.Sprintf("bad request path %s: %v", r.URL.Path, httpErr.Err))
		return
	}
	if st, ok := status.FromError(err); ok && st.Code() == codes.InvalidArgument && !reachedService(r.Context()) {
		// grpc-gateway could not parse a path or query parameter (its own
		// words, e.g. `parsing field "page": ...`).
		jsonhttp.WriteError(w, http.StatusBadRequest, st.Message())
		return
	}
	method, _ := runtime.RPCMethod(ctx)
	p := grpcerr.FromCall(method, err)
	switch {
	case p.Internal():
		h.logger.ErrorContext(ctx, "service call failed", "rpc", method, "method", r.Method, "path", r.URL.Path, "code", p.Code.String(), "error", err)
	case p.Code == codes.Unauthenticated && !auth.CredentialRefused(err):
		h.logger.ErrorContext(ctx, "service rejected the gateway's identity; give the gateway and the services the same ZIMMER_INTERNAL_TOKEN",
			"rpc", method, "error", err)
	}
	jsonhttp.WriteCodedProblem(w, p.HTTPStatus, p.Kind, p.Reason, p.Message, p.Messages...)
}

func (h *handler) routingError(_ context.Context, _ *runtime.ServeMux, _ runtime.Marshaler, w http.ResponseWriter, r *http.Request, status int) {
	switch status {
	case http.StatusNotFound:
		jsonhttp.WriteError(w, status, NoRouteMessage(r))
	case http.StatusMethodNotAllowed:
		jsonhttp.WriteError(w, status, fmt.Sprintf("method %s not allowed on %s; see /openapi.json", r.Method, r.URL.Path))
	case http.StatusBadRequest:
		jsonhttp.WriteError(w, status, fmt.Sprintf("bad request path %q; see /openapi.json", r.URL.Path))
	default:
		jsonhttp.WriteError(w, http.StatusInternalServerError, "internal error")
	}
}

// NoRouteMessage is the 404 text for a request no route matches.
func NoRouteMessage(r *http.Request) string {
	return fmt.Sprintf("no route %s %s; see /openapi.json", r.Method, r.URL.Path)
}

// decodeDetail is a decode error in the API's words: protojson's "proto:"
// prefix trimmed (it follows it with a space or, to discourage matching, a
// non-breaking one), and the fields it names by their JSON names
// ("sessionIds") named as the API does ("session_ids").
func decodeDetail(err error, fields protoreflect.FieldDescriptors) string {
	text := strings.TrimSpace(err.Error())
	if rest, ok := strings.CutPrefix(text, "proto:"); ok {
		text = strings.TrimLeftFunc(rest, unicode.IsSpace)
	}
	if fields == nil {
		return text
	}
	for i := range fields.Len() {
		fd := fields.Get(i)
		if json := fd.JSONName(); json != string(fd.Name()) {
			text = strings.ReplaceAll(text, "field "+json+":", "field "+string(fd.Name())+":")
		}
	}
	return text
}
