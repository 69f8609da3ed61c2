package mcp

import (
	"context"
	"fmt"
	"slices"
	"strings"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/surface"
)

// ToolActionSession acts on a session's lifecycle.
const ToolActionSession = "action_session"

// sessionAction is one action of action_session: what it does, for the
// tool's description, the request it sends and the arguments it reads
// besides action and acting_session_id, each a field of that request.
type sessionAction struct {
	name    string
	doc     string
	request proto.Message
	args    []string
}

// sessionActions are action_session's actions, in the order the tool lists
// them.
var sessionActions = []sessionAction{
	{"follow_up", "send the session its next prompt. Delivered now (REST's 200) when the session is idle (waiting or needs_input): " +
		"the prompt is its turn at once. Queued (REST's 202) when it is running: the prompt waits in the session's queue and is sent " +
		"as its next turn when the current one ends — unless force_immediate, which stops the running turn and delivers now. " +
		"Refused on an archived session (unarchive it first) and a failed one (restart it).",
		&queuev1.FollowUpRequest{}, []string{"session_id", "prompt", "goal", "force_immediate", "idempotency_key"}},
	{"pause", "stop a running turn (→ needs_input).", &lifecyclev1.PauseSessionRequest{}, []string{"session_id"}},
	{"sleep", "a needs_input session goes to waiting; a running one sleeps when its turn ends.", &lifecyclev1.SleepSessionRequest{}, []string{"session_id"}},
	{"pause_until", fmt.Sprintf("the operator's Pause Until: the session sleeps in %s now (a running turn is stopped first) with one "+
		"wake armed at wake_at (in timezone), which resumes it with prompt as its turn; it supersedes the session's other armed "+
		"one-time wake-ups (not its watchers). Refused for a time that cannot be read (%s), in the past or inside the %d s grace "+
		"window (%s), and for a session that never started or is %s or %s (%s).", rules.StatusWaiting, rules.WakeRefusedUnparseable,
		rules.WakeGraceSeconds, rules.WakeRefusedTooSoon, rules.StatusFailed, rules.StatusArchived, rules.WakeRefusedNotWakeable),
		&lifecyclev1.PauseUntilRequest{}, []string{"session_id", "wake_at", "timezone", "prompt"}},
	{"archive", "move to the trash (restorable for 4 days). Refused while messages queued for the session are not delivered: " +
		"the refusal lists them; do not archive then (a session ending its turn gets them as its next turn), or read them and " +
		"pass force to discard them.", &lifecyclev1.ArchiveSessionRequest{}, []string{"session_id", "force"}},
	{"bulk_archive", "archive session_ids, each on its own: a session with queued messages not delivered is refused (listed in " +
		"the errors) unless force.", &lifecyclev1.BulkArchiveSessionsRequest{}, []string{"session_ids", "force"}},
	{"unarchive", "restore: the session lands in needs_input, ready for its next message, whatever state it was archived from.", &lifecyclev1.UnarchiveSessionRequest{}, []string{"session_id"}},
	{"restart", "re-run a failed or idle session (a deliberate resume).", &lifecyclev1.RestartSessionRequest{}, []string{"session_id"}},
	{"refresh", "nudge a session that may be stuck, by its state: a " + rules.StatusNeedsInput + " or " + rules.StatusFailed +
		" session that ran before resumes with a continue nudge as its turn; a session that never started, one asleep on a wake " +
		"still ahead of it, a " + rules.StatusRunning + " one and an " + rules.StatusArchived + " one are left alone, and the " +
		"answer says why.", &lifecyclev1.RefreshSessionRequest{}, []string{"session_id"}},
	{"fail", "mark a session that will not recover as failed, with failure_reason.", &lifecyclev1.FailSessionRequest{}, []string{"session_id", "failure_reason"}},
	{"update_title", "set the session's title.", &lifecyclev1.UpdateSessionRequest{}, []string{"session_id", "title"}},
	{"update_notes", "replace the session's notes, its free-form memory (shown to its agent as <session-notes>).",
		&lifecyclev1.UpdateSessionRequest{}, []string{"session_id", "notes"}},
	{"set_heartbeat", "turn the heartbeat nudge on or off (enabled) and set its interval_seconds; give either or both.",
		&lifecyclev1.SetSessionHeartbeatRequest{}, []string{"session_id", "enabled", "interval_seconds"}},
	{"update_push_notifications", "turn on or off (push_notifications) the push the operator gets when the session pauses and waits " +
		"for its next message; a failure is pushed either way.", &lifecyclev1.UpdateSessionRequest{}, []string{"session_id", "push_notifications"}},
	{"transition", "fire one event of the state machine as the machine states it, with event and the options it reads: the low-level driver " +
		"for harnesses and operators. Prefer the named actions; this one chooses nothing (sleep on a running session is refused, " +
		"unarchive names its target).", &lifecyclev1.TransitionSessionRequest{},
		[]string{"session_id", "event", "failure_reason", "system_recovery", "running_job_id", "paused_by"}},
}

