// Package slack is the Slack events endpoint (POST /slack/events): the
// human boundary where Slack, having verified its user, tells Zimmer who
// said what. It is built against Slack's documented Events API
// (https://api.slack.com/apis/events-api):
//
//   - every request is signed: X-Slack-Signature is "v0=" and the hex
//     HMAC-SHA256, keyed with the app's signing secret, of
//     "v0:" + X-Slack-Request-Timestamp + ":" + the raw body; a timestamp
//     more than five minutes from now is refused, so a captured request
//     cannot be replayed later (Verify);
//   - a url_verification request is answered with its challenge;
//   - an event_callback must be acknowledged within three seconds, or Slack
//     retries it (X-Slack-Retry-Num) under the same event_id. The handler
//     hands it to the notification service (AcceptSlackEvent), which stores
//     it before answering, and acknowledges only then: an acknowledged event
//     survives any crash, an unacknowledged one is retried by Slack, and an
//     event id seen before is not processed again. The work happens after
//     the acknowledgement, in the notification service's workflow.
//
// The signature is the only credential it takes: no API key, admin key,
// session credential or console cookie opens it, and its signature opens
// nothing else. Without SLACK_SIGNING_SECRET the route does not exist
// (404). It calls the notification service as the service "slack", acting
// as itself.
package slack

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"

	"github.com/zimmerhq/zimmer/gateway/internal/grpcerr"
	"github.com/zimmerhq/zimmer/gateway/internal/jsonhttp"
	notificationv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/notification/v1"
)

const (
	// Route is the endpoint, outside /api/v1.
	Route = "/slack/events"
	// SigningSecretEnv configures it (config.Config).
	SigningSecretEnv = "SLACK_SIGNING_SECRET"
	// MaxAge is how far a request's timestamp may be from now: Slack's
	// documented five minutes.
	MaxAge = 5 * time.Minute
	// maxBody bounds a request: Slack's event payloads are a few KiB; a
	// message is at most 40,000 characters.
	maxBody = 1 << 20
	// acceptTimeout keeps the answer inside Slack's three seconds: past it,
	// Slack retries anyway, and the retry is deduplicated by event id.
	acceptTimeout = 2500 * time.Millisecond
)

// Verification failures, each answered 401.
var (
	ErrNoSignature  = errors.New("the request is not signed: X-Slack-Signature and X-Slack-Request-Timestamp are required")
	ErrStale        = errors.New("the request's timestamp is more than five minutes from now; a replay is refused")
	ErrBadSignature = errors.New("the signature does not match the body under the signing secret")
)

// Verify checks a request's signature as Slack documents it, comparing in
// constant time. now is the clock (a test's).
func Verify(secret []byte, h http.Header, body []byte, now time.Time) error {
	ts, sig := h.Get("X-Slack-Request-Timestamp"), h.Get("X-Slack-Signature")
	if ts == "" || sig == "" {
		return ErrNoSignature
	}
	sent, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: X-Slack-Request-Timestamp %q is not Unix seconds", ErrNoSignature, ts)
	}
	if age := now.Sub(time.Unix(sent, 0)); age > MaxAge || age < -MaxAge {
		return ErrStale
	}
	hexSig, ok := strings.CutPrefix(sig, "v0=")
	if !ok {
		return fmt.Errorf("%w: X-Slack-Signature is not a v0 signature", ErrBadSignature)
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil {
		return fmt.Errorf("%w: X-Slack-Signature is not hex", ErrBadSignature)
	}
	if !hmac.Equal(got, Sign(secret, ts, body)) {
		return ErrBadSignature
	}
	return nil
}

// Sign is the v0 MAC of body sent at ts: HMAC-SHA256 over
// "v0:<ts>:<body>".
func Sign(secret []byte, ts string, body []byte) []byte {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte("v0:" + ts + ":"))
	mac.Write(body)
	return mac.Sum(nil)
}

// Envelope is the part of a request the endpoint reads itself; the rest is
// the notification service's (it parses the event_callback again, whole).
type Envelope struct {
	Type      string `json:"type"`
	Challenge string `json:"challenge"`
	EventID   string `json:"event_id"`
}

