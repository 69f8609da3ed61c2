// Package mcp serves the MCP facade (/mcp, streamable HTTP): tools that are
// thin calls into the services' gRPC clients, grouped per the API surface
// (/mcp?tool_groups=sessions,self_session).
package mcp

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

// Tool names.
const (
	ToolStartSession = "start_session"
	ToolGetSession   = "get_session"
)

// Groups maps each tool group to its tools. A request without tool_groups
// gets every group.
var Groups = map[string][]string{
	"sessions":     {ToolStartSession, ToolGetSession, ToolGetSessionProvenance, ToolActionSession},
	"self_session": {ToolGetSession, ToolGetSessionProvenance, ToolActionSession},
}

// groupActions narrows action_session in a group that offers only some of
// its actions. A selection that includes a group offering action_session
// whole (sessions) gets it whole; one that reaches it only through narrowed
// groups gets the same tool name with only their actions, and its calls
// declare the self-session surface (the archive line names it).
var groupActions = map[string][]string{
	"self_session": SelfSessionActions,
}

const instructions = `Zimmer runs AI coding-agent sessions. A session is addressed by its numeric id or its slug. ` +
	`start_session creates one (it starts in the "` + rules.StatusWaiting + `" status); get_session shows one; ` +
	`action_session changes its lifecycle, title, notes or heartbeat.`

// Handler is the /mcp endpoint. Authentication is the caller's (the server
// wraps this handler).
type Handler struct {
	http *mcpserver.StreamableHTTPServer
}

// Options tunes the handler.
type Options struct {
	// Version is reported to clients as the server's.
	Version string
	// AnyHost turns off mcp-go's DNS-rebinding protection, which refuses a
	// request reaching a loopback listener with a non-localhost Host header
	// (a reverse proxy on the same host, say). Safe when every request must
	// carry an API key: a rebinding page does not know one.
	AnyHost bool
	// Provenance is lineage's provenance service: get_session's hierarchy
	// and human-message sections, and get_session_provenance. Only its read
	// methods are called; no tool records or edits a human message.
	Provenance lineagev1.ProvenanceServiceClient
}

// NewHandler returns the MCP endpoint over the lifecycle service's client.
func NewHandler(lifecycle lifecyclev1.LifecycleServiceClient, logger *slog.Logger, opts Options) *Handler {
	t := &tools{lifecycle: lifecycle, provenance: opts.Provenance, logger: logger}
	hooks := &mcpserver.Hooks{}
	hooks.AddBeforeInitialize(func(ctx context.Context, _ any, _ *mcpgo.InitializeRequest) { warnUnknownGroups(ctx, logger) })
	hooks.AddBeforeDiscover(func(ctx context.Context, _ any, _ *mcpgo.DiscoverRequest) { warnUnknownGroups(ctx, logger) })

	srv := mcpserver.NewMCPServer("zimmer", opts.Version,
		mcpserver.WithInstructions(instructions),
		mcpserver.WithToolCapabilities(false),
		// The filter applies to tools/list and tools/call alike, so a tool
		// outside the selected groups can be neither seen nor called.
		mcpserver.WithToolFilter(filterTools),
		mcpserver.WithHooks(hooks),
		mcpserver.WithRecovery(),
		mcpserver.WithLogger(logger),
	)
	srv.AddTool(startSessionTool(), t.startSession)
	srv.AddTool(getSessionTool(), t.getSession)
	srv.AddTool(getSessionProvenanceTool(), t.getSessionProvenance)
	srv.AddTool(actionSessionTool(nil), t.actionSession)

	return &Handler{http: mcpserver.NewStreamableHTTPServer(srv,
		mcpserver.WithHTTPContextFunc(withSelection),
		// No server-initiated messages exist yet: a GET stream would only
		// hold a connection open.
		mcpserver.WithDisableStreaming(true),
		mcpserver.WithStreamableHTTPLogger(logger),
		mcpserver.WithDisableLocalhostProtection(opts.AnyHost),
	)}
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.http.ServeHTTP(w, r) }

// Shutdown ends the open MCP sessions.
func (h *Handler) Shutdown(ctx context.Context) error { return h.http.Shutdown(ctx) }

// selection is the tool set a request's tool_groups parameter selects.
type selection struct {
	tools   map[string]bool // nil: every tool
	unknown []string        // groups named but not known, dropped
	// actions are the action_session actions offered when only narrowed
	// groups select it (see groupActions); nil: every action.
	actions []string
}

type selectionKey struct{}

// withSelection reads tool_groups (comma-separated, possibly repeated) into
// the request context. No parameter, or an empty one, selects every group.
func withSelection(ctx context.Context, r *http.Request) context.Context {
	return context.WithValue(ctx, selectionKey{}, parseSelection(r.URL.Query()["tool_groups"]))
}

func parseSelection(params []string) selection {
	var names []string
	for _, p := range params {
		for n := range strings.SplitSeq(p, ",") {
			if n = strings.TrimSpace(n); n != "" {
				names = append(names, n)
			}
		}
	}
	if len(names) == 0 {
		return selection{}
	}
	sel := selection{tools: map[string]bool{}}
	whole := false
	for _, n := range names {
		tools, ok := Groups[n]
		if !ok {
			if !slices.Contains(sel.unknown, n) {
				sel.unknown = append(sel.unknown, n)
			}
			continue
		}
		for _, t := range tools {
			sel.tools[t] = true
		}
		if !slices.Contains(tools, ToolActionSession) {
			continue
		}
		narrowed, ok := groupActions[n]
		if !ok {
			whole = true
		}
		for _, a := range narrowed {
			if !slices.Contains(sel.actions, a) {
				sel.actions = append(sel.actions, a)
			}
		}
	}
	if whole {
		sel.actions = nil
	}
	return sel
}

func selectionFrom(ctx context.Context) selection {
	sel, _ := ctx.Value(selectionKey{}).(selection)
	return sel
}

// filterTools keeps the selected tools, with action_session narrowed to the
// selection's actions when only narrowed groups select it. A call is checked
// against the same filter, and the handler refuses the actions left out.
func filterTools(ctx context.Context, tools []mcpgo.Tool) []mcpgo.Tool {
	sel := selectionFrom(ctx)
	if sel.tools == nil {
		return tools
	}
	kept := tools[:0:0]
	for _, t := range tools {
		if !sel.tools[t.Name] {
			continue
		}
		if t.Name == ToolActionSession && sel.actions != nil {
			t = actionSessionTool(sel.actions)
		}
		kept = append(kept, t)
	}
	return kept
}

// warnUnknownGroups logs, once per client handshake, the tool groups a
// client asked for that do not exist.
func warnUnknownGroups(ctx context.Context, logger *slog.Logger) {
	sel := selectionFrom(ctx)
	if len(sel.unknown) == 0 {
		return
	}
	known := make([]string, 0, len(Groups))
	for g := range Groups {
		known = append(known, g)
	}
	slices.Sort(known)
	logger.WarnContext(ctx, "MCP client asked for unknown tool groups; dropped them",
		"unknown", sel.unknown, "known", known, "tools_left", len(sel.tools))
}
