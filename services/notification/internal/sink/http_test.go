package sink_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/notification/internal/sink"
)

var sentAt = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func pushMessage() sink.Message {
	return sink.Message{
		Kind: sink.KindPush, Title: "Session needs input", Body: "fix-login is waiting for you",
		SessionID: "sess-1", URL: "https://zimmer.example/sessions/sess-1",
		DedupKey: "needs_input:sess-1:3", Time: sentAt,
	}
}

// received is one request a loopback receiver captured.
type received struct {
	method, path string
	header       http.Header
	body         []byte
}

// receiver starts a real HTTP server on loopback that records each request
// and answers status.
func receiver(t *testing.T, status int) (*httptest.Server, <-chan received) {
	t.Helper()
	got := make(chan received, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		got <- received{method: r.Method, path: r.URL.Path, header: r.Header.Clone(), body: body}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, http.StatusText(status))
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

func TestWebhookPostsJSONSignedSoAReceiverCanVerifyIt(t *testing.T) {
	t.Parallel()
	srv, got := receiver(t, http.StatusNoContent)
	secret := []byte("s3cret")
	w := sink.Webhook{URL: srv.URL + "/hook", Secret: secret, Client: srv.Client(), Now: func() time.Time { return sentAt }}

	require.NoError(t, w.Send(context.Background(), pushMessage()))
	req := <-got

	require.Equal(t, http.MethodPost, req.method)
	require.Equal(t, "/hook", req.path)
	require.Equal(t, "application/json", req.header.Get("Content-Type"))
	var payload map[string]any
	require.NoError(t, json.Unmarshal(req.body, &payload))
	require.Equal(t, map[string]any{
		"kind": "push", "title": "Session needs input", "body": "fix-login is waiting for you",
		"session_id": "sess-1", "url": "https://zimmer.example/sessions/sess-1",
		"dedup_key": "needs_input:sess-1:3", "time": "2030-01-02T03:04:05Z",
	}, payload)

	// Independently of the package: the documented scheme, by hand.
	ts := req.header.Get(sink.WebhookTimestampHeader)
	require.Equal(t, strconv.FormatInt(sentAt.Unix(), 10), ts)
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(ts + "." + string(req.body)))
	require.Equal(t, "sha256="+hex.EncodeToString(mac.Sum(nil)), req.header.Get(sink.WebhookSignatureHeader))

	// The exported verifier accepts it and refuses every forgery.
	require.NoError(t, sink.VerifyWebhook(secret, req.header, req.body, sentAt.Add(time.Minute), 5*time.Minute))
	tampered := append([]byte(nil), req.body...)
	tampered[len(tampered)-2] = 'X'
	require.Error(t, sink.VerifyWebhook(secret, req.header, tampered, sentAt, 5*time.Minute), "a changed body")
	require.Error(t, sink.VerifyWebhook([]byte("other"), req.header, req.body, sentAt, 5*time.Minute), "another secret")
	require.Error(t, sink.VerifyWebhook(secret, req.header, req.body, sentAt.Add(time.Hour), 5*time.Minute), "a replay an hour later")
	replayed := req.header.Clone()
	replayed.Set(sink.WebhookTimestampHeader, strconv.FormatInt(sentAt.Add(time.Hour).Unix(), 10))
	require.Error(t, sink.VerifyWebhook(secret, replayed, req.body, sentAt.Add(time.Hour), 5*time.Minute), "a replay with a fresh timestamp")
	unsigned := req.header.Clone()
	unsigned.Del(sink.WebhookSignatureHeader)
	require.Error(t, sink.VerifyWebhook(secret, unsigned, req.body, sentAt, 5*time.Minute), "no signature")
}

