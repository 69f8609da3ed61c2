package mcp_test

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/zimmerhq/zimmer/gateway/internal/grpctest"
	"github.com/zimmerhq/zimmer/gateway/internal/lifecyclefake"
	"github.com/zimmerhq/zimmer/gateway/internal/lineagefake"
	"github.com/zimmerhq/zimmer/gateway/internal/mcp"
	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
	"github.com/zimmerhq/zimmer/services/platform/slogx"
)

// setupWithLineage serves the MCP handler over the fake lifecycle and the
// fake lineage ProvenanceService.
func setupWithLineage(t *testing.T) (*testBundle, *lineagefake.Server) {
	t.Helper()
	fake, lineage := lifecyclefake.New(), lineagefake.New()
	addr := grpctest.Serve(t, func(g *grpc.Server) { fake.Register(g); lineage.Register(g) })
	conn := grpctest.DialAsService(t, addr)
	h := mcp.NewHandler(lifecyclev1.NewLifecycleServiceClient(conn), slogx.Discard(), mcp.Options{
		Version: "test", Provenance: lineagev1.NewProvenanceServiceClient(conn),
	})
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return &testBundle{url: ts.URL, fake: fake, logs: &syncBuffer{}}, lineage
}

const sections = "### Session Hierarchy\n\nSession #1 is one of 2 sessions in its hierarchy; the origin is session #1.\n\n" +
	"### Human Messages\n\nAuthored in this session: 1. Elsewhere in the hierarchy: 0.\n"

func TestGetSessionHasProvenanceSections(t *testing.T) {
	t.Parallel()
	b, lineage := setupWithLineage(t)
	c := b.connect(t, "/")
	// Lifecycle knows #1, slug worker, and nothing else.
	b.fake.Handle("GetSession", func(m proto.Message) (proto.Message, error) {
		switch ref := m.(*lifecyclev1.GetSessionRequest).GetSessionId(); ref {
		case "1", "worker":
			return &lifecyclev1.GetSessionResponse{Session: &lifecyclev1.Session{Id: 1, Slug: "worker"}}, nil
		default:
			return nil, notFound("#" + ref)
		}
	})
	res := call(t, c, mcp.ToolStartSession, map[string]any{"prompt": "p", "git_root": "/r", "slug": "worker"})
	require.False(t, res.IsError, textOf(res))
	lineage.SetProvenance(1, &lineagev1.GetSessionProvenanceResponse{HereCount: 1, HumanMessageHere: true, Markdown: sections})

	for _, group := range []string{"/?tool_groups=self_session", "/?tool_groups=sessions"} {
		c := b.connect(t, group)
		res := call(t, c, mcp.ToolGetSession, map[string]any{"session_id": "worker"})
		require.False(t, res.IsError, textOf(res))
		require.Contains(t, textOf(res), "\n"+sections, group)

		res = call(t, c, mcp.ToolGetSessionProvenance, map[string]any{"session_id": "worker"})
		require.False(t, res.IsError, textOf(res))
		text := textOf(res)
		require.True(t, strings.HasPrefix(text, "## Provenance of session #1\n\n"+sections), text)
		structured, err := json.Marshal(res.StructuredContent)
		require.NoError(t, err)
		require.Contains(t, string(structured), `"here_count":1`, "the structured data rides along")
		require.NotContains(t, text, "### JSON\n\n```json\n{\"session\"", "only the sections, not the session")
	}

	res = call(t, c, mcp.ToolGetSessionProvenance, map[string]any{"session_id": "404"})
	require.True(t, res.IsError)
	res = call(t, c, mcp.ToolGetSessionProvenance, map[string]any{"session_id": "1", "extra": true})
	require.True(t, res.IsError)
	require.Contains(t, textOf(res), `unknown argument "extra"`)
	for _, m := range lineagefake.WriteMethods {
		require.Empty(t, lineage.Calls(m))
	}
}

// With lineage failing, get_session still carries both headings, saying the
// record is unknown rather than empty; get_session_provenance is an error.
func TestProvenanceWithLineageFailing(t *testing.T) {
	t.Parallel()
	b, lineage := setupWithLineage(t)
	c := b.connect(t, "/")
	require.False(t, call(t, c, mcp.ToolStartSession, map[string]any{"prompt": "p", "git_root": "/r"}).IsError)
	lineage.FailWith(status.Error(codes.Unavailable, "down"))

	res := call(t, c, mcp.ToolGetSession, map[string]any{"session_id": "1"})
	require.False(t, res.IsError, textOf(res))
	text := textOf(res)
	require.Contains(t, text, "### Session Hierarchy\n\nUnknown: the lineage service could not be asked.")
	require.Contains(t, text, "### Human Messages\n\nUnknown: the lineage service could not be asked. This is not an empty record")

	res = call(t, c, mcp.ToolGetSessionProvenance, map[string]any{"session_id": "1"})
	require.True(t, res.IsError)
	require.Contains(t, textOf(res), "the lineage service is unavailable")
	require.Contains(t, textOf(res), "unknown, not empty")
}
