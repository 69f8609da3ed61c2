// Package mcp serves the MCP facade (/mcp, streamable HTTP): tools that are
// thin calls into the services' gRPC clients, grouped per the API surface
// (/mcp?tool_groups=sessions,self_session).
package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/zimmerhq/zimmer/gateway/internal/jsonhttp"
	"github.com/zimmerhq/zimmer/gateway/internal/rest"
	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
	notificationv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/notification/v1"
	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"
	runnerv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/runner/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/principal"
)

// Tool names.
const (
	ToolStartSession = "start_session"
	ToolGetSession   = "get_session"
)

// Groups maps each tool group to its tools. A request without tool_groups
// gets every group.
var Groups = map[string][]string{
	"sessions": {ToolQuickSearchSessions, ToolStartSession, ToolGetSession, ToolGetSessionProvenance, ToolActionSession, ToolManageEnqueuedMessages,
		ToolAnswerElicitation, ToolGetAlerts, ToolManageCategories, ToolGetCosts},
	"notifications": {ToolGetNotifications, ToolSendPushNotification, ToolActionNotification},
	"triggers": {ToolWakeMeUpLater, ToolWakeMeUpWhenSessionChangesState, ToolSearchTriggers, ToolActionTrigger,
		ToolManageSlackTriggers},
	"self_session": {ToolGetSession, ToolGetSessionProvenance, ToolSendPushNotification, ToolWakeMeUpLater,
		ToolWakeMeUpWhenSessionChangesState, ToolActionSession},
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
	`quick_search_sessions finds sessions by text and status; ` +
	`start_session creates one (it starts in the "` + rules.StatusWaiting + `" status); get_session shows one; ` +
	`action_session sends it a follow-up or changes its lifecycle, title, notes or heartbeat; ` +
	`manage_enqueued_messages lists, edits and sends the messages queued for it; ` +
	`answer_elicitation answers the question a session's agent is blocked on; ` +
	`get_alerts lists the operational alerts; get_costs sums the bytes Zimmer injected and the usage runtimes reported. ` +
	`wake_me_up_later sleeps a session until a time and wakes it with a prompt; ` +
	`wake_me_up_when_session_changes_state wakes it when another session needs input, fails or is archived; ` +
	`search_triggers and action_trigger list and cancel those wake-ups; ` +
	`manage_slack_triggers lists, creates and deletes the Slack triggers that start sessions from Slack messages. ` +
	`get_notifications and action_notification read and clear the operator's notifications; ` +
	`send_push_notification tells the operator something now. ` +
	`Every answer is markdown in one shape: a "## <outcome>" heading (what the call came to), then "- **field:** value" lines, ` +
	`each field named as the JSON names it, then what else it says; the JSON is the structured content, and most tools repeat it after the markdown in a fenced block.`

// Handler is the /mcp endpoint. Authentication is the caller's (the server
// wraps this handler).
type Handler struct {
	http     *mcpserver.StreamableHTTPServer
	sessions *sessions
	logger   *slog.Logger
	// registered counts the sessions mcp-go holds state for: registered
	// at initialize, unregistered when they end.
	registered atomic.Int64
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
	// Runner serves get_session's include_transcript (the last turn's
	// transcript); without it the section says it is unavailable.
	Runner runnerv1.RunnerServiceClient
	// Queue serves manage_enqueued_messages, action_session's follow_up and
	// get_session's queued messages; without it the tools say the queue is
	// not configured, and get_session shows no queue.
	Queue queuev1.QueueServiceClient
	// Triggers serves the trigger tools (wake_me_up_later,
	// wake_me_up_when_session_changes_state, search_triggers,
	// action_trigger) and action_session's pause_until; the lifecycle
	// process serves it. Without it they say the service is not
	// configured.
	Triggers lifecyclev1.TriggerServiceClient
	// Notifications serves the notification tools (get_notifications,
	// action_notification, send_push_notification, get_alerts); without it
	// they say the service is not configured.
	Notifications notificationv1.NotificationServiceClient
	// SessionTTL ends a session after this long without a request
	// (DefaultSessionTTL when zero).
	SessionTTL time.Duration
	// MaxSessions bounds the open sessions: opening one more ends the one
	// idle longest (DefaultMaxSessions when zero).
	MaxSessions int
	// SessionKey signs session ids, so that every gateway replica given
	// the same key serves every replica's sessions (SessionKey derives it
	// from ZIMMER_INTERNAL_TOKEN); empty, a random key: this process's
	// sessions only.
	SessionKey []byte
	// Now is the server's clock, which wake_me_up_later's description
	// shows (time.Now when nil).
	Now func() time.Time
}

// NewHandler returns the MCP endpoint over the lifecycle service's client.
func NewHandler(lifecycle lifecyclev1.LifecycleServiceClient, logger *slog.Logger, opts Options) *Handler {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	t := &tools{lifecycle: lifecycle, triggers: opts.Triggers, provenance: opts.Provenance, runner: opts.Runner, queue: opts.Queue,
		notifications: opts.Notifications, logger: logger, now: opts.Now}
	h := &Handler{logger: logger}
	if opts.SessionTTL <= 0 {
		opts.SessionTTL = DefaultSessionTTL
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = DefaultMaxSessions
	}
	if len(opts.SessionKey) == 0 {
		opts.SessionKey = SessionKey("")
	}
	h.sessions = newSessions(opts.SessionTTL, opts.MaxSessions, opts.SessionKey, h.release)
	hooks := &mcpserver.Hooks{}
	hooks.AddBeforeInitialize(func(ctx context.Context, _ any, _ *mcpgo.InitializeRequest) { warnUnknownGroups(ctx, logger) })
	hooks.AddBeforeDiscover(func(ctx context.Context, _ any, _ *mcpgo.DiscoverRequest) { warnUnknownGroups(ctx, logger) })
	hooks.AddOnRegisterSession(func(context.Context, mcpserver.ClientSession) { h.registered.Add(1) })
	hooks.AddOnUnregisterSession(func(context.Context, mcpserver.ClientSession) { h.registered.Add(-1) })

	srv := mcpserver.NewMCPServer("zimmer", opts.Version,
		mcpserver.WithInstructions(instructions),
		mcpserver.WithToolCapabilities(false),
		// The filter applies to tools/list and tools/call alike, so a tool
		// outside the selected groups can be neither seen nor called.
		mcpserver.WithToolFilter(filterTools),
		// Then each list renders wake_me_up_later at the server's time.
		mcpserver.WithToolFilter(t.renderNow),
		mcpserver.WithHooks(hooks),
		// Each response a session receives is counted (docs/costs.md).
		mcpserver.WithToolHandlerMiddleware(t.countResponses),
		mcpserver.WithRecovery(),
		mcpserver.WithLogger(logger),
	)
	srv.AddTool(quickSearchSessionsTool(), t.quickSearchSessions)
	srv.AddTool(startSessionTool(), t.startSession)
	srv.AddTool(getSessionTool(), t.getSession)
	srv.AddTool(getSessionProvenanceTool(), t.getSessionProvenance)
	srv.AddTool(actionSessionTool(nil), t.actionSession)
	srv.AddTool(manageEnqueuedMessagesTool(), t.manageEnqueuedMessages)
	srv.AddTool(answerElicitationTool(), t.answerElicitation)
	srv.AddTool(getAlertsTool(), t.getAlerts)
	srv.AddTool(getNotificationsTool(), t.getNotifications)
	srv.AddTool(sendPushNotificationTool(), t.sendPushNotification)
	srv.AddTool(actionNotificationTool(), t.actionNotification)
	srv.AddTool(wakeMeUpLaterTool(opts.Now()), t.wakeMeUpLater)
	srv.AddTool(wakeWhenSessionChangesStateTool(), t.wakeWhenSessionChangesState)
	srv.AddTool(searchTriggersTool(), t.searchTriggers)
	srv.AddTool(actionTriggerTool(), t.actionTrigger)
	srv.AddTool(manageSlackTriggersTool(), t.manageSlackTriggers)
	srv.AddTool(manageCategoriesTool(), t.manageCategories)
	srv.AddTool(getCostsTool(), t.getCosts)

	h.http = mcpserver.NewStreamableHTTPServer(srv,
		mcpserver.WithHTTPContextFunc(withSelection),
		// No server-initiated messages exist yet: a GET stream would only
		// hold a connection open.
		mcpserver.WithDisableStreaming(true),
		mcpserver.WithStreamableHTTPLogger(logger),
		mcpserver.WithDisableLocalhostProtection(opts.AnyHost),
		// Sessions end: idle ones after SessionTTL (mcp-go's sweeper frees
		// their state), the idlest when MaxSessions are open.
		mcpserver.WithSessionIdManager(h.sessions),
		mcpserver.WithSessionIdleTTL(opts.SessionTTL),
	)
	return h
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, rest.MaxBodyBytes)
	if id := r.Header.Get(mcpserver.HeaderKeySessionID); id != "" && r.Method == http.MethodPost &&
		!mcpgo.IsModernProtocol(r.Header.Get(mcpgo.HeaderProtocolVersion)) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			jsonhttp.WriteError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body too large or unreadable: the limit is %d bytes", rest.MaxBodyBytes))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(body, &msg) // mcp-go answers a body that is not JSON-RPC
		if msg.Method != string(mcpgo.MethodInitialize) && h.sessions.check(id) != nil {
			h.sessionGone(w, msg.ID)
			return
		}
	}
	h.http.ServeHTTP(w, r)
}

