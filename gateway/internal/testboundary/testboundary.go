// Package testboundary is a human input boundary for tests: it stands in
// for the web UI and Slack, which will establish who spoke when they are
// built, so that the end-to-end tests can record human messages the one
// way the system allows — a boundary inside a Zimmer service declaring the
// actor it established (platform/boundary) to lineage.
//
// It exists for tests only, twice over: a gateway serves it only when built
// with the testboundary tag (Compiled; the e2e suite builds that way, make
// build and make run do not) and when GATEWAY_TEST_BOUNDARY_TOKEN is set,
// which is also the bearer token it demands. No API key, admin key or
// session credential opens it. A production gateway given the variable
// refuses to start (config.Validate), so the stand-in cannot be switched on
// by accident where real humans are recorded.
package testboundary

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/zimmerhq/zimmer/gateway/internal/grpcerr"
	"github.com/zimmerhq/zimmer/gateway/internal/jsonhttp"
	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
	"github.com/zimmerhq/zimmer/services/platform/apikey"
	"github.com/zimmerhq/zimmer/services/platform/boundary"
)

const (
	// Route is the one route: record what a human said.
	Route = "POST /test/human_messages"
	// EnvVar enables the boundary and is the token it demands.
	EnvVar = "GATEWAY_TEST_BOUNDARY_TOKEN"
	// MinTokenChars bounds how guessable the token may be.
	MinTokenChars = 16
	// MaxBodyBytes bounds one message.
	MaxBodyBytes = 256 << 10
	// UnauthorizedMessage is the 401 text.
	UnauthorizedMessage = "the test boundary needs its own token (" + EnvVar + ") as Authorization: Bearer; no API key or session credential opens it"
	callTimeout         = 10 * time.Second
)

// Validate reports why token cannot enable the boundary in this build: a
// build without the testboundary tag, or a token short enough to guess.
// Empty (disabled) is always fine.
func Validate(token string) error {
	switch {
	case token == "":
		return nil
	case !Compiled:
		return fmt.Errorf("%s is set, but this gateway was built without the testboundary tag: the test boundary exists in test builds only", EnvVar)
	case len(token) < MinTokenChars:
		return fmt.Errorf("%s: want at least %d characters", EnvVar, MinTokenChars)
	}
	return nil
}

// NewHandler returns the boundary over lineage's provenance service,
// opened by token (which must pass Validate and not be empty).
func NewHandler(provenance lineagev1.ProvenanceServiceClient, token string, logger *slog.Logger) http.Handler {
	h := &handler{provenance: provenance, logger: logger, token: sha256.Sum256([]byte(token))}
	mux := http.NewServeMux()
	mux.HandleFunc(Route, h.record)
	return mux
}

type handler struct {
	provenance lineagev1.ProvenanceServiceClient
	logger     *slog.Logger
	token      [sha256.Size]byte
}

// authorized compares the bearer token in constant time, over digests so
// not even its length leaks.
func (h *handler) authorized(r *http.Request) bool {
	got := sha256.Sum256([]byte(apikey.BearerToken(r.Header.Get("Authorization"))))
	return subtle.ConstantTimeCompare(got[:], h.token[:]) == 1
}

// message is what a test says a human said, and who.
type message struct {
	// Actor is who the boundary established spoke: what the web UI or
	// Slack would establish, asserted here by the test.
	Actor               boundary.Actor `json:"actor"`
	Provenance          string         `json:"provenance"`
	AuthoredInSessionID int64          `json:"authored_in_session_id"`
	Content             string         `json:"content"`
	SlackPermalink      string         `json:"slack_permalink"`
	OccurredAt          *time.Time     `json:"occurred_at"`
	// IdempotencyKey is passed on as the real boundaries pass theirs.
	IdempotencyKey string `json:"idempotency_key"`
}

const example = `{"actor": {"kind": "web_ui_admin"}, "provenance": "web_ui.follow_up", "authored_in_session_id": 1, "content": "..."}` +
	` or {"actor": {"kind": "slack_user", "slack_user_id": "U012AB3CD"}, "provenance": "slack.dm", ...}`

func (h *handler) record(w http.ResponseWriter, r *http.Request) {
	if !h.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="zimmer-test-boundary"`)
		jsonhttp.WriteError(w, http.StatusUnauthorized, UnauthorizedMessage)
		return
	}
	var in message
	if !jsonhttp.Decode(w, r, &in, MaxBodyBytes, example) {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), callTimeout)
	defer cancel()
	ctx, err := boundary.Outgoing(ctx, in.Actor)
	if err != nil {
		jsonhttp.WriteProblem(w, http.StatusUnprocessableEntity, jsonhttp.KindValidation, "actor: "+err.Error())
		return
	}
	req := &lineagev1.RecordHumanMessageRequest{
		Provenance: in.Provenance, AuthoredInSessionId: in.AuthoredInSessionID,
		Content: in.Content, SlackPermalink: in.SlackPermalink, IdempotencyKey: in.IdempotencyKey,
	}
	if in.OccurredAt != nil {
		req.OccurredAt = timestamppb.New(*in.OccurredAt)
	}
	resp, err := h.provenance.RecordHumanMessage(ctx, req)
	if err != nil {
		p := grpcerr.From("lineage", err)
		if p.Internal() {
			h.logger.ErrorContext(ctx, "test boundary call failed", "code", p.Code.String(), "error", err)
		}
		jsonhttp.WriteProblem(w, p.HTTPStatus, p.Kind, p.Message, p.Messages...)
		return
	}
	out := map[string]any{"recorded": resp.GetRecorded()}
	if resp.GetAlreadyRecorded() {
		out["already_recorded"] = true
	}
	if resp.GetRecorded() {
		m := resp.GetMessage()
		out["message"] = map[string]any{
			"id": m.GetId(), "author": m.GetAuthor(), "provenance": m.GetProvenance(),
			"authored_in_session_id": m.GetAuthoredInSessionId(), "content": m.GetContent(),
		}
	} else {
		out["not_recorded_reason"] = resp.GetNotRecordedReason()
	}
	jsonhttp.Write(w, http.StatusOK, out)
}
