package server_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/timestamppb"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
)

// TestStatusSummaryOnTheSessionsRoutes: a session's status_summary is on
// GET /sessions/{id} — inside session and beside it, as the original
// answers it — and on each item of GET /sessions.
func TestStatusSummaryOnTheSessionsRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s := &lifecyclev1.Session{Id: 7, Status: "needs_input", GitRoot: "/g", StatusSummary: &lifecyclev1.StatusSummary{
		Text: "Tests pass; the PR is next.", GeneratedAt: timestamppb.New(at), TranscriptPosition: 345, ForkSessionId: 8,
	}}
	b.fake.Answer("GetSession", &lifecyclev1.GetSessionResponse{Session: s}, nil)
	b.fake.Answer("ListSessions", &lifecyclev1.ListSessionsResponse{Sessions: []*lifecyclev1.Session{s}}, nil)

	want := map[string]any{"text": "Tests pass; the PR is next.", "generated_at": "2026-03-01T12:00:00Z",
		"transcript_position": json.Number("345"), "fork_session_id": json.Number("8"), "failure": nil}
	resp := b.call(t, http.MethodGet, "/api/v1/sessions/7", "")
	require.Equal(t, http.StatusOK, resp.status, string(resp.body))
	got := resp.json(t)
	require.Equal(t, want, got["status_summary"], "beside session")
	require.Equal(t, want, got["session"].(map[string]any)["status_summary"], "inside session, the same")

	resp = b.call(t, http.MethodGet, "/api/v1/sessions", "")
	require.Equal(t, http.StatusOK, resp.status, string(resp.body))
	items := resp.json(t)["sessions"].([]any)
	require.Equal(t, want, items[0].(map[string]any)["status_summary"], "on each list item")
}