// sessionGone answers a request of a session that is not open: 404, which
// the MCP transport defines as "start a new session", with a JSON-RPC error
// saying so in words.
func (h *Handler) sessionGone(w http.ResponseWriter, id json.RawMessage) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	jsonhttp.Write(w, http.StatusNotFound, map[string]any{
		"jsonrpc": mcpgo.JSONRPC_VERSION,
		"id":      id,
		"error":   map[string]any{"code": sessionNotFoundCode, "message": h.sessions.goneMessage()},
	})
}

// sessionNotFoundCode is the JSON-RPC error code MCP servers answer an
// unknown session with (the reference SDKs' "Session not found").
const sessionNotFoundCode = -32001

// release frees mcp-go's state of a session ended to stay under
// MaxSessions, through the transport's own termination path (a client's
// DELETE): mcp-go offers no other way to end one session.
func (h *Handler) release(id string) {
	if n := h.sessions.evictedTotal(); n == 1 || n%1000 == 0 {
		h.logger.Warn("MCP sessions at their cap: closing the idlest to open new ones; clients of closed sessions must initialize again "+
			"(raise GATEWAY_MCP_MAX_SESSIONS if this is normal load)", "closed_total", n)
	}
	r, err := http.NewRequestWithContext(context.Background(), http.MethodDelete, "/mcp", http.NoBody)
	if err != nil {
		h.logger.Error("close an MCP session", "error", err)
		return
	}
	r.Header.Set(mcpserver.HeaderKeySessionID, id)
	h.http.ServeHTTP(discard{header: http.Header{}}, r)
}

