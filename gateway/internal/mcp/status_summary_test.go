package mcp_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/timestamppb"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
)

// TestGetSessionShowsTheStatusSummary: get_session says where the session's
// work stands as its status-summary fork wrote it, what that covers, and a
// fork that failed since; the JSON carries it inside the session.
func TestGetSessionShowsTheStatusSummary(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.connect(t, "/?tool_groups=sessions")
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	b.fake.Answer("GetSession", &lifecyclev1.GetSessionResponse{Session: &lifecyclev1.Session{
		Id: 7, Status: "needs_input", Title: "Fix CI", GitRoot: "/g",
		StatusSummary: &lifecyclev1.StatusSummary{
			Text: "Tests pass; the PR is next.", GeneratedAt: timestamppb.New(at), TranscriptPosition: 345, ForkSessionId: 8,
			Failure: &lifecyclev1.StatusSummaryFailure{Reason: "exited with code 1", FailedAt: timestamppb.New(at.Add(time.Hour)), ForkSessionId: 9},
		},
	}}, nil)
	res := call(t, c, "get_session", map[string]any{"session_id": 7})
	require.False(t, res.IsError, textOf(res))
	text := textOf(res)
	for _, want := range []string{
		"### Status summary\n\n> Tests pass; the PR is next.\n",
		"_Written by status-summary fork #8 at 2026-03-01T12:00:00Z, covering the transcript to line 345._",
		"### Status summary failed\n\nThe status-summary fork #9 failed: exited with code 1",
		`"status_summary":{"text":"Tests pass; the PR is next."`,
	} {
		require.Contains(t, text, want)
	}

	b.fake.Answer("GetSession", &lifecyclev1.GetSessionResponse{Session: &lifecyclev1.Session{Id: 7, Status: "needs_input", GitRoot: "/g"}}, nil)
	require.NotContains(t, textOf(call(t, c, "get_session", map[string]any{"session_id": 7})), "Status summary", "none yet: no section")
}
