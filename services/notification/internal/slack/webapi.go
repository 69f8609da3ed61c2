// Package slack is the notification service's side of Slack: the Web API
// client (chat.postMessage, chat.getPermalink) with the bot token, the
// workflow that processes an accepted Events API event
// (slack/event/<event id>), and the push sink that posts a Slack-started
// session's needs_input and failure pushes into its thread.
//
// The Web API is called over plain HTTP against Slack's documented
// contract (https://api.slack.com/web): two methods do not earn a client
// library, and the e2e tests' loopback fake speaks exactly what is written
// here.
package slack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/zimmerhq/zimmer/services/notification/internal/app"
)

// DefaultAPIURL is Slack's Web API (SLACK_API_URL overrides it: tests point
// it at a fake on loopback).
const DefaultAPIURL = "https://slack.com/api/"

// Client calls Slack's Web API with a bot token.
type Client struct {
	// BaseURL ends in a slash; the method name is appended.
	BaseURL string
	// Token is SLACK_BOT_TOKEN (xoxb-…): a credential, never logged or
	// put in an error.
	Token string
	HTTP  *http.Client
}

var _ app.SlackWebAPI = Client{}

// retryableErrors are the Web API's error codes that say "later": the rest
// (channel_not_found, not_in_channel, invalid_auth, message_not_found, …)
// will be answered again however often the call is retried.
var retryableErrors = []string{"ratelimited", "rate_limited", "service_unavailable", "internal_error", "fatal_error", "request_timeout"}

// response is the envelope every Web API method answers.
type response struct {
	OK        bool   `json:"ok"`
	Error     string `json:"error"`
	Permalink string `json:"permalink"`
}

// PostMessage implements app.SlackWebAPI: chat.postMessage with a JSON body
// (channel, thread_ts, text).
func (c Client) PostMessage(ctx context.Context, channel, threadTS, text string) error {
	body, err := json.Marshal(map[string]string{"channel": channel, "thread_ts": threadTS, "text": text})
	if err != nil {
		return fmt.Errorf("encode chat.postMessage: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.BaseURL+"chat.postMessage", bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%w: build chat.postMessage: %w", app.ErrSlackPermanent, err)
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	_, err = c.call(req, "chat.postMessage")
	return err
}

// Permalink implements app.SlackWebAPI: chat.getPermalink (channel,
// message_ts) as query parameters, the way its documentation calls it.
func (c Client) Permalink(ctx context.Context, channel, ts string) (string, error) {
	q := url.Values{"channel": {channel}, "message_ts": {ts}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.BaseURL+"chat.getPermalink?"+q.Encode(), nil)
	if err != nil {
		return "", fmt.Errorf("%w: build chat.getPermalink: %w", app.ErrSlackPermanent, err)
	}
	r, err := c.call(req, "chat.getPermalink")
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(r.Permalink, "https://") {
		return "", fmt.Errorf("%w: chat.getPermalink answered no https permalink", app.ErrSlackPermanent)
	}
	return r.Permalink, nil
}

// call sends req with the token and reads the envelope. A transport error,
// 429 and 5xx are transient; so is an error code in retryableErrors. Every
// other failure wraps app.ErrSlackPermanent.
func (c Client) call(req *http.Request, method string) (response, error) {
	req.Header.Set("Authorization", "Bearer "+c.Token)
	client := c.HTTP
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		// The URL holds no secret; the token is only in a header.
		return response{}, fmt.Errorf("slack %s: %w", method, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	switch {
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return response{}, fmt.Errorf("slack %s answered %s (retry after %q)", method, resp.Status, resp.Header.Get("Retry-After"))
	case resp.StatusCode != http.StatusOK:
		return response{}, fmt.Errorf("%w: %s answered %s", app.ErrSlackPermanent, method, resp.Status)
	}
	var r response
	if err := json.Unmarshal(raw, &r); err != nil {
		return response{}, fmt.Errorf("%w: %s answered no JSON envelope: %w", app.ErrSlackPermanent, method, err)
	}
	if !r.OK {
		if slices.Contains(retryableErrors, r.Error) {
			return response{}, fmt.Errorf("slack %s: %s", method, r.Error)
		}
		return response{}, fmt.Errorf("%w: %s: %s", app.ErrSlackPermanent, method, r.Error)
	}
	return r, nil
}

// Permanent reports whether err is a Web API failure retrying cannot fix.
func Permanent(err error) bool { return errors.Is(err, app.ErrSlackPermanent) }