// SelfSessionActions are the actions action_session keeps in the
// self_session group: a session may edit and archive itself, nothing more.
var SelfSessionActions = []string{"update_notes", "update_title", "set_heartbeat", "archive"}

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
	{"session_ids", mcpgo.WithArray, "the ids (numbers or strings) or slugs to archive.", []mcpgo.PropertyOption{mcpgo.Items(map[string]any{
		"anyOf": []any{map[string]any{"type": "integer", "minimum": 1}, map[string]any{"type": "string"}},
	})}},
	{"prompt", mcpgo.WithString, counts.Sprintf("the next turn's prompt, at most %d characters (pause_until: the wake's turn; "+
		"left out, a standard nudge saying the wake-up fired).", rules.MaxPromptChars), nil},
	{"wake_at", mcpgo.WithString, "pause_until: " + wakeAtDoc, nil},
	{"timezone", mcpgo.WithString, "pause_until: " + timezoneDoc, nil},
	{"goal", mcpgo.WithString, counts.Sprintf("set as the session's goal with the prompt, at most %d characters (left out: the goal stays).",
		rules.MaxGoalChars), nil},
	{"force_immediate", mcpgo.WithBoolean, "on a running session, stop its turn and deliver now instead of queueing.", nil},
	{"idempotency_key", mcpgo.WithString, "a retried follow_up with the same key is delivered or queued once.", nil},
	{"title", mcpgo.WithString, counts.Sprintf(`the new title, at most %d characters ("" clears it).`, rules.MaxTitleChars), nil},
	{"notes", mcpgo.WithString, counts.Sprintf(`the notes, replacing the old ones; at most %d characters ("" clears them).`, rules.MaxNotesChars), nil},
	{"enabled", mcpgo.WithBoolean, "true turns the heartbeat nudge on, false off.", nil},
	{"interval_seconds", mcpgo.WithInteger, counts.Sprintf("seconds between heartbeat nudges, %d to %d (a new session has %d).",
		rules.MinHeartbeatSeconds, rules.MaxHeartbeatSeconds, rules.DefaultHeartbeatSeconds),
		[]mcpgo.PropertyOption{mcpgo.Min(rules.MinHeartbeatSeconds), mcpgo.Max(rules.MaxHeartbeatSeconds)}},
	{"push_notifications", mcpgo.WithBoolean, "true: the operator is pushed a notification when the session waits for input; false: not.", nil},
	{"event", mcpgo.WithString, eventDoc(), []mcpgo.PropertyOption{mcpgo.Enum(rules.Events()...)}},
	{"force", mcpgo.WithBoolean, "archive even over queued messages that are not delivered: they are retired to undelivered " +
		"(kept, and listed by get_session as never delivered) and named on the archive line. Not the " +
		"recommended path: only after reading the messages the refusal lists and deciding to throw them away.", nil},
	{"failure_reason", mcpgo.WithString, "why the session failed (for transition, with event fail).", nil},
	{"system_recovery", mcpgo.WithBoolean, "a recovery path's resume, which keeps pending wake-ups (with event resume).", nil},
	{"running_job_id", mcpgo.WithString, "the job that owns the agent process (with event start or resume).", nil},
	{"paused_by", mcpgo.WithString, "who paused (with event pause).", nil},
}

