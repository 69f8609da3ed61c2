package e2e_test

import (
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

	"github.com/stretchr/testify/require"
)

// slackWebAPI stands in for Slack's Web API on loopback, speaking its
// documented contract: chat.postMessage (a JSON body) and
// chat.getPermalink (query parameters), each authorised with the bot token
// as a Bearer header, each answering {"ok": …}.
type slackWebAPI struct {
	token string
	srv   *httptest.Server
	mu    sync.Mutex
	posts []slackPost
}

// slackPost is one chat.postMessage the fake received.
type slackPost struct {
	Channel  string `json:"channel"`
	ThreadTS string `json:"thread_ts"`
	Text     string `json:"text"`
}

func newSlackWebAPI(t *testing.T) *slackWebAPI {
	t.Helper()
	f := &slackWebAPI{token: "xoxb-e2e-" + strconv.FormatInt(time.Now().UnixNano(), 10)}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("Authorization") != "Bearer "+f.token {
			_, _ = io.WriteString(w, `{"ok":false,"error":"invalid_auth"}`)
			return
		}
		switch r.URL.Path {
		case "/api/chat.postMessage":
			var p slackPost
			if err := json.NewDecoder(r.Body).Decode(&p); err != nil || p.Channel == "" || p.Text == "" {
				_, _ = io.WriteString(w, `{"ok":false,"error":"invalid_arguments"}`)
				return
			}
			f.mu.Lock()
			f.posts = append(f.posts, p)
			f.mu.Unlock()
			_, _ = fmt.Fprintf(w, `{"ok":true,"channel":%q,"ts":"%d.000100"}`, p.Channel, time.Now().Unix())
		case "/api/chat.getPermalink":
			ch, ts := r.URL.Query().Get("channel"), r.URL.Query().Get("message_ts")
			if ch == "" || ts == "" {
				_, _ = io.WriteString(w, `{"ok":false,"error":"invalid_arguments"}`)
				return
			}
			_, _ = fmt.Fprintf(w, `{"ok":true,"channel":%q,"permalink":%q}`, ch, slackPermalink(ch, ts))
		default:
			_, _ = io.WriteString(w, `{"ok":false,"error":"unknown_method"}`)
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *slackWebAPI) url() string { return f.srv.URL + "/api/" }

// inThreadSaying returns the posts in channel's thread ts that say words.
func (f *slackWebAPI) inThreadSaying(channel, ts, words string) []slackPost {
	var out []slackPost
	for _, p := range f.inThread(channel, ts) {
		if strings.Contains(p.Text, words) {
			out = append(out, p)
		}
	}
	return out
}

// slackPermalink is the fake's permalink of channel's message ts, as Slack
// forms them.
func slackPermalink(channel, ts string) string {
	return "https://zimmer-e2e.slack.com/archives/" + channel + "/p" + strings.ReplaceAll(ts, ".", "")
}

// inThread returns the posts in channel's thread ts.
func (f *slackWebAPI) inThread(channel, ts string) []slackPost {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []slackPost
	for _, p := range f.posts {
		if p.Channel == channel && p.ThreadTS == ts {
			out = append(out, p)
		}
	}
	return out
}

// slackClient posts signed Events API requests to the gateway, as Slack
// does: X-Slack-Signature = "v0=" + hex HMAC-SHA256(secret,
// "v0:<timestamp>:<body>").
type slackClient struct {
	url    string
	secret string
}

// post sends body signed at sentAt (with secret, when not empty: the
// client's own otherwise) and any extra headers.
func (c slackClient) post(t *testing.T, body string, sentAt time.Time, secret string, extra map[string]string) (int, string) {
	t.Helper()
	if secret == "" {
		secret = c.secret
	}
	ts := strconv.FormatInt(sentAt.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("v0:" + ts + ":" + body))
	req, err := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Slack-Request-Timestamp", ts)
	req.Header.Set("X-Slack-Signature", "v0="+hex.EncodeToString(mac.Sum(nil)))
	for k, v := range extra {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// slackBot is the app's own bot user in the fixtures' authorizations.
const slackBot = "UZIMMERBOT"

// slackEvent is a fixture: an event_callback envelope with one message
// event, as the Events API delivers it.
type slackEvent struct {
	ID, User, Channel, ChannelType, Text, TS, ThreadTS, Subtype, BotID string
}

func (e slackEvent) body() string {
	ev := map[string]any{"type": "message", "user": e.User, "text": e.Text, "channel": e.Channel, "ts": e.TS,
		"channel_type": e.ChannelType, "event_ts": e.TS}
	if e.ThreadTS != "" {
		ev["thread_ts"] = e.ThreadTS
	}
	if e.Subtype != "" {
		ev["subtype"] = e.Subtype
	}
	if e.BotID != "" {
		ev["bot_id"] = e.BotID
	}
	b, _ := json.Marshal(map[string]any{
		"token": "legacy-verification-token", "team_id": "T0E2E", "api_app_id": "A0E2E", "type": "event_callback",
		"event_id": e.ID, "event_time": time.Now().Unix(), "event": ev,
		"authorizations": []map[string]any{{"team_id": "T0E2E", "user_id": slackBot, "is_bot": true}},
	})
	return string(b)
}

// slackStack is a stack with Slack on: the gateway verifies events with
// the client's secret, notification talks to the fake Web API, and the
// supervisor (the roster) opens with HTTP Basic.
type slackStack struct {
	*stack
	web   *slackWebAPI
	api   restClient
	slack slackClient
}

func newSlackStack(t *testing.T) slackStack {
	t.Helper()
	web := newSlackWebAPI(t)
	secret := "e2e-slack-signing-secret"
	s := newStackWith(t, stackOptions{turns: true, env: map[string][]string{
		"gateway":      {"SLACK_SIGNING_SECRET=" + secret, "ZIMMER_SUPERVISOR_USER=operator", "ZIMMER_SUPERVISOR_PASSWORD=e2e-supervisor-pass"},
		"notification": {"SLACK_BOT_TOKEN=" + web.token, "SLACK_API_URL=" + web.url()},
	}})
	return slackStack{stack: s, web: web,
		api:   restClient{base: "http://" + s.addr["gateway"], key: s.apiKey},
		slack: slackClient{url: "http://" + s.addr["gateway"] + "/slack/events", secret: secret}}
}

// supervisor calls the supervisor's routes as the operator.
func (ss slackStack) supervisor(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, ss.api.base+path, strings.NewReader(body))
	require.NoError(t, err)
	req.SetBasicAuth("operator", "e2e-supervisor-pass")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// slackSession is a session a Slack event started, read over REST with its
// human messages.
type slackSession struct {
	Session struct {
		ID      int64  `json:"id"`
		Slug    string `json:"slug"`
		Status  string `json:"status"`
		Genesis string `json:"genesis"`
		Prompt  string `json:"prompt"`
	} `json:"session"`
	HumanMessages []struct {
		Author         string `json:"author"`
		EntryPoint     string `json:"entry_point"`
		Content        string `json:"content"`
		SlackPermalink string `json:"slack_permalink"`
	} `json:"human_messages"`
}

// slackStarted waits for the session event id started (its slug is
// slack-<event id>) and returns it.
func (c restClient) slackStarted(t *testing.T, eventID string) slackSession {
	t.Helper()
	var got slackSession
	require.Eventually(t, func() bool {
		code, body := c.do(t, http.MethodGet, "/api/v1/sessions/slack-"+strings.ToLower(eventID), "")
		return code == http.StatusOK && json.Unmarshal([]byte(body), &got) == nil
	}, 60*time.Second, 200*time.Millisecond, "event %s never started a session", eventID)
	return got
}

// slackSessionByID reads session id with its human messages.
func (c restClient) slackSessionByID(t *testing.T, id int64) slackSession {
	t.Helper()
	code, body := c.do(t, http.MethodGet, fmt.Sprintf("/api/v1/sessions/%d", id), "")
	require.Equal(t, http.StatusOK, code, body)
	var got slackSession
	require.NoError(t, json.Unmarshal([]byte(body), &got), body)
	return got
}

// sessionsOfGenesis counts the sessions with genesis slack.
func (c restClient) slackSessionCount(t *testing.T) int {
	t.Helper()
	code, body := c.do(t, http.MethodGet, "/api/v1/sessions?genesis=slack&show_archived=true&per_page=100", "")
	require.Equal(t, http.StatusOK, code, body)
	var got struct {
		Sessions []struct {
			ID int64 `json:"id"`
		} `json:"sessions"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &got), body)
	return len(got.Sessions)
}

// TestSlack drives issue 26 on the real binaries with signed fixture
// payloads and a fake Web API on loopback: the endpoint refuses stale,
// badly signed and unsigned requests (an API key opens nothing), answers
// url_verification, and ignores bot messages; a channel message from an
// allowed, mapped user starts one session (once, though Slack retries it)
// whose human messages hold it with its permalink, and Zimmer answers in
// its thread with the link; a reply in the thread is a follow-up and
// another human message; an allowed but unmapped user starts a session and
// records nothing; the session's needs_input push lands in the thread; and
// an event acknowledged just before the gateway is killed (-9) is not
// lost.
func TestSlack(t *testing.T) {
	t.Parallel()
	ss := newSlackStack(t)
	s, web, api, slack, secret := ss.stack, ss.web, ss.api, ss.slack, ss.slack.secret
	repo := gitRepo(t)
	const (
		channel  = "C0E2EROOM"
		mapped   = "U0TADAS" // on the roster: Tadas
		allowed  = "U0GUEST" // allowed by the trigger, on no roster row
		stranger = "U0STRANGER"
	)
	supervisor := func(method, path, body string) (int, string) {
		t.Helper()
		return ss.supervisor(t, method, path, body)
	}

	// The roster: Tadas holds two Slack IDs; one ID never belongs to two
	// users, and the refusal names both.
	code, body := supervisor(http.MethodPatch, "/supervisor/users/tadasant", fmt.Sprintf(`{"slack_user_ids":[%q,"W0TADAS2"]}`, mapped))
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, mapped)
	require.Contains(t, body, "W0TADAS2")
	code, body = supervisor(http.MethodPatch, "/supervisor/users/juliehazz", `{"slack_user_ids":["W0TADAS2"]}`)
	require.Equal(t, http.StatusConflict, code, body)
	require.Contains(t, body, `already belongs to user \"tadasant\"`)
	require.Contains(t, body, `user \"juliehazz\"`)

	// The trigger, over REST: the channel, who may fire it, where its
	// sessions are made from.
	code, body = api.do(t, http.MethodPost, "/api/v1/slack/triggers",
		fmt.Sprintf(`{"channel":%q,"allowed_user_ids":[%q,%q],"git_root":%q}`, channel, mapped, allowed, repo))
	require.Equal(t, http.StatusOK, code, body)
	code, body = api.do(t, http.MethodGet, "/api/v1/slack/triggers", "")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, channel)

	t.Run("the endpoint's signature", func(t *testing.T) {
		ev := slackEvent{ID: "Ev0SIGNED", User: mapped, Channel: channel, ChannelType: "channel", Text: "@demo say signed", TS: "1700000001.000100"}
		code, body := slack.post(t, ev.body(), time.Now().Add(-6*time.Minute), "", nil)
		require.Equal(t, http.StatusUnauthorized, code, "a stale timestamp: %s", body)
		require.Contains(t, body, "five minutes")
		code, body = slack.post(t, ev.body(), time.Now(), "not-the-secret", nil)
		require.Equal(t, http.StatusUnauthorized, code, "a bad signature: %s", body)
		require.Contains(t, body, "signature does not match")

		// No API key, admin key or bearer opens it.
		for _, c := range []restClient{{base: api.base, key: s.apiKey}, {base: api.base, bearer: s.apiKey}} {
			code, body := c.do(t, http.MethodPost, "/slack/events", ev.body())
			require.Equal(t, http.StatusUnauthorized, code, body)
		}
		// And the signature opens nothing else.
		code, _ = slack.post(t, `{}`, time.Now(), "", nil)
		require.Equal(t, http.StatusOK, code)
		req, _ := http.NewRequest(http.MethodGet, api.base+"/api/v1/sessions", nil)
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write([]byte("v0:" + ts + ":"))
		req.Header.Set("X-Slack-Request-Timestamp", ts)
		req.Header.Set("X-Slack-Signature", "v0="+hex.EncodeToString(mac.Sum(nil)))
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "a Slack signature is no API key")

		code, body = slack.post(t, `{"token":"x","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}`, time.Now(), "", nil)
		require.Equal(t, http.StatusOK, code, body)
		require.JSONEq(t, `{"challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}`, body)
	})

	var started slackSession
	first := slackEvent{ID: "Ev0FIRST01", User: mapped, Channel: channel, ChannelType: "channel", Text: "@demo say ready for review", TS: "1700000100.000200"}
	t.Run("an allowed, mapped user's message starts one session, recorded with its permalink", func(t *testing.T) {
		code, body := slack.post(t, first.body(), time.Now(), "", nil)
		require.Equal(t, http.StatusOK, code, body)
		// Slack retries (it did not hear the answer in time): the same
		// event id, acknowledged, not started twice.
		code, body = slack.post(t, first.body(), time.Now(), "", map[string]string{"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"})
		require.Equal(t, http.StatusOK, code, body)

		started = api.slackStarted(t, first.ID)
		require.Equal(t, "slack", started.Session.Genesis)
		require.Equal(t, first.Text, started.Session.Prompt, "the message is the prompt")
		require.Eventually(t, func() bool {
			return len(api.slackSessionByID(t, started.Session.ID).HumanMessages) == 1
		}, 30*time.Second, 200*time.Millisecond, "the message was never recorded")
		got := api.slackSessionByID(t, started.Session.ID)
		require.Equal(t, "tadasant", got.HumanMessages[0].Author)
		require.Equal(t, "slack.channel_message", got.HumanMessages[0].EntryPoint)
		require.Equal(t, first.Text, got.HumanMessages[0].Content)
		require.Equal(t, slackPermalink(channel, first.TS), got.HumanMessages[0].SlackPermalink)

		// Zimmer answered in the message's thread with the session's link.
		require.Eventually(t, func() bool { return len(web.inThread(channel, first.TS)) > 0 }, 30*time.Second, 100*time.Millisecond,
			"no reply in the thread")
		reply := web.inThread(channel, first.TS)[0]
		require.Contains(t, reply.Text, fmt.Sprintf("session #%d", started.Session.ID))
		require.Contains(t, reply.Text, fmt.Sprintf("http://%s/console/sessions/%d", s.addr["gateway"], started.Session.ID))
		require.Equal(t, 1, api.slackSessionCount(t), "one session, though Slack delivered the event twice")
	})

	t.Run("its needs_input push lands in the thread", func(t *testing.T) {
		api.waitStatus(t, started.Session.ID, "needs_input")
		require.Eventually(t, func() bool {
			for _, p := range web.inThread(channel, first.TS) {
				if strings.Contains(p.Text, "needs your input") {
					return true
				}
			}
			return false
		}, 60*time.Second, 200*time.Millisecond, "the needs_input push never reached the thread: %+v", web.inThread(channel, first.TS))
	})

	t.Run("a reply in the thread is a follow-up and another human message", func(t *testing.T) {
		reply := slackEvent{ID: "Ev0REPLY01", User: mapped, Channel: channel, ChannelType: "channel",
			Text: "@demo say follow-up from the thread", TS: "1700000200.000300", ThreadTS: first.TS}
		code, body := slack.post(t, reply.body(), time.Now(), "", nil)
		require.Equal(t, http.StatusOK, code, body)
		require.Eventually(t, func() bool {
			return len(api.slackSessionByID(t, started.Session.ID).HumanMessages) == 2
		}, 30*time.Second, 200*time.Millisecond, "the reply was never recorded")
		got := api.slackSessionByID(t, started.Session.ID)
		require.Equal(t, reply.Text, got.HumanMessages[1].Content)
		require.Equal(t, slackPermalink(channel, reply.TS), got.HumanMessages[1].SlackPermalink)
		// The follow-up ran as the session's next turn.
		require.Eventually(t, func() bool {
			return getSession(t, api, started.Session.ID)["needs_input_count"] == float64(2)
		}, 60*time.Second, 200*time.Millisecond, "the follow-up's turn never ran")
		// The thread was told, once though Slack delivered the reply
		// twice: the session was idle, so it is its turn now.
		code, body = slack.post(t, reply.body(), time.Now(), "", map[string]string{"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"})
		require.Equal(t, http.StatusOK, code, body)
		ss.waitProcessed(t, reply.ID)
		require.Len(t, web.inThreadSaying(channel, first.TS, "turn now"), 1, "%+v", web.inThread(channel, first.TS))
		require.Equal(t, 1, api.slackSessionCount(t), "a reply starts no session")

		// Someone the trigger does not allow: nothing.
		intruder := slackEvent{ID: "Ev0INTRUDE", User: stranger, Channel: channel, ChannelType: "channel",
			Text: "@demo say let me in", TS: "1700000250.000300", ThreadTS: first.TS}
		code, body = slack.post(t, intruder.body(), time.Now(), "", nil)
		require.Equal(t, http.StatusOK, code, body)
	})

	t.Run("bots, edits and deletions are ignored", func(t *testing.T) {
		for _, ev := range []slackEvent{
			{ID: "Ev0BOT0001", User: mapped, BotID: "B0ZIMMER", Subtype: "bot_message", Channel: channel, ChannelType: "channel", Text: "@demo say bot", TS: "1700000300.000100"},
			{ID: "Ev0EDIT001", User: mapped, Subtype: "message_changed", Channel: channel, ChannelType: "channel", Text: "@demo say edit", TS: "1700000301.000100"},
			{ID: "Ev0DEL0001", User: mapped, Subtype: "message_deleted", Channel: channel, ChannelType: "channel", Text: "@demo say gone", TS: "1700000302.000100"},
		} {
			code, body := slack.post(t, ev.body(), time.Now(), "", nil)
			require.Equal(t, http.StatusOK, code, body)
		}
	})

	t.Run("an allowed but unmapped user starts a session and records nothing", func(t *testing.T) {
		ev := slackEvent{ID: "Ev0GUEST01", User: allowed, Channel: channel, ChannelType: "channel", Text: "@demo say from a guest", TS: "1700000400.000100"}
		code, body := slack.post(t, ev.body(), time.Now(), "", nil)
		require.Equal(t, http.StatusOK, code, body)
		guest := api.slackStarted(t, ev.ID)
		require.Equal(t, "slack", guest.Session.Genesis)
		// The reply in its thread comes after the capture step, so once it
		// is there, the capture has been decided.
		require.Eventually(t, func() bool { return len(web.inThread(channel, ev.TS)) > 0 }, 30*time.Second, 100*time.Millisecond)
		require.Empty(t, api.slackSessionByID(t, guest.Session.ID).HumanMessages, "an ID mapping to nobody records nothing")
	})

	t.Run("an event acknowledged just before kill -9 of the gateway is not lost", func(t *testing.T) {
		ev := slackEvent{ID: "Ev0KILLED1", User: mapped, Channel: channel, ChannelType: "channel", Text: "@demo say survived", TS: "1700000500.000100"}
		code, body := slack.post(t, ev.body(), time.Now(), "", nil)
		require.Equal(t, http.StatusOK, code, body)
		s.kill("gateway")
		s.start("gateway")
		s.waitGateway()
		got := api.slackStarted(t, ev.ID)
		require.Equal(t, "slack", got.Session.Genesis)
	})

	// Everything above, counted once more: the first message, the guest's
	// and the one that survived the kill; bots, edits, deletions, replies
	// and the intruder started nothing.
	require.Equal(t, 3, api.slackSessionCount(t))
}