func TestNtfyPublishesWithTitlePriorityAndTagsHeaders(t *testing.T) {
	t.Parallel()
	srv, got := receiver(t, http.StatusOK)
	n := sink.Ntfy{ServerURL: srv.URL, Topic: "zimmer-ops", Token: "tk_abc", Client: srv.Client()}

	require.NoError(t, n.Send(context.Background(), pushMessage()))
	req := <-got
	require.Equal(t, http.MethodPost, req.method)
	require.Equal(t, "/zimmer-ops", req.path)
	require.Equal(t, "fix-login is waiting for you", string(req.body))
	require.Equal(t, "Session needs input", req.header.Get("Title"))
	require.Equal(t, "default", req.header.Get("Priority"))
	require.Equal(t, "bell,push", req.header.Get("Tags"))
	require.Equal(t, "https://zimmer.example/sessions/sess-1", req.header.Get("Click"))
	require.Equal(t, "Bearer tk_abc", req.header.Get("Authorization"))

	alert := sink.Message{Kind: sink.KindAlert, Title: "cleanup failing", Body: "boom", Time: sentAt}
	require.NoError(t, sink.Ntfy{ServerURL: srv.URL, Topic: "zimmer-ops", Client: srv.Client()}.Send(context.Background(), alert))
	req = <-got
	require.Equal(t, "high", req.header.Get("Priority"), "alerts page")
	require.Equal(t, "rotating_light,alert", req.header.Get("Tags"))
	require.Empty(t, req.header.Get("Authorization"), "no token, no header")
	require.Empty(t, req.header.Get("Click"))
}

func TestSlackPostsTextAndBlocks(t *testing.T) {
	t.Parallel()
	srv, got := receiver(t, http.StatusOK)
	s := sink.Slack{WebhookURL: srv.URL + "/services/T0/B0/x", Client: srv.Client()}

	require.NoError(t, s.Send(context.Background(), pushMessage()))
	req := <-got
	require.Equal(t, "/services/T0/B0/x", req.path)
	require.Equal(t, "application/json", req.header.Get("Content-Type"))
	var payload map[string]any
	require.NoError(t, json.Unmarshal(req.body, &payload))
	require.Equal(t, ":bell: Session needs input\nfix-login is waiting for you", payload["text"])
	require.Equal(t, []any{
		map[string]any{"type": "header", "text": map[string]any{"type": "plain_text", "text": "Session needs input"}},
		map[string]any{"type": "section", "text": map[string]any{"type": "mrkdwn", "text": "fix-login is waiting for you"}},
		map[string]any{"type": "context", "elements": []any{map[string]any{
			"type": "mrkdwn", "text": "session `sess-1` · <https://zimmer.example/sessions/sess-1|open>",
		}}},
	}, payload["blocks"])
}

func TestHTTPFailuresAreClassifiedForRetries(t *testing.T) {
	t.Parallel()
	for status, retryable := range map[int]bool{
		http.StatusInternalServerError: true,
		http.StatusBadGateway:          true,
		http.StatusServiceUnavailable:  true,
		http.StatusTooManyRequests:     true,
		http.StatusBadRequest:          false,
		http.StatusUnauthorized:        false,
		http.StatusForbidden:           false,
		http.StatusNotFound:            false,
		http.StatusGone:                false,
	} {
		srv, _ := receiver(t, status)
		for _, s := range []sink.Sink{
			sink.Webhook{URL: srv.URL, Secret: []byte("k"), Client: srv.Client()},
			sink.Ntfy{ServerURL: srv.URL, Topic: "t", Client: srv.Client()},
			sink.Slack{WebhookURL: srv.URL, Client: srv.Client()},
		} {
			err := s.Send(context.Background(), pushMessage())
			require.Error(t, err, "%s on %d", s.Name(), status)
			var sinkErr *sink.Error
			require.ErrorAs(t, err, &sinkErr)
			require.Equal(t, s.Name(), sinkErr.Sink)
			require.Equal(t, retryable, sink.Retryable(err), "%s on %d: %v", s.Name(), status, err)
			require.Contains(t, err.Error(), strconv.Itoa(status))
		}
	}
}

func TestUnreachableAndSlowReceiversAreTransient(t *testing.T) {
	t.Parallel()
	closed := httptest.NewServer(http.NotFoundHandler())
	refusedURL := closed.URL
	closed.Close() // nothing listens there any more: connection refused

	err := sink.Webhook{URL: refusedURL, Secret: []byte("k")}.Send(context.Background(), pushMessage())
	require.Error(t, err)
	require.True(t, sink.Retryable(err), "connection refused: %v", err)

	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(slow.Close)
	t.Cleanup(func() { close(release) })
	err = sink.Slack{WebhookURL: slow.URL, Client: &http.Client{Timeout: 100 * time.Millisecond}}.Send(context.Background(), pushMessage())
	require.Error(t, err)
	require.True(t, sink.Retryable(err), "timeout: %v", err)

	require.False(t, sink.Retryable(nil))
	require.True(t, sink.Retryable(errors.New("unclassified")), "unknown failures are retried")
}
