package mcp_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"
)

// fieldLine is a "- **field:** value" line, the field named as the JSON
// names it.
var fieldLine = regexp.MustCompile(`^- \*\*[a-z_]+:\*\* \S`)

// requireShape checks that res answers in the original's markdown shape
// (issue 23 rule 21): "## <outcome>", then "- **field:** value" lines, then
// whatever else it says, then — for most tools — the structured content
// again in a fenced block. It returns what follows the fields.
func requireShape(t *testing.T, res *mcpgo.CallToolResult, outcome string) string {
	t.Helper()
	require.False(t, res.IsError, textOf(res))
	text := textOf(res)
	head, rest, ok := strings.Cut(text, "\n")
	require.True(t, ok, text)
	require.Equal(t, "## "+outcome, head, text)
	lines := strings.Split(strings.TrimPrefix(rest, "\n"), "\n")
	i := 0
	for ; i < len(lines) && lines[i] != ""; i++ {
		require.Regexp(t, fieldLine, lines[i], "a field line: %s", text)
	}
	require.Positive(t, i, "at least one field: %s", text)
	after := strings.Join(lines[i:], "\n")
	// quick_search_sessions and get_session_provenance carry their JSON
	// as structured content only; the others repeat it after the text.
	if _, fenced, ok := strings.Cut(after, "```json\n"); ok {
		require.NotNil(t, res.StructuredContent, "the fenced JSON is the structured content")
		fenced, _, ok = strings.Cut(fenced, "\n```")
		require.True(t, ok, "the JSON's fence is closed: %s", text)
		want, err := json.Marshal(res.StructuredContent)
		require.NoError(t, err)
		require.JSONEq(t, string(want), fenced, "the fenced JSON is the structured content")
	}
	return after
}
