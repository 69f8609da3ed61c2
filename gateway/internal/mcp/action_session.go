package mcp

import (
	"context"
	"fmt"
	"slices"
	"strings"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"google.golang.org/protobuf/proto"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/platform/surface"
)

// ToolActionSession acts on a session's lifecycle.
const ToolActionSession = "action_session"

// sessionAction is one action of action_session: what it does, for the
// tool's description, and the arguments it reads besides action and
// acting_session_id.
type sessionAction struct {
	name string
	doc  string
	args []string
}

// sessionActions are action_session's actions, in the order the tool lists
// them. follow_up and the queue's actions arrive with the queue.
var sessionActions = []sessionAction{
	{"pause", "stop a running turn (→ needs_input).", []string{"session_id"}},
	{"sleep", "a needs_input session goes to waiting; a running one sleeps when its turn ends.", []string{"session_id"}},
	{"archive", "move to the trash (restorable for 4 days).", []string{"session_id", "force"}},
	{"bulk_archive", "archive session_ids, each on its own.", []string{"session_ids", "force"}},
	{"unarchive", "restore to the state chosen from the session's history.", []string{"session_id"}},
	{"restart", "re-run a failed or idle session (a deliberate resume).", []string{"session_id"}},
	{"fail", "mark a session that will not recover as failed, with failure_reason.", []string{"session_id", "failure_reason"}},
	{"update_title", "set the session's title.", []string{"session_id", "title"}},
	{"update_notes", "replace the session's notes, its free-form memory (shown to its agent as <session-notes>).", []string{"session_id", "notes"}},
	{"set_heartbeat", "turn the heartbeat nudge on or off (enabled) and set its interval_seconds; give either or both.", []string{"session_id", "enabled", "interval_seconds"}},
	{"transition", "fire one event of the state machine as the machine states it, with event and the options it reads: the low-level driver " +
		"for harnesses and operators. Prefer the named actions; this one chooses nothing (sleep on a running session is refused, " +
		"unarchive names its target).", []string{"session_id", "event", "failure_reason", "system_recovery", "running_job_id", "paused_by"}},
}

// SelfSessionActions are the actions action_session keeps in the
// self_session group: a session may edit and archive itself, nothing more.
var SelfSessionActions = []string{"update_notes", "update_title", "set_heartbeat", "archive"}

// machineEvents are the lifecycle state machine's events (the service
// validates them; the list gives the model an enum).
var machineEvents = []string{
	"start", "pause", "resume", "sleep", "block_on_elicitation", "unblock_from_elicitation", "fail", "archive",
	"unarchive_to_waiting", "unarchive_to_failed", "unarchive_to_needs_input",
}

// Heartbeat interval bounds, as the lifecycle service's.
const (
	minHeartbeatSeconds = 30
	maxHeartbeatSeconds = 86_400
)

// actionArg is one argument of action_session: its schema and what it
// means; the description names the actions that read it.
type actionArg struct {
	name string
	with func(name string, opts ...mcpgo.PropertyOption) mcpgo.ToolOption
	doc  string
	opts []mcpgo.PropertyOption
}

// actionArgs are the arguments, in the order the tool's schema lists them.
var actionArgs = []actionArg{
	{"session_id", mcpgo.WithString, `the session's numeric id or slug.`, nil},
	{"session_ids", mcpgo.WithArray, "the ids or slugs to archive.", []mcpgo.PropertyOption{mcpgo.WithStringItems()}},
	{"title", mcpgo.WithString, `the new title, at most 500 characters ("" clears it).`, nil},
	{"notes", mcpgo.WithString, `the notes, replacing the old ones; at most 50,000 characters ("" clears them).`, nil},
	{"enabled", mcpgo.WithBoolean, "true turns the heartbeat nudge on, false off.", nil},
	{"interval_seconds", mcpgo.WithInteger, "seconds between heartbeat nudges, 30 to 86,400 (a new session has 60).",
		[]mcpgo.PropertyOption{mcpgo.Min(minHeartbeatSeconds), mcpgo.Max(maxHeartbeatSeconds)}},
	{"event", mcpgo.WithString, "the state-machine event to fire.", []mcpgo.PropertyOption{mcpgo.Enum(machineEvents...)}},
	{"force", mcpgo.WithBoolean, "archive even over undelivered queued messages, discarding them. Not the recommended path: " +
		"only after reading the messages and deciding to throw them away.", nil},
	{"failure_reason", mcpgo.WithString, "why the session failed (for transition, with event fail).", nil},
	{"system_recovery", mcpgo.WithBoolean, "a recovery path's resume, which keeps pending wake-ups (with event resume).", nil},
	{"running_job_id", mcpgo.WithString, "the job that owns the agent process (with event start or resume).", nil},
	{"paused_by", mcpgo.WithString, "who paused (with event pause).", nil},
}