// OpenSessions is how many sessions mcp-go holds state for.
func (h *Handler) OpenSessions() int { return int(h.registered.Load()) }

// Shutdown ends the open MCP sessions.
func (h *Handler) Shutdown(ctx context.Context) error { return h.http.Shutdown(ctx) }

// discard is a ResponseWriter for the gateway's own requests to mcp-go.
type discard struct{ header http.Header }

func (d discard) Header() http.Header         { return d.header }
func (d discard) Write(b []byte) (int, error) { return len(b), nil }
func (d discard) WriteHeader(int)             {}

// selection is the tool set a request's tool_groups parameter selects.
type selection struct {
	tools   map[string]bool // nil: every tool
	unknown []string        // groups named but not known, dropped
	// actions are the action_session actions offered when only narrowed
	// groups select it (see groupActions); nil: every action.
	actions []string
	// session is the session a session credential acts as (0 for keys):
	// its selection is its credential's, and acting_session_id is its own.
	session int64
}

type selectionKey struct{}

// withSelection reads tool_groups (comma-separated, possibly repeated) into
// the request context. No parameter, or an empty one, selects every group.
// A session credential's selection is its scopes', whatever tool_groups
// asks (credentialSelection).
func withSelection(ctx context.Context, r *http.Request) context.Context {
	if p, ok := principal.FromContext(r.Context()); ok && p.Kind == principal.Session {
		return context.WithValue(ctx, selectionKey{}, credentialSelection(p))
	}
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

// renderNow is the tool filter that renders, on every tools/list, the
// tools whose description says the server's time: wake_me_up_later, so an
// agent computes a wake time without a clock of its own.
func (t *tools) renderNow(_ context.Context, listed []mcpgo.Tool) []mcpgo.Tool {
	out := slices.Clone(listed)
	for i, tool := range out {
		if tool.Name == ToolWakeMeUpLater {
			out[i] = wakeMeUpLaterTool(t.now())
		}
	}
	return out
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