// eventDoc describes the event argument from the state machine's table:
// each event, the states it fires from and leads to, and what it means.
func eventDoc() string {
	var b strings.Builder
	b.WriteString("the state-machine event to fire; each fires only from the states named:")
	for _, t := range rules.Machine() {
		fmt.Fprintf(&b, " %s (%s → %s): %s", t.Event, strings.Join(t.From, ", "), t.To, t.Doc)
	}
	return b.String()
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
	a := readArgs(req, acceptedArgs(offered))
	if sel.session != 0 {
		if res := a.actAs(sel.session); res != nil {
			return res, nil
		}
	}
	action := a.word("action")
	if !slices.Contains(offered, action) {
		if _, known := findAction(action); known && sel.session != 0 {
			return mcpgo.NewToolResultError(fmt.Sprintf("action %q is not open to a session credential, which offers only %s about its own session; "+
				"acting on a session's lifecycle otherwise needs an operator key", action, strings.Join(offered, ", "))), nil
		}
		return mcpgo.NewToolResultError(refuseAction(action, offered, sel.actions != nil)), nil
	}
	def, _ := findAction(action)
	names := append(slices.Clone(def.args), "acting_session_id")
	ctx = surface.Outgoing(ctx, via)
	var (
		resp    sessionResponse
		message string
		err     error
	)
	switch action {
	case "pause":
		in := &lifecyclev1.PauseSessionRequest{}
		if res := a.decode(in, names); res != nil {
			return res, nil
		}
		resp, message, err = send(ctx, in, t.lifecycle.PauseSession)
	case "sleep":
		in := &lifecyclev1.SleepSessionRequest{}
		if res := a.decode(in, names); res != nil {
			return res, nil
		}
		resp, message, err = send(ctx, in, t.lifecycle.SleepSession)
	case "archive":
		in := &lifecyclev1.ArchiveSessionRequest{}
		if res := a.decode(in, names); res != nil {
			return res, nil
		}
		resp, message, err = send(ctx, in, t.lifecycle.ArchiveSession)
	case "unarchive":
		in := &lifecyclev1.UnarchiveSessionRequest{}
		if res := a.decode(in, names); res != nil {
			return res, nil
		}
		resp, message, err = send(ctx, in, t.lifecycle.UnarchiveSession)
	case "restart":
		in := &lifecyclev1.RestartSessionRequest{}
		if res := a.decode(in, names); res != nil {
			return res, nil
		}
		resp, message, err = send(ctx, in, t.lifecycle.RestartSession)
	case "refresh":
		in := &lifecyclev1.RefreshSessionRequest{}
		if res := a.decode(in, names); res != nil {
			return res, nil
		}
		resp, message, err = send(ctx, in, t.lifecycle.RefreshSession)
	case "pause_until":
		if !a.has("wake_at") {
			a.problems = append(a.problems, "pause_until needs wake_at (an ISO-8601 date-time, e.g. \"2030-04-15T09:30:00\", read in timezone)")
		}
		in := &lifecyclev1.PauseUntilRequest{}
		if res := a.decode(in, names); res != nil {
			return res, nil
		}
		if t.triggers == nil {
			return mcpgo.NewToolResultError(noTriggers), nil
		}
		resp, message, err = send(ctx, in, t.triggers.PauseUntil)
	case "fail":
		in := &lifecyclev1.FailSessionRequest{}
		if res := a.decode(in, names); res != nil {
			return res, nil
		}
		resp, message, err = send(ctx, in, t.lifecycle.FailSession)
	case "follow_up":
		in := &queuev1.FollowUpRequest{}
		if res := a.decode(in, names); res != nil {
			return res, nil
		}
		return t.followUp(ctx, in), nil
	case "bulk_archive":
		in := &lifecyclev1.BulkArchiveSessionsRequest{}
		if res := a.decode(in, names); res != nil {
			return res, nil
		}
		return t.bulkArchive(ctx, in), nil
	case "update_title", "update_notes":
		field := strings.TrimPrefix(action, "update_")
		if !a.has(field) {
			a.problems = append(a.problems, fmt.Sprintf("%s needs %s (\"\" clears it)", action, field))
		}
		in := &lifecyclev1.UpdateSessionRequest{}
		if res := a.decode(in, names); res != nil {
			return res, nil
		}
		var r *lifecyclev1.UpdateSessionResponse
		r, err = t.lifecycle.UpdateSession(ctx, in)
		resp, message = r, fmt.Sprintf("Session %d: %s updated.", r.GetSession().GetId(), field)
	case "update_push_notifications":
		if !a.has("push_notifications") {
			a.problems = append(a.problems, "update_push_notifications needs push_notifications (true or false)")
		}
		in := &lifecyclev1.UpdateSessionRequest{}
		if res := a.decode(in, names); res != nil {
			return res, nil
		}
		var r *lifecyclev1.UpdateSessionResponse
		r, err = t.lifecycle.UpdateSession(ctx, in)
		resp, message = r, pushMessage(r.GetSession())
	case "set_heartbeat":
		in := &lifecyclev1.SetSessionHeartbeatRequest{}
		a.into(in, names...)
		if in.Enabled == nil && in.IntervalSeconds == nil && len(a.problems) == 0 {
			a.problems = append(a.problems, fmt.Sprintf("set_heartbeat needs enabled (true or false), interval_seconds (%d to %d) or both",
				rules.MinHeartbeatSeconds, rules.MaxHeartbeatSeconds))
		}
		if res := a.problem(); res != nil {
			return res, nil
		}
		var r *lifecyclev1.SetSessionHeartbeatResponse
		r, err = t.lifecycle.SetSessionHeartbeat(ctx, in)
		resp, message = r, heartbeatMessage(r.GetSession())
	case "transition":
		in := &lifecyclev1.TransitionSessionRequest{}
		a.into(in, names...)
		if in.GetEvent() == "" && len(a.problems) == 0 {
			a.problems = append(a.problems, "transition needs event, one of "+strings.Join(rules.Events(), ", "))
		}
		if res := a.problem(); res != nil {
			return res, nil
		}
		resp, message, err = send(ctx, in, t.lifecycle.TransitionSession)
	}
	if err != nil {
		return t.failure(ctx, ToolActionSession, err), nil
	}
	return t.sessionResult(ctx, message, resp.GetSession(), resp), nil
}

