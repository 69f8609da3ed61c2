package mcp_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/zimmerhq/zimmer/gateway/internal/lifecyclefake"
	"github.com/zimmerhq/zimmer/gateway/internal/mcp"
	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

// quick_search_sessions finds sessions by free text and status through
// ListSessions, and answers compact entries: never a whole prompt.
func TestQuickSearchSessions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.connect(t, "/?tool_groups=sessions")
	require.Contains(t, toolNames(t, c), "quick_search_sessions")

	// What lifecycle answers: two matches, one with a prompt far longer
	// than a preview (as a list that did not cut it would carry).
	long := strings.Repeat("coordinate the release train; ", 40) + "END-OF-PROMPT"
	b.fake.Answer("ListSessions", &lifecyclev1.ListSessionsResponse{
		Sessions: []*lifecyclev1.Session{
			{Id: 12, Status: "needs_input", Title: "Release router", Slug: "release-router", Prompt: long,
				Notes: "waiting on the Kubernetes upgrade", SchedulingClass: "priority", UpdatedAt: timestamppb.New(lifecyclefake.Now)},
			{Id: 9, Status: "needs_input", Prompt: "route the hotfix", ParentSessionId: proto.Int64(12)},
		},
		Pagination: &lifecyclev1.Pagination{Page: 1, PerPage: 2, TotalCount: 3, TotalPages: 2},
	}, nil)

	res := call(t, c, "quick_search_sessions", map[string]any{"q": "router", "status": "needs_input", "per_page": 2})
	require.False(t, res.IsError, textOf(res))
	require.True(t, proto.Equal(&lifecyclev1.ListSessionsRequest{Q: "router", Status: []string{"needs_input"}, PerPage: 2},
		b.fake.Calls("ListSessions")[0].Request), "one status is a list of one")

	text := textOf(res)
	require.Contains(t, requireShape(t, res, mcp.OutcomeSessions), "3 sessions match, page 1 of 2 (2 per page), newest first.")
	require.True(t, strings.HasPrefix(text, "## Sessions\n\n- **total_count:** 3\n- **page:** 1 of 2\n"), text)
	require.Contains(t, text, "- #12 [needs_input] Release router (slug release-router), updated 2026-01-02T03:04:05Z\n")
	require.Contains(t, text, "  notes: waiting on the Kubernetes upgrade\n")
	require.Contains(t, text, "- #9 [needs_input] Session #9\n", "an untitled session is named by its id")
	require.Contains(t, text, "More: page 2 of 2")
	require.NotContains(t, text, "END-OF-PROMPT", "never the whole prompt")

	var got struct {
		Sessions []struct {
			ID              int64  `json:"id"`
			PromptPreview   string `json:"prompt_preview"`
			ParentSessionID *int64 `json:"parent_session_id"`
		} `json:"sessions"`
		TotalCount int64 `json:"total_count"`
	}
	body, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(body, &got))
	require.Len(t, got.Sessions, 2)
	require.EqualValues(t, 3, got.TotalCount)
	preview := got.Sessions[0].PromptPreview
	require.Equal(t, rules.ListPreviewChars+1, utf8.RuneCountInString(preview))
	require.True(t, strings.HasPrefix(long, strings.TrimSuffix(preview, rules.PreviewEllipsis)))
	require.True(t, strings.HasSuffix(preview, rules.PreviewEllipsis))
	require.Equal(t, "route the hotfix", got.Sessions[1].PromptPreview, "a short prompt is whole")
	require.Equal(t, int64(12), *got.Sessions[1].ParentSessionID)

	// A list of statuses, a page, and the other filters reach lifecycle as
	// sent; lifecycle clamps per_page.
	res = call(t, c, "quick_search_sessions", map[string]any{
		"status": []any{"waiting", "archived"}, "page": 2, "per_page": 500, "agent_root": "zimmer", "scheduling_class": "spot",
	})
	require.False(t, res.IsError, textOf(res))
	require.True(t, proto.Equal(&lifecyclev1.ListSessionsRequest{
		Status: []string{"waiting", "archived"}, Page: 2, PerPage: 500, AgentRoot: "zimmer", SchedulingClass: "spot",
	}, b.fake.Calls("ListSessions")[1].Request))

	// Nothing found says how to widen the search.
	b.fake.Answer("ListSessions", &lifecyclev1.ListSessionsResponse{Pagination: &lifecyclev1.Pagination{Page: 1, PerPage: 25}}, nil)
	res = call(t, c, "quick_search_sessions", map[string]any{"q": "nothing", "status": []any{"archived"}})
	require.False(t, res.IsError, textOf(res))
	require.Equal(t, "## Sessions\n\n- **total_count:** 0\n\n"+
		"No sessions match with status archived; leave status out to search every status.\n", textOf(res))

	// Lifecycle's refusal is the tool's error, in its words; a wrong
	// argument never reaches lifecycle.
	b.fake.Answer("ListSessions", nil, invalid("status", `"paused" is not a status; use one of waiting, running, needs_input, failed, archived`))
	res = call(t, c, "quick_search_sessions", map[string]any{"status": "paused"})
	require.True(t, res.IsError)
	require.Equal(t, `status: "paused" is not a status; use one of waiting, running, needs_input, failed, archived`, textOf(res))
	calls := len(b.fake.Calls("ListSessions"))
	res = call(t, c, "quick_search_sessions", map[string]any{"status": 3, "session_id": "1"})
	require.True(t, res.IsError)
	require.Contains(t, textOf(res), `unknown argument "session_id"`)
	require.Contains(t, textOf(res), "status must be a list")
	require.Len(t, b.fake.Calls("ListSessions"), calls)
}

// The tool's schema says status takes one status or a list of them.
func TestQuickSearchSessionsSchema(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.connect(t, "/?tool_groups=sessions")
	tools, err := c.ListTools(t.Context(), mcpgo.ListToolsRequest{})
	require.NoError(t, err)
	for _, tool := range tools.Tools {
		if tool.Name != "quick_search_sessions" {
			continue
		}
		require.True(t, *tool.Annotations.ReadOnlyHint)
		status, err := json.Marshal(tool.InputSchema.Properties["status"].(map[string]any)["anyOf"])
		require.NoError(t, err)
		words, err := json.Marshal(rules.Statuses())
		require.NoError(t, err)
		require.JSONEq(t, `[{"type": "string", "enum": `+string(words)+`}, {"type": "array", "items": {"type": "string", "enum": `+string(words)+`}}]`, string(status))
		require.Subset(t, keys(tool.InputSchema.Properties), []string{"q", "status", "page", "per_page"})
		return
	}
	t.Fatal("no quick_search_sessions tool")
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
