package sink

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The generic webhook's signature scheme, for receivers:
//
//	X-Zimmer-Timestamp: <unix seconds when sent>
//	X-Zimmer-Signature: sha256=<hex HMAC-SHA256(secret, timestamp + "." + body)>
//
// The timestamp is inside the MAC so a captured request cannot be replayed
// later with a fresh timestamp; a receiver checks the MAC over the raw body
// (before parsing it) and rejects timestamps outside its tolerance.
// VerifyWebhook does exactly that.
const (
	WebhookTimestampHeader = "X-Zimmer-Timestamp"
	WebhookSignatureHeader = "X-Zimmer-Signature"
	webhookSignaturePrefix = "sha256="
)

// WebhookPayload is the JSON body the generic webhook posts.
type WebhookPayload struct {
	Kind      Kind      `json:"kind"`
	Title     string    `json:"title"`
	Body      string    `json:"body"`
	SessionID string    `json:"session_id,omitempty"`
	URL       string    `json:"url,omitempty"`
	DedupKey  string    `json:"dedup_key,omitempty"`
	Time      time.Time `json:"time"`
}

// Webhook posts the message as JSON to URL, signed with Secret.
type Webhook struct {
	URL    string
	Secret []byte
	Client *http.Client
	Now    func() time.Time // nil: time.Now
}

var _ Sink = Webhook{}

// Name implements Sink.
func (Webhook) Name() string { return "webhook" }

// Send implements Sink.
func (w Webhook) Send(ctx context.Context, m Message) error {
	body, err := json.Marshal(WebhookPayload{Kind: m.Kind, Title: m.Title, Body: m.Body, SessionID: m.SessionID, URL: m.URL, DedupKey: m.DedupKey, Time: m.Time})
	if err != nil {
		return permanent(w.Name(), fmt.Errorf("encode payload: %w", err))
	}
	now := time.Now
	if w.Now != nil {
		now = w.Now
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return permanent(w.Name(), fmt.Errorf("build request: %w", err))
	}
	req.Header.Set("Content-Type", "application/json")
	ts := strconv.FormatInt(now().Unix(), 10)
	req.Header.Set(WebhookTimestampHeader, ts)
	req.Header.Set(WebhookSignatureHeader, webhookSignaturePrefix+webhookMAC(w.Secret, ts, body))
	return doHTTP(w.Client, w.Name(), req)
}

func webhookMAC(secret []byte, timestamp string, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(timestamp))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

// VerifyWebhook checks a received webhook: the signature header must be the
// HMAC of the timestamp and the raw body under secret, and the timestamp
// within tolerance of now. Receivers written in Go can call it as is.
func VerifyWebhook(secret []byte, header http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	ts := header.Get(WebhookTimestampHeader)
	sent, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("webhook: bad %s %q: %w", WebhookTimestampHeader, ts, err)
	}
	sig, ok := strings.CutPrefix(header.Get(WebhookSignatureHeader), webhookSignaturePrefix)
	if !ok {
		return fmt.Errorf("webhook: %s lacks the %q prefix", WebhookSignatureHeader, webhookSignaturePrefix)
	}
	got, err := hex.DecodeString(sig)
	if err != nil {
		return fmt.Errorf("webhook: bad %s: %w", WebhookSignatureHeader, err)
	}
	want, _ := hex.DecodeString(webhookMAC(secret, ts, body))
	if !hmac.Equal(got, want) {
		return errors.New("webhook: signature does not match the body")
	}
	if age := now.Sub(time.Unix(sent, 0)); age > tolerance || age < -tolerance {
		return fmt.Errorf("webhook: timestamp is %s away from now, beyond %s", age, tolerance)
	}
	return nil
}

// doHTTP sends req and classifies the outcome; the first bytes of a refusal's
// body go into the error because receivers explain themselves there (Slack's
// "invalid_payload", ntfy's JSON error).
func doHTTP(client *http.Client, sink string, req *http.Request) error {
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return classifyTransportError(sink, err)
	}
	defer resp.Body.Close()
	detail, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	return classifyHTTPStatus(sink, resp, strings.TrimSpace(string(detail)))
}
