package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zimmerhq/zimmer/gateway/internal/runnerfake"
	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	runnerv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/runner/v1"
)

func TestTranscriptResolvesTheSessionThenReadsThePage(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	resp := b.call(t, http.MethodGet, "/api/v1/sessions/fix-login/transcript?turn=turn-1&page_size=10&page_token=abc", "")
	require.Equal(t, http.StatusOK, resp.status, string(resp.body))
	require.Equal(t, "fix-login", b.lastRequest(t, "GetSession").(*lifecyclev1.GetSessionRequest).GetSessionId())
	calls := b.runner.Calls("GetTranscript")
	require.Len(t, calls, 1)
	req := calls[0].Request.(*runnerv1.GetTranscriptRequest)
	require.Equal(t, "1", req.GetSessionId(), "the id lifecycle resolved the slug to")
	require.Equal(t, "turn-1", req.GetTurn())
	require.EqualValues(t, 10, req.GetPageSize())
	require.Equal(t, "abc", req.GetPageToken())
	require.Equal(t, "operator", string(calls[0].Principal.Kind), "the caller's principal is forwarded")

	body := resp.json(t)
	lines := body["lines"].([]any)
	require.Len(t, lines, 1)
	line := lines[0].(map[string]any)
	require.Equal(t, "hello", line["text"])
	require.Equal(t, json.Number("1"), line["id"], "ids are JSON numbers")
	require.Equal(t, "exited 0", body["turns"].([]any)[0].(map[string]any)["outcome"])
}

func TestTranscriptFailures(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})

	b.fake.Answer("GetSession", nil, notFound("nope"))
	resp := b.call(t, http.MethodGet, "/api/v1/sessions/nope/transcript", "")
	require.Equal(t, http.StatusNotFound, resp.status)
	require.Contains(t, resp.errorText(t), "session nope not found")
	require.Empty(t, b.runner.Calls(), "an unknown session never reaches the runner")

	b.fake.Answer("GetSession", &lifecyclev1.GetSessionResponse{Session: &lifecyclev1.Session{Id: 1}}, nil)
	resp = b.call(t, http.MethodGet, "/api/v1/sessions/1/transcript?page_size=many", "")
	require.Equal(t, http.StatusBadRequest, resp.status)
	require.Contains(t, resp.errorText(t), "page_size")
	resp = b.call(t, http.MethodGet, "/api/v1/sessions/1/transcript?turn=%00", "")
	require.Equal(t, http.StatusBadRequest, resp.status)
	require.Contains(t, resp.errorText(t), "NUL")
	require.Empty(t, b.runner.Calls())

	b.runner.FailWith(status.Error(codes.InvalidArgument, "page_token: not a page token of this transcript"))
	resp = b.call(t, http.MethodGet, "/api/v1/sessions/1/transcript?page_token=x", "")
	require.Equal(t, http.StatusUnprocessableEntity, resp.status)
	require.Contains(t, resp.errorText(t), "page_token: not a page token")
	b.runner.FailWith(status.Error(codes.Unavailable, "connection refused"))
	resp = b.call(t, http.MethodGet, "/api/v1/sessions/1/transcript", "")
	require.Equal(t, http.StatusServiceUnavailable, resp.status)
	require.NotContains(t, resp.errorText(t), "connection refused", "the transport's words stay inside")
}

// sse reads server-sent events from a follow.
type sse struct {
	resp *http.Response
	rd   *bufio.Reader
}

func follow(t *testing.T, ctx context.Context, b *testBundle, path string, header ...string) *sse {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.url+path, nil)
	require.NoError(t, err)
	req.Header.Set("X-API-Key", testKey)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = resp.Body.Close() })
	return &sse{resp: resp, rd: bufio.NewReader(resp.Body)}
}

// next is the next event's fields (comments skipped).
func (s *sse) next(t *testing.T) map[string]string {
	t.Helper()
	event := map[string]string{}
	for {
		line, err := s.rd.ReadString('\n')
		require.NoError(t, err)
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "" && len(event) > 0:
			return event
		case line == "" || strings.HasPrefix(line, ":"):
		default:
			k, v, _ := strings.Cut(line, ": ")
			event[k] = v
		}
	}
}

func TestTranscriptFollowIsServerSentEvents(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	followed := b.runner.Followed()
	s := follow(t, ctx, b, "/api/v1/sessions/fix-login/transcript?follow=true", "Last-Event-ID", "41")
	require.Equal(t, http.StatusOK, s.resp.StatusCode)
	require.Equal(t, "text/event-stream", s.resp.Header.Get("Content-Type"))
	<-followed
	req := b.runner.Calls("FollowTranscript")[0].Request.(*runnerv1.FollowTranscriptRequest)
	require.Equal(t, "1", req.GetSessionId())
	require.EqualValues(t, 41, req.GetAfterLineId(), "Last-Event-ID resumes")

	b.runner.Push(runnerfake.Line(42, "working"))
	ev := s.next(t)
	require.Equal(t, "42", ev["id"])
	require.Equal(t, "line", ev["event"])
	require.Contains(t, ev["data"], `"text":"working"`)
	require.Contains(t, ev["data"], `"id":42`)
	b.runner.Push(runnerfake.Line(43, "done"))
	require.Contains(t, s.next(t)["data"], `"text":"done"`)

	// The client going away ends the runner's stream too.
	cancel()
	require.Eventually(t, func() bool { return b.runner.Followers() == 0 }, 10*time.Second, 10*time.Millisecond)
}

func TestTranscriptFollowEndsWithTheRunnersStream(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	followed := b.runner.Followed()
	s := follow(t, t.Context(), b, "/api/v1/sessions/1/transcript?follow=true")
	<-followed
	b.runner.Push(runnerfake.Line(1, "last words"))
	require.Contains(t, s.next(t)["data"], "last words")
	b.runner.Push(nil) // the runner stops
	rest, err := io.ReadAll(s.rd)
	require.NoError(t, err, "the response ends cleanly")
	require.NotContains(t, string(rest), "event: error", "an ended stream is no failure: the client reconnects")
}

func TestTranscriptFollowReportsAFailureAsAnEvent(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	b.runner.FailWith(status.Error(codes.PermissionDenied, "session #2's credential may read only its own session's transcript"))
	s := follow(t, t.Context(), b, "/api/v1/sessions/1/transcript?follow=true")
	require.Equal(t, http.StatusOK, s.resp.StatusCode, "the stream began before the runner refused")
	ev := s.next(t)
	require.Equal(t, "error", ev["event"])
	require.Contains(t, ev["data"], `"error":"Forbidden"`)
	require.Contains(t, ev["data"], "may read only its own session's transcript")

	resp := b.call(t, http.MethodGet, "/api/v1/sessions/1/transcript?follow=true&after_line_id=x", "")
	require.Equal(t, http.StatusBadRequest, resp.status)
	s = follow(t, t.Context(), b, "/api/v1/sessions/1/transcript?follow=true", "Last-Event-ID", "abc")
	require.Equal(t, http.StatusBadRequest, s.resp.StatusCode)
}
