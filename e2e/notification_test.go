package e2e_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	notificationv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/notification/v1"
	"github.com/zimmerhq/zimmer/services/platform/principal"
)

// needsInputDebounce is the stack's NOTIFICATION_NEEDS_INPUT_DEBOUNCE: how
// long a pause lasts before it is pushed.
const needsInputDebounce = 2 * time.Second

// webhookSink stands in for the operator's webhook receiver
// (NOTIFICATION_SINKS=log,webhook): it keeps every delivery and whether its
// signature held, checked as the notification service documents it for
// receivers (X-Zimmer-Signature: sha256=<hex HMAC-SHA256(secret,
// X-Zimmer-Timestamp + "." + raw body)>, the timestamp close to now).
type webhookSink struct {
	secret []byte
	srv    *httptest.Server
	mu     sync.Mutex
	got    []webhookDelivery
}

// webhookDelivery is one received push: the sink's JSON body and whether
// it verified.
type webhookDelivery struct {
	Kind      string `json:"kind"`
	Title     string `json:"title"`
	Body      string `json:"body"`
	SessionID string `json:"session_id"`
	DedupKey  string `json:"dedup_key"`
	// VerifyErr says why the signature did not hold ("" when it did).
	VerifyErr string `json:"-"`
}

func newWebhookSink(t *testing.T) *webhookSink {
	t.Helper()
	w := &webhookSink{secret: []byte("e2e-webhook-secret-" + strconv.FormatInt(time.Now().UnixNano(), 10))}
	w.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		var d webhookDelivery
		if err := json.Unmarshal(body, &d); err != nil {
			d.VerifyErr = "body is not JSON: " + err.Error()
		}
		if err := verifySignature(w.secret, r.Header, body, time.Now()); err != nil {
			d.VerifyErr = err.Error()
		}
		w.mu.Lock()
		w.got = append(w.got, d)
		w.mu.Unlock()
		rw.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(w.srv.Close)
	return w
}

func (w *webhookSink) url() string { return w.srv.URL + "/zimmer" }

// deliveries are the pushes received about session id (as the payload
// names it), oldest first.
func (w *webhookSink) deliveries(id int64) []webhookDelivery {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []webhookDelivery
	for _, d := range w.got {
		if d.SessionID == strconv.FormatInt(id, 10) {
			out = append(out, d)
		}
	}
	return out
}

// verifySignature is the receiver's check the sink documents (the same as
// the notification service's sink.VerifyWebhook, which an e2e test cannot
// import): the MAC over timestamp "." raw body, compared in constant time,
// and a timestamp within a minute of now.
func verifySignature(secret []byte, h http.Header, body []byte, now time.Time) error {
	ts := h.Get("X-Zimmer-Timestamp")
	sent, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("bad X-Zimmer-Timestamp %q", ts)
	}
	sig, ok := strings.CutPrefix(h.Get("X-Zimmer-Signature"), "sha256=")
	if !ok {
		return fmt.Errorf("X-Zimmer-Signature %q lacks sha256=", h.Get("X-Zimmer-Signature"))
	}
	got, err := hex.DecodeString(sig)
	if err != nil {
		return fmt.Errorf("X-Zimmer-Signature is not hex: %w", err)
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	if !hmac.Equal(got, mac.Sum(nil)) {
		return fmt.Errorf("signature does not match the body")
	}
	if age := now.Sub(time.Unix(sent, 0)); age > time.Minute || age < -time.Minute {
		return fmt.Errorf("timestamp is %s away from now", age)
	}
	return nil
}

// notification is one entry of GET /api/v1/notifications.
type notification struct {
	ID        int64  `json:"id"`
	Type      string `json:"type"`
	SessionID int64  `json:"session_id"`
	Title     string `json:"title"`
	Body      string `json:"body"`
	Marker    int64  `json:"marker"`
	Read      bool   `json:"read"`
	Dismissed bool   `json:"dismissed"`
	Stale     bool   `json:"stale"`
	PushedAt  string `json:"pushed_at"`
}

