package rest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/grpc-ecosystem/grpc-gateway/v2/utilities"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zimmerhq/zimmer/gateway/internal/grpcerr"
	"github.com/zimmerhq/zimmer/gateway/internal/jsonhttp"
	"github.com/zimmerhq/zimmer/gateway/internal/wirejson"
	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	runnerv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/runner/v1"
)

// TranscriptPattern is the transcript's route. Like SessionDetailPattern it
// is served beside grpc-gateway's mux: the reference may be a slug, which
// only lifecycle resolves, and ?follow=true streams.
const TranscriptPattern = "GET /api/v1/sessions/{id}/transcript"

// SSEKeepAlive is how often a follow with nothing to say writes an SSE
// comment, so proxies and clients do not take a quiet turn for a dead
// connection.
var SSEKeepAlive = 15 * time.Second

// NewTranscript answers GET /api/v1/sessions/{id}/transcript: the session
// is resolved through lifecycle's GetSession (a slug to its id; an unknown
// session is 404, and a session credential reads only what lifecycle lets
// it read), then the runner answers a page (GetTranscript), or with
// ?follow=true a stream of server-sent events (FollowTranscript) until the
// client goes away.
func NewTranscript(lifecycle lifecyclev1.LifecycleServiceClient, runner runnerv1.RunnerServiceClient, logger *slog.Logger) http.Handler {
	return &transcriptHandler{lifecycle: lifecycle, runner: runner, logger: logger, marshaler: wirejson.NewMarshaler()}
}

type transcriptHandler struct {
	lifecycle lifecyclev1.LifecycleServiceClient
	runner    runnerv1.RunnerServiceClient
	logger    *slog.Logger
	marshaler *wirejson.Marshaler
}

func (h *transcriptHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ref := r.PathValue("id")
	if msg := BadParam("path parameter", "session_id", ref); msg != "" {
		jsonhttp.WriteError(w, http.StatusBadRequest, msg)
		return
	}
	query := r.URL.Query()
	for name, values := range query {
		for _, v := range values {
			if msg := BadParam("query parameter", name, v); msg != "" {
				jsonhttp.WriteError(w, http.StatusBadRequest, msg)
				return
			}
		}
	}
	req := &runnerv1.GetTranscriptRequest{}
	// session_id comes from the path, never the query.
	if err := runtime.PopulateQueryParameters(req, query, utilities.NewDoubleArray([][]string{{"session_id"}})); err != nil {
		jsonhttp.WriteError(w, http.StatusBadRequest, fmt.Sprintf("bad query parameter: %v; see /openapi.json", err))
		return
	}

	// Resolving is a short call even when the follow that comes after is
	// long.
	rctx, cancel := context.WithTimeout(r.Context(), CallTimeout)
	got, err := h.lifecycle.GetSession(rctx, &lifecyclev1.GetSessionRequest{SessionId: ref})
	cancel()
	if err != nil {
		h.fail(r, w, lifecyclev1.LifecycleService_GetSession_FullMethodName, err)
		return
	}
	req.SessionId = strconv.FormatInt(got.GetSession().GetId(), 10)
	if req.GetFollow() {
		h.follow(w, r, req)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), CallTimeout)
	defer cancel()
	resp, err := h.runner.GetTranscript(ctx, req)
	if err != nil {
		h.fail(r, w, runnerv1.RunnerService_GetTranscript_FullMethodName, err)
		return
	}
	body, err := h.marshaler.Marshal(resp)
	if err != nil {
		h.logger.ErrorContext(ctx, "render transcript as JSON", "error", err)
		jsonhttp.WriteError(w, http.StatusInternalServerError, "internal error")
		return
	}
	jsonhttp.WriteRaw(w, http.StatusOK, body)
}

// follow streams the transcript as server-sent events: an event per line
// ("line", its id the line's, its data the line as JSON), a comment every
// SSEKeepAlive while nothing happens, and an "error" event (the API's
// error body) if the stream fails after it began. A client reconnecting
// with Last-Event-ID resumes after that line.
func (h *transcriptHandler) follow(w http.ResponseWriter, r *http.Request, req *runnerv1.GetTranscriptRequest) {
	after := req.GetAfterLineId()
	if last := r.Header.Get("Last-Event-ID"); last != "" {
		id, err := strconv.ParseInt(last, 10, 64)
		if err != nil || id < 0 {
			jsonhttp.WriteError(w, http.StatusBadRequest, fmt.Sprintf("Last-Event-ID %q is not a line id; send the id of the last event received", last))
			return
		}
		after = id
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stream, err := h.runner.FollowTranscript(ctx, &runnerv1.FollowTranscriptRequest{SessionId: req.GetSessionId(), AfterLineId: after})
	if err != nil {
		h.fail(r, w, runnerv1.RunnerService_FollowTranscript_FullMethodName, err)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no") // nginx: do not hold events back
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()

	type received struct {
		line *runnerv1.TranscriptLine
		err  error
	}
	lines := make(chan received)
	go func() {
		for {
			resp, err := stream.Recv()
			select {
			case lines <- received{resp.GetLine(), err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	keepAlive := time.NewTicker(SSEKeepAlive)
	defer keepAlive.Stop()
	for {
		var event []byte
		select {
		case <-ctx.Done():
			return // the client went away
		case <-keepAlive.C:
			event = []byte(": keep-alive\n\n")
		case got := <-lines:
			if got.err != nil {
				// The runner ending the stream (it is stopping) ends the
				// follow as it is: the client reconnects with Last-Event-ID.
				if st, _ := status.FromError(got.err); errors.Is(got.err, io.EOF) || st.Code() == codes.Canceled || ctx.Err() != nil {
					return
				}
				p := grpcerr.FromCall(runnerv1.RunnerService_FollowTranscript_FullMethodName, got.err)
				if p.Internal() {
					h.logger.ErrorContext(ctx, "transcript follow failed", "error", got.err)
				}
				messages := p.Messages
				if len(messages) == 0 {
					messages = []string{p.Message}
				}
				kind := p.Kind
				if kind == "" {
					kind = jsonhttp.Kind(p.HTTPStatus)
				}
				body, _ := json.Marshal(jsonhttp.Error{Error: kind, Message: p.Message, Messages: messages})
				event = fmt.Appendf(nil, "event: error\ndata: %s\n\n", body)
				_, _ = w.Write(event)
				_ = rc.Flush()
				return
			}
			data, err := h.marshaler.Marshal(got.line)
			if err != nil {
				h.logger.ErrorContext(ctx, "render transcript line as JSON", "error", err)
				return
			}
			event = fmt.Appendf(nil, "id: %d\nevent: line\ndata: %s\n\n", got.line.GetId(), data)
		}
		if _, err := w.Write(event); err != nil {
			return
		}
		if err := rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return
		}
	}
}

func (h *transcriptHandler) fail(r *http.Request, w http.ResponseWriter, method string, err error) {
	writeCallError(h.logger, r, w, method, err)
}

// writeCallError answers a failed service call of a hand-wired route with
// the API's error body, logging what is internal.
func writeCallError(logger *slog.Logger, r *http.Request, w http.ResponseWriter, method string, err error) {
	p := grpcerr.FromCall(method, err)
	if p.Internal() {
		logger.ErrorContext(r.Context(), "service call failed", "rpc", method, "method", r.Method, "path", r.URL.Path,
			"code", p.Code.String(), "error", err)
	}
	jsonhttp.WriteProblem(w, p.HTTPStatus, p.Kind, p.Message, p.Messages...)
}
