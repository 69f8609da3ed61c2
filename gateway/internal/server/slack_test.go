package server_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/zimmerhq/zimmer/gateway/internal/mcp"
	notificationv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/notification/v1"
	"github.com/zimmerhq/zimmer/services/platform/principal"
)

const slackSecret = "8f742231b10e8888abcd99yyyzzz85a5"

// slackEventBody is an event_callback fixture as the Events API sends it.
const slackEventBody = `{"token":"x","team_id":"T1","api_app_id":"A1","type":"event_callback","event_id":"Ev0PV52K25","event_time":1700000000,` +
	`"event":{"type":"message","user":"U1","text":"hello","channel":"C1","channel_type":"channel","ts":"1700000000.000100"},` +
	`"authorizations":[{"team_id":"T1","user_id":"UBOT","is_bot":true}]}`

// signedSlack returns the headers of body signed with secret at sentAt, as
// Slack signs: v0=hex(HMAC-SHA256(secret, "v0:<ts>:<body>")).
func signedSlack(secret, body string, sentAt time.Time) []string {
	ts := strconv.FormatInt(sentAt.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("v0:" + ts + ":" + body))
	return []string{"X-Slack-Request-Timestamp", ts, "X-Slack-Signature", "v0=" + hex.EncodeToString(mac.Sum(nil))}
}

// Without SLACK_SIGNING_SECRET there is no Slack endpoint: 404, and the
// notification service is never called.
func TestSlackEventsAnswer404WithoutTheSigningSecret(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	resp := b.do(t, http.MethodPost, "/slack/events", slackEventBody, signedSlack(slackSecret, slackEventBody, time.Now())...)
	require.Equal(t, http.StatusNotFound, resp.status, string(resp.body))
	require.Empty(t, b.notifications.Calls("AcceptSlackEvent"))
}

// The endpoint verifies Slack's signature before anything: stale, forged,
// unsigned and key-bearing requests are 401 and reach no service; a
// url_verification is answered with its challenge; an event_callback is
// handed to the notification service as the service "slack" acting as
// itself (no client principal), and acknowledged only once it is stored.
func TestSlackEventsVerifyThenAccept(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{slackSecret: slackSecret})

	for name, header := range map[string][]string{
		"stale":           signedSlack(slackSecret, slackEventBody, time.Now().Add(-5*time.Minute-2*time.Second)),
		"from the future": signedSlack(slackSecret, slackEventBody, time.Now().Add(6*time.Minute)),
		"another secret":  signedSlack("not-the-secret", slackEventBody, time.Now()),
		"unsigned":        nil,
		"an API key":      {"X-API-Key", testKey},
		"an admin key":    {"Authorization", "Bearer " + adminKey},
		"not v0":          {"X-Slack-Request-Timestamp", strconv.FormatInt(time.Now().Unix(), 10), "X-Slack-Signature", "v1=00"},
	} {
		resp := b.do(t, http.MethodPost, "/slack/events", slackEventBody, header...)
		require.Equal(t, http.StatusUnauthorized, resp.status, "%s: %s", name, resp.body)
		require.NotEmpty(t, resp.errorText(t), name)
	}
	// A body changed after signing.
	header := signedSlack(slackSecret, slackEventBody, time.Now())
	resp := b.do(t, http.MethodPost, "/slack/events", strings.Replace(slackEventBody, "hello", "rm -rf", 1), header...)
	require.Equal(t, http.StatusUnauthorized, resp.status, string(resp.body))
	require.Empty(t, b.notifications.Calls("AcceptSlackEvent"), "nothing unverified reaches a service")

	// The signature opens nothing else.
	resp = b.do(t, http.MethodGet, "/api/v1/notifications", "", signedSlack(slackSecret, "", time.Now())...)
	require.Equal(t, http.StatusUnauthorized, resp.status, string(resp.body))

	challenge := `{"token":"Jhj5dZrVaK7ZwHHjRyZWjbDl","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}`
	resp = b.do(t, http.MethodPost, "/slack/events", challenge, signedSlack(slackSecret, challenge, time.Now())...)
	require.Equal(t, http.StatusOK, resp.status, string(resp.body))
	require.Equal(t, "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P", resp.json(t)["challenge"])
	require.Empty(t, b.notifications.Calls("AcceptSlackEvent"))

	b.notifications.Answer("AcceptSlackEvent", &notificationv1.AcceptSlackEventResponse{Accepted: true}, nil)
	resp = b.do(t, http.MethodPost, "/slack/events", slackEventBody,
		append(signedSlack(slackSecret, slackEventBody, time.Now()), "X-Slack-Retry-Num", "2", "X-Slack-Retry-Reason", "http_timeout")...)
	require.Equal(t, http.StatusOK, resp.status, string(resp.body))
	calls := b.notifications.Calls("AcceptSlackEvent")
	require.Len(t, calls, 1)
	require.True(t, proto.Equal(&notificationv1.AcceptSlackEventRequest{EventId: "Ev0PV52K25", Payload: []byte(slackEventBody), RetryNum: 2}, calls[0].Request))
	require.Equal(t, principal.Principal{Kind: principal.Service, Service: "slack"}, calls[0].Principal,
		"the boundary calls as itself, forwarding no client")

	// Not stored: not acknowledged, so Slack retries it.
	b.notifications.Answer("AcceptSlackEvent", nil, status.Error(codes.Unavailable, "the database is unavailable; retry shortly"))
	resp = b.do(t, http.MethodPost, "/slack/events", slackEventBody, signedSlack(slackSecret, slackEventBody, time.Now())...)
	require.Equal(t, http.StatusServiceUnavailable, resp.status, string(resp.body))
	// A payload the service refuses is not worth Slack's retries.
	b.notifications.Answer("AcceptSlackEvent", nil, status.Error(codes.InvalidArgument, `event_id: "x" is not a Slack event id`))
	resp = b.do(t, http.MethodPost, "/slack/events", slackEventBody, signedSlack(slackSecret, slackEventBody, time.Now())...)
	require.Equal(t, http.StatusBadRequest, resp.status, string(resp.body))

	// Only POST.
	resp = b.do(t, http.MethodGet, "/slack/events", "", signedSlack(slackSecret, "", time.Now())...)
	require.Equal(t, http.StatusMethodNotAllowed, resp.status, string(resp.body))
}