// notifications lists the inbox over REST with query (e.g.
// "session_id=3&type=needs_input"), and its unread count.
func (c restClient) notifications(t *testing.T, query string) ([]notification, int) {
	t.Helper()
	code, body := c.do(t, http.MethodGet, "/api/v1/notifications?"+query, "")
	require.Equal(t, http.StatusOK, code, body)
	var resp struct {
		Notifications []notification `json:"notifications"`
		UnreadCount   int            `json:"unread_count"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &resp), body)
	return resp.Notifications, resp.UnreadCount
}

// TestNotifications drives issue 14 on the real binaries with the demo
// agent: a session opted in (push_notifications, off by default since
// issue 23) that ends its turn is pushed to the operator once the
// pause has lasted the debounce — one notification in the inbox (REST and
// MCP) and one signed webhook delivery — and a flap (a follow-up right
// after the pause, then a pause) still gives one, for the latest pause; an
// agent's send_push_notification from its own credential arrives as its
// session's, and a session that opted out of pushes gets no needs-input
// push; read, dismiss and read_all change the inbox; the alerts page lists
// an alert with its repeat count.
func TestNotifications(t *testing.T) {
	t.Parallel()
	s := newStackRunning(t, true)
	api := restClient{base: "http://" + s.addr["gateway"], key: s.apiKey}
	repo := gitRepo(t)
	// settled is long enough after a push for a second one to have come,
	// were there one: the debounce again, and slack for the sinks.
	settled := needsInputDebounce + 3*time.Second

	var pushed notification // the needs-input push of "a pause is pushed once", for the inbox's actions
	t.Run("pushes", func(t *testing.T) {
		t.Run("a pause is pushed once, after the debounce", func(t *testing.T) {
			t.Parallel()
			id := api.createPushed(t, repo, "@demo say ready for review")
			api.waitStatus(t, id, "needs_input")
			query := fmt.Sprintf("session_id=%d&type=needs_input&include_dismissed=true", id)

			var list []notification
			require.Eventually(t, func() bool {
				list, _ = api.notifications(t, query)
				return len(list) > 0
			}, 30*time.Second, 200*time.Millisecond, "no needs_input notification for session %d", id)
			time.Sleep(settled)
			list, _ = api.notifications(t, query)
			require.Len(t, list, 1, "one push per pause: %+v", list)
			pushed = list[0]
			require.Equal(t, id, pushed.SessionID)
			require.EqualValues(t, 1, pushed.Marker, "the pause it is for: the session's first needs_input")
			require.False(t, pushed.Read)
			require.False(t, pushed.Stale)
			require.NotEmpty(t, pushed.Title)

			require.Eventually(t, func() bool { return len(s.webhook.deliveries(id)) > 0 }, 20*time.Second, 100*time.Millisecond,
				"the webhook never received session %d's push", id)
			got := s.webhook.deliveries(id)
			require.Len(t, got, 1, "one delivery: %+v", got)
			require.Empty(t, got[0].VerifyErr, "the signature holds")
			require.Equal(t, "push", got[0].Kind)
			require.Equal(t, pushed.Title, got[0].Title)

			// The same inbox over MCP.
			res := callTool(t, mcpConnect(t, s, "?tool_groups=notifications"), "get_notifications",
				map[string]any{"session_id": id, "type": "needs_input"})
			require.False(t, res.IsError, text(res))
			require.Contains(t, text(res), fmt.Sprintf("- #%d [needs_input] session #%d — ", pushed.ID, id))
			require.Equal(t, 1, strings.Count(text(res), "[needs_input]"), text(res))
		})

		t.Run("a flap is pushed once, for the latest pause", func(t *testing.T) {
			t.Parallel()
			id := api.createPushed(t, repo, "@demo say first pause")
			api.waitStatus(t, id, "needs_input")
			code, body := api.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/follow_up", id), `{"prompt":"@demo say second pause"}`)
			require.Equal(t, http.StatusOK, code, "delivered at once to the idle session: %s", body)
			require.Eventually(t, func() bool {
				got := getSession(t, api, id)
				return got["status"] == "needs_input" && got["needs_input_count"] == float64(2)
			}, 60*time.Second, 100*time.Millisecond, "the follow-up's turn never ended")

			query := fmt.Sprintf("session_id=%d&type=needs_input&include_dismissed=true", id)
			var list []notification
			require.Eventually(t, func() bool {
				list, _ = api.notifications(t, query)
				return len(list) > 0
			}, 30*time.Second, 200*time.Millisecond, "no needs_input notification for session %d", id)
			time.Sleep(settled)
			list, _ = api.notifications(t, query)
			require.Len(t, list, 1, "a flap is one push: %+v", list)
			require.EqualValues(t, 2, list[0].Marker, "for the pause that lasted")
			require.Len(t, s.webhook.deliveries(id), 1)
		})

		t.Run("an agent's push is its session's, and an opted-out pause is not pushed", func(t *testing.T) {
			t.Parallel()
			prompt := `@demo mcp send_push_notification {"title":"PR is ready","body":"please review #12"}` + "\n@demo say sent"
			body, err := json.Marshal(map[string]any{"prompt": prompt, "git_root": repo, "branch": "main", "push_notifications": false})
			require.NoError(t, err)
			code, resp := api.do(t, http.MethodPost, "/api/v1/sessions", string(body))
			require.Equal(t, http.StatusCreated, code, resp)
			var created struct{ Session map[string]any }
			require.NoError(t, json.Unmarshal([]byte(resp), &created))
			require.Equal(t, false, created.Session["push_notifications"])
			id := int64(created.Session["id"].(float64))
			api.waitStatus(t, id, "needs_input")

			var list []notification
			if !assert.Eventually(t, func() bool {
				list, _ = api.notifications(t, fmt.Sprintf("session_id=%d&type=agent_message", id))
				return len(list) > 0
			}, 30*time.Second, 200*time.Millisecond) {
				// The tool's answer is in the transcript: say it, so a
				// failure shows whether the call failed or its push was lost.
				t.Fatalf("the agent's push never arrived; session %d's transcript:\n%s", id, transcriptRaw(t, api, id))
			}
			require.Len(t, list, 1)
			msg := list[0]
			require.Equal(t, id, msg.SessionID, "attributed to the agent's own session")
			require.Equal(t, "PR is ready", msg.Title)
			require.Equal(t, "please review #12", msg.Body)
			require.Eventually(t, func() bool { return len(s.webhook.deliveries(id)) > 0 }, 20*time.Second, 100*time.Millisecond)

			time.Sleep(settled)
			list, _ = api.notifications(t, fmt.Sprintf("session_id=%d&type=needs_input&include_dismissed=true", id))
			require.Empty(t, list, "push_notifications false: the pause is not pushed")
			got := s.webhook.deliveries(id)
			require.Len(t, got, 1, "only the agent's message reached the webhook: %+v", got)
			require.Contains(t, got[0].Title, "PR is ready", "the agent's title (a sink may name the session before it)")
			require.Equal(t, "please review #12", got[0].Body)
			require.Empty(t, got[0].VerifyErr)

			// Turned back on, the next pause is pushed.
			code, resp = api.do(t, http.MethodPatch, fmt.Sprintf("/api/v1/sessions/%d", id), `{"push_notifications":true}`)
			require.Equal(t, http.StatusOK, code, resp)
			require.Contains(t, timeline(t, api, id, "note"), "[Session] updated push_notifications (by admin key …"+principal.KeyHint(s.apiKey)+")")
			code, resp = api.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/follow_up", id), `{"prompt":"@demo say again"}`)
			require.Equal(t, http.StatusOK, code, resp)
			require.Eventually(t, func() bool {
				list, _ = api.notifications(t, fmt.Sprintf("session_id=%d&type=needs_input", id))
				return len(list) == 1 && list[0].Marker == 2
			}, 60*time.Second, 200*time.Millisecond, "the pause after opting in was never pushed: %+v", list)
		})
	})

	t.Run("read, dismiss and read_all", func(t *testing.T) {
		require.NotZero(t, pushed.ID, "the push above is this test's notification")
		_, unread := api.notifications(t, "")
		require.Positive(t, unread)

		code, body := api.do(t, http.MethodPost, fmt.Sprintf("/api/v1/notifications/%d/read", pushed.ID), "{}")
		require.Equal(t, http.StatusOK, code, body)
		var one struct{ Notification notification }
		require.NoError(t, json.Unmarshal([]byte(body), &one))
		require.True(t, one.Notification.Read)
		_, after := api.notifications(t, "")
		require.Equal(t, unread-1, after, "one fewer unread")

		code, body = api.do(t, http.MethodPost, fmt.Sprintf("/api/v1/notifications/%d/dismiss", pushed.ID), "{}")
		require.Equal(t, http.StatusOK, code, body)
		list, _ := api.notifications(t, fmt.Sprintf("session_id=%d", pushed.SessionID))
		for _, n := range list {
			require.NotEqual(t, pushed.ID, n.ID, "a dismissed notification leaves the default view")
		}
		list, _ = api.notifications(t, fmt.Sprintf("session_id=%d&include_dismissed=true", pushed.SessionID))
		require.Contains(t, ids(list), pushed.ID)

		code, body = api.do(t, http.MethodPost, "/api/v1/notifications/read_all", "{}")
		require.Equal(t, http.StatusOK, code, body)
		var all struct{ Marked int }
		require.NoError(t, json.Unmarshal([]byte(body), &all))
		require.GreaterOrEqual(t, all.Marked, after, "every unread one")
		_, unread = api.notifications(t, "")
		require.Zero(t, unread)

		code, body = api.do(t, http.MethodPost, "/api/v1/notifications/987654/read", "{}")
		require.Equal(t, http.StatusNotFound, code, body)
	})

	t.Run("the alerts page counts repeats", func(t *testing.T) {
		alerts := notificationv1.NewNotificationServiceClient(s.dial("notification", s.asService("queue")))
		for range 3 {
			_, err := alerts.RaiseAlert(context.Background(), &notificationv1.RaiseAlertRequest{DedupKey: "e2e_notifications", Summary: "raised by the e2e test"})
			require.NoError(t, err)
		}
		code, body := api.do(t, http.MethodGet, "/api/v1/alerts", "")
		require.Equal(t, http.StatusOK, code, body)
		var resp struct {
			Alerts []struct {
				DedupKey    string `json:"dedup_key"`
				Summary     string `json:"summary"`
				Occurrences int    `json:"occurrences"`
			}
		}
		require.NoError(t, json.Unmarshal([]byte(body), &resp), body)
		var found bool
		for _, a := range resp.Alerts {
			if a.DedupKey == "e2e_notifications" {
				found = true
				require.Equal(t, 3, a.Occurrences, "one alert, raised three times")
				require.Equal(t, "raised by the e2e test", a.Summary)
			}
		}
		require.True(t, found, body)

		res := callTool(t, mcpConnect(t, s, "?tool_groups=sessions"), "get_alerts", map[string]any{})
		require.False(t, res.IsError, text(res))
		require.Contains(t, text(res), "`e2e_notifications` ×3 — raised by the e2e test")
	})
}

func ids(list []notification) []int64 {
	out := make([]int64, len(list))
	for i, n := range list {
		out[i] = n.ID
	}
	return out
}