func findAction(name string) (sessionAction, bool) {
	i := slices.IndexFunc(sessionActions, func(a sessionAction) bool { return a.name == name })
	if i < 0 {
		return sessionAction{}, false
	}
	return sessionActions[i], true
}

// actionNames is every action's name, in order.
func actionNames() []string {
	names := make([]string, len(sessionActions))
	for i, a := range sessionActions {
		names[i] = a.name
	}
	return names
}

// actionSessionTool is action_session offering the named actions (nil:
// every action): the self_session group's tool is narrowed to
// SelfSessionActions, with only their arguments.
func actionSessionTool(names []string) mcpgo.Tool {
	if names == nil {
		names = actionNames()
	}
	var doc strings.Builder
	doc.WriteString("Change a session's lifecycle or its editable fields. ")
	usedBy := map[string][]string{}
	for _, n := range names {
		a, _ := findAction(n)
		fmt.Fprintf(&doc, "%s: %s ", a.name, a.doc)
		for _, arg := range a.args {
			usedBy[arg] = append(usedBy[arg], a.name)
		}
	}
	doc.WriteString("A refused action says which state the session is in and which states allow it.")
	opts := []mcpgo.ToolOption{
		mcpgo.WithToolTitle("Act on a session"),
		mcpgo.WithDescription(doc.String()),
		mcpgo.WithString("action", mcpgo.Required(), mcpgo.Enum(names...)),
	}
	for _, arg := range actionArgs {
		users := usedBy[arg.name]
		if len(users) == 0 {
			continue
		}
		desc := readBy(users, names) + arg.doc
		props := append([]mcpgo.PropertyOption{mcpgo.Description(strings.ToUpper(desc[:1]) + desc[1:])}, arg.opts...)
		opts = append(opts, arg.with(arg.name, props...))
	}
	opts = append(opts,
		mcpgo.WithInteger("acting_session_id", mcpgo.Description("Your own session id, when you are a session: it is named on the target's timeline.")),
		mcpgo.WithDestructiveHintAnnotation(true),
		mcpgo.WithOpenWorldHintAnnotation(false),
	)
	return mcpgo.NewTool(ToolActionSession, opts...)
}

// readBy prefixes an argument's description with the actions that read it
// (users, of the offered names), unless every one does.
func readBy(users, names []string) string {
	switch len(names) - len(users) {
	case 0:
		return ""
	case 1:
		for _, n := range names {
			if !slices.Contains(users, n) {
				return "every action but " + n + ": "
			}
		}
	}
	return strings.Join(users, ", ") + ": "
}

// acceptedArgs are the arguments the named actions read, plus action and
// acting_session_id.
func acceptedArgs(names []string) []string {
	accepted := []string{"action"}
	for _, n := range names {
		a, _ := findAction(n)
		for _, arg := range a.args {
			if !slices.Contains(accepted, arg) {
				accepted = append(accepted, arg)
			}
		}
	}
	return append(accepted, "acting_session_id")
}

