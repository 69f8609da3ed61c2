package rest

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/zimmerhq/zimmer/gateway/internal/jsonhttp"
	"github.com/zimmerhq/zimmer/gateway/internal/wirejson"
	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	runnerv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/runner/v1"
)

// ClonePattern is the clone's route. Like TranscriptPattern it is served
// beside grpc-gateway's mux: the reference may be a slug, which only
// lifecycle resolves.
const ClonePattern = "GET /api/v1/sessions/{id}/clone"

// NewClone answers GET /api/v1/sessions/{id}/clone: the session is resolved
// through lifecycle's GetSession (a slug to its id; an unknown session is
// 404, and a session credential reads only what lifecycle lets it read),
// then the runner says where its clone is and what the archive kept of it
// (GetClone).
func NewClone(lifecycle lifecyclev1.LifecycleServiceClient, runner runnerv1.RunnerServiceClient, logger *slog.Logger) http.Handler {
	return &cloneHandler{lifecycle: lifecycle, runner: runner, logger: logger, marshaler: wirejson.NewMarshaler()}
}

type cloneHandler struct {
	lifecycle lifecyclev1.LifecycleServiceClient
	runner    runnerv1.RunnerServiceClient
	logger    *slog.Logger
	marshaler *wirejson.Marshaler
}

func (h *cloneHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ref := r.PathValue("id")
	if msg := BadParam("path parameter", "session_id", ref); msg != "" {
		jsonhttp.WriteError(w, http.StatusBadRequest, msg)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), CallTimeout)
	defer cancel()
	got, err := h.lifecycle.GetSession(ctx, &lifecyclev1.GetSessionRequest{SessionId: ref})
	if err != nil {
		writeCallError(h.logger, r, w, lifecyclev1.LifecycleService_GetSession_FullMethodName, err)
		return
	}
	resp, err := h.runner.GetClone(ctx, &runnerv1.GetCloneRequest{SessionId: strconv.FormatInt(got.GetSession().GetId(), 10)})
	if err != nil {
		writeCallError(h.logger, r, w, runnerv1.RunnerService_GetClone_FullMethodName, err)
		return
	}
	body, err := h.marshaler.Marshal(resp)
	if err != nil {
		h.logger.ErrorContext(ctx, "render clone as JSON", "error", err)
		jsonhttp.WriteError(w, http.StatusInternalServerError, "internal error")
		return
	}
	jsonhttp.WriteRaw(w, http.StatusOK, body)
}