// The Slack triggers over REST and MCP: thin calls into the notification
// service, with the caller's principal forwarded (the service refuses a
// session credential: the methods name no session scope).
func TestSlackTriggersOverRESTAndMCP(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	trigger := &notificationv1.SlackTrigger{Id: 7, Channel: "C1", AllowedUserIds: []string{"U1"}, Prefix: "zimmer:", GitRoot: "/repo"}
	b.notifications.Answer("CreateSlackTrigger", &notificationv1.CreateSlackTriggerResponse{SlackTrigger: trigger}, nil)
	resp := b.call(t, http.MethodPost, "/api/v1/slack/triggers", `{"channel":"C1","allowed_user_ids":["U1"],"prefix":"zimmer:","git_root":"/repo"}`)
	require.Equal(t, http.StatusOK, resp.status, string(resp.body))
	require.Equal(t, "C1", resp.json(t)["slack_trigger"].(map[string]any)["channel"])
	calls := b.notifications.Calls("CreateSlackTrigger")
	require.Len(t, calls, 1)
	require.True(t, proto.Equal(&notificationv1.CreateSlackTriggerRequest{Channel: "C1", AllowedUserIds: []string{"U1"}, Prefix: "zimmer:", GitRoot: "/repo"}, calls[0].Request))
	require.Equal(t, principal.Operator, calls[0].Principal.Kind)

	b.notifications.Answer("ListSlackTriggers", &notificationv1.ListSlackTriggersResponse{SlackTriggers: []*notificationv1.SlackTrigger{trigger}}, nil)
	resp = b.call(t, http.MethodGet, "/api/v1/slack/triggers", "")
	require.Equal(t, http.StatusOK, resp.status, string(resp.body))
	require.Len(t, resp.json(t)["slack_triggers"], 1)

	resp = b.call(t, http.MethodDelete, "/api/v1/slack/triggers/7", "")
	require.Equal(t, http.StatusOK, resp.status, string(resp.body))
	require.True(t, proto.Equal(&notificationv1.DeleteSlackTriggerRequest{TriggerId: 7}, b.lastNotificationRequest(t, "DeleteSlackTrigger")))

	c, err := mcpClient(t, b.url+"/mcp?tool_groups=triggers", testKey)
	require.NoError(t, err)
	res, err := c.CallTool(t.Context(), callRequest("manage_slack_triggers", map[string]any{"action": "list"}))
	require.NoError(t, err)
	require.False(t, res.IsError, textOf(res))
	require.Contains(t, textOf(res), `- #7 channel C1, allowed: U1, prefix "zimmer:" → /repo`)
	res, err = c.CallTool(t.Context(), callRequest("manage_slack_triggers", map[string]any{
		"action": "create", "channel": "C1", "allowed_user_ids": []string{"U1"}, "prefix": "zimmer:", "git_root": "/repo",
	}))
	require.NoError(t, err)
	require.False(t, res.IsError, textOf(res))
	require.Contains(t, textOf(res), "## "+mcp.OutcomeSlackTriggerCreated+"\n\n- **id:** 7\n\n- #7 channel C1")
	res, err = c.CallTool(t.Context(), callRequest("manage_slack_triggers", map[string]any{"action": "delete"}))
	require.NoError(t, err)
	require.True(t, res.IsError)
	require.Contains(t, textOf(res), "delete needs trigger_id")
}