func (t *tools) actionSession(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
	sel := selectionFrom(ctx)
	offered, via := sel.actions, surface.MCP
	if offered == nil {
		offered = actionNames()
	} else {
		via = surface.MCPSelf
	}
	action, ok := req.GetArguments()["action"].(string)
	if raw := req.GetArguments()["action"]; !ok && raw != nil {
		action = fmt.Sprint(raw)
	}
	if !slices.Contains(offered, action) {
		return mcpgo.NewToolResultError(refuseAction(action, offered, sel.actions != nil)), nil
	}
	a := newArgs(req, acceptedArgs(offered))
	acting := a.int64("acting_session_id")
	var ref string
	if action != "bulk_archive" {
		ref = a.ref("session_id")
	}
	ctx = surface.Outgoing(ctx, via)
	var (
		resp    interface{ GetSession() *lifecyclev1.Session }
		message string
		err     error
	)
	switch action {
	case "pause", "sleep", "unarchive", "restart", "archive", "fail":
		force, reason := a.boolean("force"), a.str("failure_reason")
		if res := a.problem(); res != nil {
			return res, nil
		}
		resp, message, err = t.verb(ctx, action, ref, acting, force, reason)
	case "bulk_archive":
		force := a.boolean("force")
		if res := a.problem(); res != nil {
			return res, nil
		}
		return t.bulkArchive(ctx, req, acting, force), nil
	case "update_title", "update_notes":
		field := strings.TrimPrefix(action, "update_")
		v := a.required(field, action)
		if res := a.problem(); res != nil {
			return res, nil
		}
		in := &lifecyclev1.UpdateSessionRequest{SessionId: ref}
		if field == "title" {
			in.Title = &v
		} else {
			in.Notes = &v
		}
		var r *lifecyclev1.UpdateSessionResponse
		r, err = t.lifecycle.UpdateSession(ctx, in)
		resp, message = r, fmt.Sprintf("Session %d: %s updated.", r.GetSession().GetId(), field)
	case "set_heartbeat":
		in := &lifecyclev1.SetSessionHeartbeatRequest{SessionId: ref, Enabled: a.optBoolean("enabled")}
		if n, ok := a.integer("interval_seconds", minHeartbeatSeconds, maxHeartbeatSeconds); ok {
			in.IntervalSeconds = proto.Int32(int32(n))
		}
		if in.Enabled == nil && in.IntervalSeconds == nil && len(a.problems) == 0 {
			a.problems = append(a.problems, fmt.Sprintf("set_heartbeat needs enabled (true or false), interval_seconds (%d to %d) or both",
				minHeartbeatSeconds, maxHeartbeatSeconds))
		}
		if res := a.problem(); res != nil {
			return res, nil
		}
		var r *lifecyclev1.SetSessionHeartbeatResponse
		r, err = t.lifecycle.SetSessionHeartbeat(ctx, in)
		resp, message = r, heartbeatMessage(r.GetSession())
	case "transition":
		in := &lifecyclev1.TransitionSessionRequest{
			SessionId:       ref,
			Event:           a.str("event"),
			FailureReason:   a.str("failure_reason"),
			SystemRecovery:  a.boolean("system_recovery"),
			RunningJobId:    a.str("running_job_id"),
			PausedBy:        a.str("paused_by"),
			ActingSessionId: acting,
		}
		if in.Event == "" && len(a.problems) == 0 {
			a.problems = append(a.problems, "transition needs event, one of "+strings.Join(machineEvents, ", "))
		}
		if res := a.problem(); res != nil {
			return res, nil
		}
		var r *lifecyclev1.TransitionSessionResponse
		r, err = t.lifecycle.TransitionSession(ctx, in)
		resp, message = r, r.GetMessage()
	}
	if err != nil {
		return t.failure(ctx, ToolActionSession, err), nil
	}
	return t.sessionResult(ctx, message, resp.GetSession(), resp.(proto.Message)), nil
}

// refuseAction says why action is not offered, and what to do instead.
func refuseAction(action string, offered []string, narrowed bool) string {
	switch {
	case action == "":
		return "action is required; use one of " + strings.Join(offered, ", ")
	case narrowed:
		if _, known := findAction(action); known {
			return fmt.Sprintf("action %q is not available on the self-session MCP server (tool_groups=self_session), which offers only %s; "+
				"a session acts on others through the sessions tool group (tool_groups=sessions)", action, strings.Join(offered, ", "))
		}
		fallthrough
	default:
		return fmt.Sprintf("unknown action %q; use one of %s", action, strings.Join(offered, ", "))
	}
}

