// Package github is GitHub's webhook endpoint (POST /github/webhook): how
// GitHub tells Zimmer at once that a session's pull request moved, so its
// watch reads it within a second instead of at its next poll. It is built
// against GitHub's documented webhook contract
// (https://docs.github.com/en/webhooks):
//
//   - every delivery is signed: X-Hub-Signature-256 is "sha256=" and the
//     hex HMAC-SHA256 of the raw body, keyed with the webhook's secret;
//     it is compared in constant time (Verify);
//   - X-GitHub-Event names the event ("ping" when a webhook is created);
//     X-GitHub-Delivery is the delivery's GUID, the same on a redelivery;
//   - GitHub expects a 2xx within ten seconds, and redelivers on request.
//
// The handler hands a verified delivery to lifecycle (AcceptGitHubDelivery)
// and answers only once lifecycle took it: the delivery id is claimed and
// every watch of the pull request it names told to read it, in one
// transaction, so a delivery answered 2xx was acted on, a failure is
// answered 503 (GitHub's redelivery then works), and a delivery id seen
// before — a redelivery, a replay — is acted on once. Events Zimmer does
// not act on are answered 202 and ignored.
//
// The signature is the only credential it takes: no API key, admin key,
// session credential or console cookie opens it, and its signature opens
// nothing else. Without GITHUB_WEBHOOK_SECRET the route does not exist
// (404). It calls lifecycle as the service "github", acting as itself.
package github

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"google.golang.org/grpc"

	"github.com/zimmerhq/zimmer/gateway/internal/grpcerr"
	"github.com/zimmerhq/zimmer/gateway/internal/jsonhttp"
	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
)

const (
	// Route is the endpoint, outside /api/v1.
	Route = "/github/webhook"
	// SecretEnv configures it (config.Config).
	SecretEnv = "GITHUB_WEBHOOK_SECRET"
	// maxBody bounds a delivery: GitHub caps payloads at 25 MB; the events
	// Zimmer acts on are a few tens of KiB.
	maxBody = 25 << 20
	// acceptTimeout keeps the answer inside GitHub's ten seconds.
	acceptTimeout = 8 * time.Second
)

// Verification failures, each answered 401.
var (
	ErrNoSignature  = errors.New("the delivery is not signed: X-Hub-Signature-256 is required")
	ErrBadSignature = errors.New("X-Hub-Signature-256 does not match the body under the webhook secret")
)

// Verify checks a delivery's signature as GitHub documents it, comparing
// in constant time.
func Verify(secret []byte, h http.Header, body []byte) error {
	sig := h.Get("X-Hub-Signature-256")
	if sig == "" {
		return ErrNoSignature
	}
	hexSig, ok := strings.CutPrefix(sig, "sha256=")
	if !ok {
		return fmt.Errorf("%w: it is not a sha256= signature", ErrBadSignature)
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil {
		return fmt.Errorf("%w: it is not hex", ErrBadSignature)
	}
	if !hmac.Equal(got, Sign(secret, body)) {
		return ErrBadSignature
	}
	return nil
}

// Sign is the MAC of body: HMAC-SHA256 keyed with secret.
func Sign(secret, body []byte) []byte {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return mac.Sum(nil)
}

// Acceptor is lifecycle's AcceptGitHubDelivery.
type Acceptor interface {
	AcceptGitHubDelivery(ctx context.Context, in *lifecyclev1.AcceptGitHubDeliveryRequest, opts ...grpc.CallOption) (*lifecyclev1.AcceptGitHubDeliveryResponse, error)
}

// Handler serves Route.
type Handler struct {
	secret     []byte
	deliveries Acceptor
	logger     *slog.Logger
}

// NewHandler returns the endpoint verifying with secret (never logged) and
// handing deliveries to lifecycle.
func NewHandler(secret string, deliveries Acceptor, logger *slog.Logger) *Handler {
	return &Handler{secret: []byte(secret), deliveries: deliveries, logger: logger}
}

// answer is the endpoint's JSON answer to a verified delivery.
type answer struct {
	Delivery string `json:"delivery"`
	Outcome  string `json:"outcome"`
	Message  string `json:"message"`
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		jsonhttp.WriteError(w, http.StatusMethodNotAllowed, "GitHub webhook deliveries are POSTed")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		jsonhttp.WriteError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is over %d bytes", maxBody))
		return
	}
	if err := Verify(h.secret, r.Header, body); err != nil {
		h.logger.WarnContext(r.Context(), "github delivery refused", "reason", err.Error(), "delivery", r.Header.Get("X-GitHub-Delivery"))
		jsonhttp.WriteError(w, http.StatusUnauthorized, err.Error())
		return
	}
	event, delivery := r.Header.Get("X-GitHub-Event"), r.Header.Get("X-GitHub-Delivery")
	if event == "" || delivery == "" {
		jsonhttp.WriteError(w, http.StatusBadRequest, "a delivery names its event and its id: X-GitHub-Event and X-GitHub-Delivery are required")
		return
	}
	if event == "ping" {
		// The webhook was created or its secret changed: it works.
		jsonhttp.Write(w, http.StatusOK, answer{Delivery: delivery, Outcome: "pong", Message: "the webhook's signature verifies"})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), acceptTimeout)
	defer cancel()
	resp, err := h.deliveries.AcceptGitHubDelivery(ctx, &lifecyclev1.AcceptGitHubDeliveryRequest{DeliveryId: delivery, Event: event, Payload: body})
	if err != nil {
		p := grpcerr.From("lifecycle", err)
		if !p.Internal() {
			// Lifecycle refused the payload itself: redelivering the same
			// bytes cannot help.
			jsonhttp.WriteError(w, http.StatusBadRequest, p.Message)
			return
		}
		h.logger.ErrorContext(r.Context(), "github delivery not accepted; redeliver it", "delivery", delivery, "event", event, "error", err)
		jsonhttp.WriteError(w, http.StatusServiceUnavailable, "the delivery could not be taken; redeliver it from the webhook's Recent Deliveries")
		return
	}
	out := answer{Delivery: delivery, Message: resp.GetMessage()}
	code := http.StatusOK
	switch resp.GetOutcome() {
	case lifecyclev1.GitHubDeliveryOutcome_GIT_HUB_DELIVERY_OUTCOME_ACCEPTED:
		out.Outcome = "accepted"
	case lifecyclev1.GitHubDeliveryOutcome_GIT_HUB_DELIVERY_OUTCOME_DUPLICATE:
		out.Outcome = "duplicate"
	default:
		out.Outcome, code = "ignored", http.StatusAccepted
	}
	h.logger.InfoContext(r.Context(), "github delivery", "delivery", delivery, "event", event, "outcome", out.Outcome)
	jsonhttp.Write(w, code, out)
}