// ParseEnvelope reads a verified body's envelope.
func ParseEnvelope(body []byte) (Envelope, error) {
	var e Envelope
	if err := json.Unmarshal(body, &e); err != nil {
		return Envelope{}, fmt.Errorf("the body is not a JSON Events API envelope: %w", err)
	}
	switch e.Type {
	case "url_verification":
		if e.Challenge == "" {
			return Envelope{}, errors.New("a url_verification without a challenge")
		}
	case "event_callback":
		if e.EventID == "" {
			return Envelope{}, errors.New("an event_callback without an event_id")
		}
	}
	return e, nil
}

// Acceptor is the notification service's AcceptSlackEvent.
type Acceptor interface {
	AcceptSlackEvent(ctx context.Context, in *notificationv1.AcceptSlackEventRequest, opts ...grpc.CallOption) (*notificationv1.AcceptSlackEventResponse, error)
}

// Handler serves Route.
type Handler struct {
	secret []byte
	events Acceptor
	logger *slog.Logger
	now    func() time.Time
}

// NewHandler returns the endpoint verifying with secret (never logged) and
// handing events to events. now is the clock (nil: time.Now).
func NewHandler(secret string, events Acceptor, now func() time.Time, logger *slog.Logger) *Handler {
	if now == nil {
		now = time.Now
	}
	return &Handler{secret: []byte(secret), events: events, logger: logger, now: now}
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		jsonhttp.WriteError(w, http.StatusMethodNotAllowed, "Slack events are POSTed")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		jsonhttp.WriteError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is over %d bytes", maxBody))
		return
	}
	if err := Verify(h.secret, r.Header, body, h.now()); err != nil {
		h.logger.WarnContext(r.Context(), "slack request refused", "reason", err.Error())
		jsonhttp.WriteError(w, http.StatusUnauthorized, err.Error())
		return
	}
	env, err := ParseEnvelope(body)
	if err != nil {
		jsonhttp.WriteError(w, http.StatusBadRequest, err.Error())
		return
	}
	switch env.Type {
	case "url_verification":
		jsonhttp.Write(w, http.StatusOK, map[string]string{"challenge": env.Challenge})
	case "event_callback":
		h.accept(w, r, env, body)
	default:
		// app_rate_limited and whatever Slack adds: nothing to do, and
		// nothing Slack should retry.
		h.logger.InfoContext(r.Context(), "slack envelope ignored", "type", env.Type)
		w.WriteHeader(http.StatusOK)
	}
}

// accept stores the event in the notification service, then acknowledges
// it. Anything short of a stored event is answered 503, so Slack retries.
func (h *Handler) accept(w http.ResponseWriter, r *http.Request, env Envelope, body []byte) {
	retry, _ := strconv.Atoi(r.Header.Get("X-Slack-Retry-Num"))
	ctx, cancel := context.WithTimeout(r.Context(), acceptTimeout)
	defer cancel()
	resp, err := h.events.AcceptSlackEvent(ctx, &notificationv1.AcceptSlackEventRequest{
		EventId: env.EventID, Payload: body, RetryNum: int32(min(retry, 1<<20)), //nolint:gosec // bounded just before
	})
	if err != nil {
		p := grpcerr.From("notification", err)
		if !p.Internal() {
			// The service refused the payload itself: Slack retrying the
			// same bytes cannot help.
			jsonhttp.WriteError(w, http.StatusBadRequest, p.Message)
			return
		}
		h.logger.ErrorContext(r.Context(), "slack event not accepted; Slack will retry it", "event_id", env.EventID, "error", err)
		jsonhttp.WriteError(w, http.StatusServiceUnavailable, "the event could not be stored; Slack retries it")
		return
	}
	h.logger.InfoContext(r.Context(), "slack event acknowledged", "event_id", env.EventID, "retry_num", retry,
		"retry_reason", r.Header.Get("X-Slack-Retry-Reason"), "new", resp.GetAccepted())
	w.WriteHeader(http.StatusOK)
}