// verb calls the lifecycle route named by a lifecycle action.
func (t *tools) verb(ctx context.Context, action, ref string, acting *int64, force bool, reason string,
) (interface{ GetSession() *lifecyclev1.Session }, string, error) {
	switch action {
	case "pause":
		r, err := t.lifecycle.PauseSession(ctx, &lifecyclev1.PauseSessionRequest{SessionId: ref, ActingSessionId: acting})
		return r, r.GetMessage(), err
	case "sleep":
		r, err := t.lifecycle.SleepSession(ctx, &lifecyclev1.SleepSessionRequest{SessionId: ref, ActingSessionId: acting})
		return r, r.GetMessage(), err
	case "archive":
		r, err := t.lifecycle.ArchiveSession(ctx, &lifecyclev1.ArchiveSessionRequest{SessionId: ref, ActingSessionId: acting, Force: force})
		return r, r.GetMessage(), err
	case "unarchive":
		r, err := t.lifecycle.UnarchiveSession(ctx, &lifecyclev1.UnarchiveSessionRequest{SessionId: ref, ActingSessionId: acting})
		return r, r.GetMessage(), err
	case "restart":
		r, err := t.lifecycle.RestartSession(ctx, &lifecyclev1.RestartSessionRequest{SessionId: ref, ActingSessionId: acting})
		return r, r.GetMessage(), err
	default: // fail
		r, err := t.lifecycle.FailSession(ctx, &lifecyclev1.FailSessionRequest{SessionId: ref, ActingSessionId: acting, FailureReason: reason})
		return r, r.GetMessage(), err
	}
}

func heartbeatMessage(s *lifecyclev1.Session) string {
	if !s.GetHeartbeatEnabled() {
		return fmt.Sprintf("Session %d: heartbeat off (interval %d s when on).", s.GetId(), s.GetHeartbeatIntervalSeconds())
	}
	return fmt.Sprintf("Session %d: heartbeat on, every %d s.", s.GetId(), s.GetHeartbeatIntervalSeconds())
}

func (t *tools) bulkArchive(ctx context.Context, req mcpgo.CallToolRequest, acting *int64, force bool) *mcpgo.CallToolResult {
	raw, _ := req.GetArguments()["session_ids"].([]any)
	ids := make([]string, 0, len(raw))
	for _, v := range raw {
		switch x := v.(type) {
		case string:
			ids = append(ids, x)
		case float64:
			ids = append(ids, fmt.Sprint(int64(x)))
		default:
			return mcpgo.NewToolResultError(fmt.Sprintf("session_ids must be ids or slugs, got %v", v))
		}
	}
	resp, err := t.lifecycle.BulkArchiveSessions(ctx, &lifecyclev1.BulkArchiveSessionsRequest{SessionIds: ids, Force: force, ActingSessionId: acting})
	if err != nil {
		return t.failure(ctx, ToolActionSession, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Archived %d of %d sessions.", resp.GetArchivedCount(), len(ids))
	for _, e := range resp.GetErrors() {
		fmt.Fprintf(&b, "\n- %s: %s", e.GetSessionId(), e.GetError())
	}
	return mcpgo.NewToolResultText(b.String())
}

func (a *args) boolean(name string) bool {
	b := a.optBoolean(name)
	return b != nil && *b
}

// optBoolean reads a boolean that may be left out (nil).
func (a *args) optBoolean(name string) *bool {
	v, ok := a.m[name]
	if !ok || v == nil {
		return nil
	}
	b, ok := v.(bool)
	if !ok {
		a.problems = append(a.problems, fmt.Sprintf("%s must be true or false", name))
		return nil
	}
	return &b
}

// required reads a string action needs; "" is a value (it clears the
// field), leaving it out is a problem.
func (a *args) required(name, action string) string {
	if v, ok := a.m[name]; !ok || v == nil {
		a.problems = append(a.problems, fmt.Sprintf("%s needs %s (\"\" clears it)", action, name))
		return ""
	}
	return a.str(name)
}