// sessionResponse is a response carrying the session the call left.
type sessionResponse interface {
	proto.Message
	GetSession() *lifecyclev1.Session
}

// send calls rpc with in; its response says what happened in words.
func send[Req proto.Message, Resp interface {
	sessionResponse
	GetMessage() string
}](ctx context.Context, in Req, rpc func(context.Context, Req, ...grpc.CallOption) (Resp, error)) (sessionResponse, string, error) {
	r, err := rpc(ctx, in)
	return r, r.GetMessage(), err
}

// decode decodes the named arguments into in, returning the tool error for
// every problem found so far, nil without any.
func (a *args) decode(in proto.Message, names []string) *mcpgo.CallToolResult {
	a.into(in, names...)
	return a.problem()
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

func pushMessage(s *lifecyclev1.Session) string {
	if s.GetPushNotifications() {
		return fmt.Sprintf("Session %d: push notifications on (the operator is pushed when it waits for input).", s.GetId())
	}
	return fmt.Sprintf("Session %d: push notifications off (a failure is still pushed).", s.GetId())
}

func heartbeatMessage(s *lifecyclev1.Session) string {
	if !s.GetHeartbeatEnabled() {
		return fmt.Sprintf("Session %d: heartbeat off (interval %d s when on).", s.GetId(), s.GetHeartbeatIntervalSeconds())
	}
	return fmt.Sprintf("Session %d: heartbeat on, every %d s.", s.GetId(), s.GetHeartbeatIntervalSeconds())
}

func (t *tools) bulkArchive(ctx context.Context, in *lifecyclev1.BulkArchiveSessionsRequest) *mcpgo.CallToolResult {
	resp, err := t.lifecycle.BulkArchiveSessions(ctx, in)
	if err != nil {
		return t.failure(ctx, ToolActionSession, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Archived %d of %d sessions.", resp.GetArchivedCount(), len(in.GetSessionIds()))
	for _, e := range resp.GetErrors() {
		fmt.Fprintf(&b, "\n- %s: %s", e.GetSessionId(), e.GetError())
	}
	return mcpgo.NewToolResultText(b.String())
}

// followUp sends the follow-up to the queue and says what became of it:
// delivered (REST's 200) or queued (202).
func (t *tools) followUp(ctx context.Context, in *queuev1.FollowUpRequest) *mcpgo.CallToolResult {
	if t.queue == nil {
		return mcpgo.NewToolResultError(noQueue)
	}
	resp, err := t.queue.FollowUp(ctx, in)
	if err != nil {
		return t.failureFrom(ctx, ToolActionSession, "queue", err)
	}
	var lead string
	switch resp.GetOutcome() {
	case queuev1.FollowUpOutcome_FOLLOW_UP_OUTCOME_QUEUED:
		m := resp.GetEnqueuedMessage()
		lead = fmt.Sprintf("Queued for session %s as message %d (position %d): the session is running, so it is sent as its next turn "+
			"when the current one ends.", in.GetSessionId(), m.GetId(), m.GetPosition())
	default:
		lead = fmt.Sprintf("Delivered to session %s: the prompt is its turn now (job %s).", in.GetSessionId(), resp.GetJobId())
	}
	if msg := resp.GetMessage(); msg != "" {
		lead += "\n" + msg
	}
	return t.jsonResult(ctx, lead, resp)
}
