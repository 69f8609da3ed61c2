package slack_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/notification/internal/app"
	"github.com/zimmerhq/zimmer/services/notification/internal/app/apptest"
	"github.com/zimmerhq/zimmer/services/notification/internal/domain"
	"github.com/zimmerhq/zimmer/services/notification/internal/sink"
	"github.com/zimmerhq/zimmer/services/notification/internal/slack"
)

// webAPI is a Web API answering what answer says for each request it
// records.
func webAPI(t *testing.T, answer func(r *http.Request, body []byte) (int, string)) (*slack.Client, *[]*http.Request) {
	t.Helper()
	var got []*http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got = append(got, r)
		code, resp := answer(r, body)
		w.WriteHeader(code)
		_, _ = io.WriteString(w, resp)
	}))
	t.Cleanup(srv.Close)
	return &slack.Client{BaseURL: srv.URL + "/api/", Token: "xoxb-secret"}, &got
}

func TestPostMessageSpeaksTheWebAPI(t *testing.T) {
	t.Parallel()
	var sent map[string]string
	c, got := webAPI(t, func(r *http.Request, body []byte) (int, string) {
		require.NoError(t, json.Unmarshal(body, &sent))
		return http.StatusOK, `{"ok":true,"channel":"C1","ts":"1.2"}`
	})
	require.NoError(t, c.PostMessage(context.Background(), "C1", "1700000000.000100", "hello"))
	r := (*got)[0]
	require.Equal(t, "/api/chat.postMessage", r.URL.Path)
	require.Equal(t, http.MethodPost, r.Method)
	require.Equal(t, "Bearer xoxb-secret", r.Header.Get("Authorization"))
	require.Equal(t, "application/json; charset=utf-8", r.Header.Get("Content-Type"))
	require.Equal(t, map[string]string{"channel": "C1", "thread_ts": "1700000000.000100", "text": "hello"}, sent)
}

func TestPermalinkSpeaksTheWebAPI(t *testing.T) {
	t.Parallel()
	c, got := webAPI(t, func(*http.Request, []byte) (int, string) {
		return http.StatusOK, `{"ok":true,"channel":"C1","permalink":"https://acme.slack.com/archives/C1/p1700000000000100"}`
	})
	link, err := c.Permalink(context.Background(), "C1", "1700000000.000100")
	require.NoError(t, err)
	require.Equal(t, "https://acme.slack.com/archives/C1/p1700000000000100", link)
	require.Equal(t, "/api/chat.getPermalink", (*got)[0].URL.Path)
	require.Equal(t, "C1", (*got)[0].URL.Query().Get("channel"))
	require.Equal(t, "1700000000.000100", (*got)[0].URL.Query().Get("message_ts"))
}

// A failure is permanent only when retrying cannot help, and no error
// carries the token.
func TestWebAPIFailuresAreClassified(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		code      int
		body      string
		permanent bool
	}{
		"rate limited":      {http.StatusTooManyRequests, ``, false},
		"down":              {http.StatusBadGateway, ``, false},
		"ratelimited":       {http.StatusOK, `{"ok":false,"error":"ratelimited"}`, false},
		"internal_error":    {http.StatusOK, `{"ok":false,"error":"internal_error"}`, false},
		"channel_not_found": {http.StatusOK, `{"ok":false,"error":"channel_not_found"}`, true},
		"invalid_auth":      {http.StatusOK, `{"ok":false,"error":"invalid_auth"}`, true},
		"not JSON":          {http.StatusOK, `<html>`, true},
		"not found":         {http.StatusNotFound, ``, true},
	} {
		c, _ := webAPI(t, func(*http.Request, []byte) (int, string) { return tc.code, tc.body })
		err := c.PostMessage(context.Background(), "C1", "1.2", "hi")
		require.Error(t, err, name)
		require.Equal(t, tc.permanent, slack.Permanent(err), "%s: %v", name, err)
		require.NotContains(t, err.Error(), "xoxb-secret", name)
	}
}

// The thread sink posts a Slack-started session's needs_input and failure
// pushes into its thread, and nothing else.
func TestThreadSinkPostsOnlyWhatAsksForAPerson(t *testing.T) {
	t.Parallel()
	var posts []map[string]string
	c, _ := webAPI(t, func(_ *http.Request, body []byte) (int, string) {
		var p map[string]string
		require.NoError(t, json.Unmarshal(body, &p))
		posts = append(posts, p)
		return http.StatusOK, `{"ok":true}`
	})
	threads := apptest.NewSlack()
	ctx := context.Background()
	require.NoError(t, threads.BindThread(ctx, domain.SlackThread{ChannelID: "C1", ThreadTS: "1700000000.000100", SessionID: 7, TriggerID: 1}, time.Now()))
	s := slack.ThreadSink{Post: app.PostToThread{Repo: threads, API: c}, SessionURL: func(id int64) string { return fmt.Sprintf("http://z/console/sessions/%d", id) }}
	require.NoError(t, s.Send(ctx, sink.Message{Kind: sink.KindPush, Type: "needs_input", SessionID: "7", Title: "Session 7 needs your input", Body: "ready"}))
	require.NoError(t, s.Send(ctx, sink.Message{Kind: sink.KindPush, Type: "agent_message", SessionID: "7", Title: "hi"}))
	require.NoError(t, s.Send(ctx, sink.Message{Kind: sink.KindAlert, SessionID: "7", Title: "page"}))
	require.NoError(t, s.Send(ctx, sink.Message{Kind: sink.KindPush, Type: "failure", SessionID: "8", Title: "no thread"}))
	require.NoError(t, s.Send(ctx, sink.Message{Kind: sink.KindPush, Type: "failure", SessionID: "7", Title: "Session 7 failed"}))
	require.Equal(t, []map[string]string{
		{"channel": "C1", "thread_ts": "1700000000.000100", "text": "*Session 7 needs your input*\nready\n<http://z/console/sessions/7|Open session #7>"},
		{"channel": "C1", "thread_ts": "1700000000.000100", "text": "*Session 7 failed*\n<http://z/console/sessions/7|Open session #7>"},
	}, posts)
}
