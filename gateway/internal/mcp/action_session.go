package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
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
// besides action and acting_session_id, each a field of that request;
// what the request must hold; and how it is sent.
type sessionAction struct {
	name    string
	doc     string
	request proto.Message
	args    []string
	// needs is an argument the action cannot go without, and a hint of
	// its values for the refusal ("" for none).
	needs, needsHint string
	// check says what the decoded request lacks ("" for nothing); it runs
	// when the arguments decoded without a problem.
	check func(in proto.Message) string
	// undeclaredActingGoesAhead: an acting_session_id that names no session
	// is dropped (and logged) and the call goes ahead as an undeclared
	// caller's, as the original archives whatever the caller said of itself.
	undeclaredActingGoesAhead bool
	// run sends the request and says what became of it.
	run actionRun
}

// actionRun sends an action's decoded request and answers the tool call.
type actionRun func(ctx context.Context, t *tools, in proto.Message) *mcpgo.CallToolResult

// sessionActions are action_session's actions, in the order the tool lists
// them.
var sessionActions = []sessionAction{
	{
		name: "follow_up", doc: "send the session its next prompt. Delivered now (REST's 200) when the session is idle (waiting or needs_input): " +
			"the prompt is its turn at once. Queued (REST's 202) when it is running: the prompt waits in the session's queue and is sent " +
			"as its next turn when the current one ends — unless force_immediate, which stops the running turn and delivers now. " +
			"Refused on an archived session (unarchive it first) and a failed one (restart it).",
		request: &queuev1.FollowUpRequest{}, args: []string{"session_id", "prompt", "goal", "force_immediate", "idempotency_key"},
		run: func(ctx context.Context, t *tools, in proto.Message) *mcpgo.CallToolResult {
			return t.followUp(ctx, in.(*queuev1.FollowUpRequest))
		},
	},
	{
		name: "pause", doc: "stop a running turn (→ needs_input).",
		request: &lifecyclev1.PauseSessionRequest{}, args: []string{"session_id"},
		run: lifecycleRPC(lifecyclev1.LifecycleServiceClient.PauseSession, always(OutcomeSessionPaused)),
	},
	{
		name: "sleep", doc: "a needs_input session goes to waiting; a running one sleeps when its turn ends.",
		request: &lifecyclev1.SleepSessionRequest{}, args: []string{"session_id"},
		run: lifecycleRPC(lifecyclev1.LifecycleServiceClient.SleepSession, sleepOutcome),
	},
	{
		name: "pause_until", doc: fmt.Sprintf("the operator's Pause Until: the session sleeps in %s now (a running turn is stopped first) with one "+
			"wake armed at wake_at (in timezone), which resumes it with prompt as its turn; it supersedes the session's other armed "+
			"one-time wake-ups (not its watchers). Refused for a time that cannot be read (%s), in the past or inside the %d s grace "+
			"window (%s), and for a session that never started or is %s or %s (%s).", rules.StatusWaiting, rules.WakeRefusedUnparseable,
			rules.WakeGraceSeconds, rules.WakeRefusedTooSoon, rules.StatusFailed, rules.StatusArchived, rules.WakeRefusedNotWakeable),
		request: &lifecyclev1.PauseUntilRequest{}, args: []string{"session_id", "wake_at", "timezone", "prompt"},
		needs: "wake_at", needsHint: `(an ISO-8601 date-time, e.g. "2030-04-15T09:30:00", read in timezone)`,
		run: func(ctx context.Context, t *tools, in proto.Message) *mcpgo.CallToolResult {
			if t.triggers == nil {
				return mcpgo.NewToolResultError(noTriggers)
			}
			r, err := t.triggers.PauseUntil(ctx, in.(*lifecyclev1.PauseUntilRequest))
			return t.sessionAnswer(ctx, r, OutcomeSessionPausedUntil, r.GetMessage(), err)
		},
	},
	{
		name: "pause_into_spot_queue", doc: fmt.Sprintf("Pause Until's Spot Queue: the session sleeps in %s with no wake armed (a running turn "+
			"is stopped first), becomes spot, and its own armed one-time wake-ups are superseded; the spot scheduler resumes it, highest "+
			"precedence first, when a turn slot is free. Setting it priority again (PATCH scheduling_class) releases it on the next pass. "+
			"Refused for a session that never started or is %s or %s (%s).", rules.StatusWaiting, rules.StatusFailed, rules.StatusArchived,
			rules.WakeRefusedNotWakeable),
		request: &lifecyclev1.PauseIntoSpotQueueRequest{}, args: []string{"session_id"},
		run: lifecycleRPC(lifecyclev1.LifecycleServiceClient.PauseIntoSpotQueue, always(OutcomeSpotQueued)),
	},
	{
		name: "archive", doc: "move to the trash (restorable for 4 days). Refused while messages queued for the session are not delivered: " +
			"the refusal lists them; do not archive then (a session ending its turn gets them as its next turn), or read them and " +
			"pass force to discard them.",
		request: &lifecyclev1.ArchiveSessionRequest{}, args: []string{"session_id", "force"},
		undeclaredActingGoesAhead: true,
		run:                       lifecycleRPC(lifecyclev1.LifecycleServiceClient.ArchiveSession, always(OutcomeSessionArchived)),
	},
	{
		name: "bulk_archive", doc: "archive session_ids, each on its own: a session with queued messages not delivered is refused (listed in " +
			"the errors) unless force.",
		request: &lifecyclev1.BulkArchiveSessionsRequest{}, args: []string{"session_ids", "force"},
		run: func(ctx context.Context, t *tools, in proto.Message) *mcpgo.CallToolResult {
			return t.bulkArchive(ctx, in.(*lifecyclev1.BulkArchiveSessionsRequest))
		},
	},
	{
		name: "unarchive", doc: "restore in full: the session lands in needs_input, ready for its next message, whatever state it was archived from, " +
			"with the failure and process state it was archived with cleared (failure_reason included); the answer says whether its clone " +
			"comes back (clone_restored) and whether it is recreated from what the archive preserved (clone_recreated).",
		request: &lifecyclev1.UnarchiveSessionRequest{}, args: []string{"session_id"},
		run: lifecycleRPC(lifecyclev1.LifecycleServiceClient.UnarchiveSession, always(OutcomeSessionUnarchived)),
	},
	{
		name: "restart", doc: "re-run a failed or idle session (a deliberate resume); a retry with the same idempotency_key restarts once " +
			"(answered already_applied).",
		request: &lifecyclev1.RestartSessionRequest{}, args: []string{"session_id", "idempotency_key"},
		run: lifecycleRPC(lifecyclev1.LifecycleServiceClient.RestartSession, always(OutcomeSessionRestarted)),
	},
	{
		name: "refresh", doc: "nudge a session that may be stuck, by its state: a stalled one (" + rules.StatusWaiting + ", started " +
			"before, no wake still ahead of it) and a " + rules.StatusFailed + " one resume with a continue nudge as their turn; a " +
			rules.StatusNeedsInput + " one, one that never started, one asleep on a wake still ahead of it or on a watcher, a " +
			rules.StatusRunning + " one and an " + rules.StatusArchived + " one get a plain re-read (no turn), and the answer says why.",
		request: &lifecyclev1.RefreshSessionRequest{}, args: []string{"session_id"},
		run: lifecycleRPC(lifecyclev1.LifecycleServiceClient.RefreshSession, always(OutcomeSessionRefreshed)),
	},
	{
		name: "fail", doc: "mark a session that will not recover as failed, with failure_reason.",
		request: &lifecyclev1.FailSessionRequest{}, args: []string{"session_id", "failure_reason"},
		run: lifecycleRPC(lifecyclev1.LifecycleServiceClient.FailSession, always(OutcomeSessionFailed)),
	},
	{
		name: "update_title", doc: "set the session's title.",
		request: &lifecyclev1.UpdateSessionRequest{}, args: []string{"session_id", "title"},
		needs: "title", needsHint: `("" clears it)`,
		run: updateSession(OutcomeTitleUpdated, fieldUpdated("title")),
	},
	{
		name: "update_notes", doc: "replace the session's notes, its free-form memory (shown to its agent as <session-notes>).",
		request: &lifecyclev1.UpdateSessionRequest{}, args: []string{"session_id", "notes"},
		needs: "notes", needsHint: `("" clears it)`,
		run: updateSession(OutcomeNotesUpdated, fieldUpdated("notes")),
	},
	{
		name: "set_heartbeat", doc: "turn the heartbeat nudge on or off (enabled) and set its interval_seconds; give either or both.",
		request: &lifecyclev1.SetSessionHeartbeatRequest{}, args: []string{"session_id", "enabled", "interval_seconds"},
		check: func(in proto.Message) string {
			if r := in.(*lifecyclev1.SetSessionHeartbeatRequest); r.Enabled == nil && r.IntervalSeconds == nil {
				return fmt.Sprintf("set_heartbeat needs enabled (true or false), interval_seconds (%d to %d) or both",
					rules.MinHeartbeatSeconds, rules.MaxHeartbeatSeconds)
			}
			return ""
		},
		run: func(ctx context.Context, t *tools, in proto.Message) *mcpgo.CallToolResult {
			r, err := t.lifecycle.SetSessionHeartbeat(ctx, in.(*lifecyclev1.SetSessionHeartbeatRequest))
			return t.sessionAnswer(ctx, r, OutcomeHeartbeatSet, heartbeatMessage(r.GetSession()), err)
		},
	},
	{
		name: "update_push_notifications", doc: "turn on or off (push_notifications) the push the operator gets when the session pauses and waits " +
			"for its next message; a failure is pushed either way.",
		request: &lifecyclev1.UpdateSessionRequest{}, args: []string{"session_id", "push_notifications"},
		needs: "push_notifications", needsHint: "(true or false)",
		run: updateSession(OutcomePushSet, pushMessage),
	},
	{
		name: "star", doc: "star the session: it shows in the operator's Starred group, and \"refresh starred\" acts on it even in a frozen category.",
		request: &lifecyclev1.StarSessionRequest{}, args: []string{"session_id"},
		run: func(ctx context.Context, t *tools, in proto.Message) *mcpgo.CallToolResult {
			r, err := t.lifecycle.StarSession(ctx, in.(*lifecyclev1.StarSessionRequest))
			return t.sessionAnswer(ctx, r, OutcomeSessionStarred, fmt.Sprintf("Session %d: starred.", r.GetSession().GetId()), err)
		},
	},
	{
		name: "unstar", doc: "take the session's star away.",
		request: &lifecyclev1.UnstarSessionRequest{}, args: []string{"session_id"},
		run: func(ctx context.Context, t *tools, in proto.Message) *mcpgo.CallToolResult {
			r, err := t.lifecycle.UnstarSession(ctx, in.(*lifecyclev1.UnstarSessionRequest))
			return t.sessionAnswer(ctx, r, OutcomeSessionUnstarred, fmt.Sprintf("Session %d: not starred.", r.GetSession().GetId()), err)
		},
	},
	{
		name: "move_to_category", doc: "file the session under category_id (manage_categories list shows them), or 0 to make it uncategorized; " +
			"a category set this way is never replaced by an inferred one.",
		request: &lifecyclev1.UpdateSessionRequest{}, args: []string{"session_id", "category_id"},
		needs: "category_id", needsHint: "(a category's id, or 0 for uncategorized)",
		run: updateSession(OutcomeCategorySet, categoryMessage),
	},
	{
		name: "transition", doc: "fire one event of the state machine as the machine states it, with event and the options it reads: the low-level driver " +
			"for harnesses and operators. Prefer the named actions; this one chooses nothing (sleep on a running session is refused, " +
			"unarchive names its target).",
		request: &lifecyclev1.TransitionSessionRequest{},
		args:    []string{"session_id", "event", "failure_reason", "system_recovery", "running_job_id", "paused_by"},
		check: func(in proto.Message) string {
			if in.(*lifecyclev1.TransitionSessionRequest).GetEvent() == "" {
				return "transition needs event, one of " + strings.Join(rules.Events(), ", ")
			}
			return ""
		},
		run: lifecycleRPC(lifecyclev1.LifecycleServiceClient.TransitionSession, always(OutcomeTransitionApplied)),
	},
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
	{"idempotency_key", mcpgo.WithString, "follow_up: a retry with the same key is delivered or queued once; restart: a retry with the same " +
		"key restarts once.", nil},
	{"title", mcpgo.WithString, counts.Sprintf(`the new title, at most %d characters ("" clears it).`, rules.MaxTitleChars), nil},
	{"notes", mcpgo.WithString, counts.Sprintf(`the notes, replacing the old ones; at most %d characters ("" clears them).`, rules.MaxNotesChars), nil},
	{"enabled", mcpgo.WithBoolean, "true turns the heartbeat nudge on, false off.", nil},
	{"interval_seconds", mcpgo.WithInteger, counts.Sprintf("seconds between heartbeat nudges, %d to %d (a new session has %d).",
		rules.MinHeartbeatSeconds, rules.MaxHeartbeatSeconds, rules.DefaultHeartbeatSeconds),
		[]mcpgo.PropertyOption{mcpgo.Min(rules.MinHeartbeatSeconds), mcpgo.Max(rules.MaxHeartbeatSeconds)}},
	{"category_id", mcpgo.WithInteger, "the category's id, or 0 for uncategorized.", []mcpgo.PropertyOption{mcpgo.Min(0)}},
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
	if def.undeclaredActingGoesAhead {
		if bad, ok := a.undeclaredActing(); ok {
			t.logger.WarnContext(ctx, action+" with an acting_session_id that is not a session id; archiving as an undeclared caller",
				"acting_session_id", bad)
		}
	}
	if def.needs != "" && !a.has(def.needs) {
		a.problems = append(a.problems, fmt.Sprintf("%s needs %s %s", action, def.needs, def.needsHint))
	}
	in := def.request.ProtoReflect().New().Interface()
	a.into(in, append(slices.Clone(def.args), "acting_session_id")...)
	if def.check != nil && len(a.problems) == 0 {
		if problem := def.check(in); problem != "" {
			a.problems = append(a.problems, problem)
		}
	}
	if res := a.problem(); res != nil {
		return res, nil
	}
	return def.run(surface.Outgoing(ctx, via), t, in), nil
}

// lifecycleRPC is the run of an action that is one lifecycle call whose
// response carries the session it left and says what happened; outcome
// heads the answer, read from the session it left.
func lifecycleRPC[Req proto.Message, Resp interface {
	proto.Message
	GetSession() *lifecyclev1.Session
	GetMessage() string
}](rpc func(lifecyclev1.LifecycleServiceClient, context.Context, Req, ...grpc.CallOption) (Resp, error), outcome func(*lifecyclev1.Session) string) actionRun {
	return func(ctx context.Context, t *tools, in proto.Message) *mcpgo.CallToolResult {
		r, err := rpc(t.lifecycle, ctx, in.(Req))
		return t.sessionAnswer(ctx, r, outcome(r.GetSession()), r.GetMessage(), err)
	}
}

// always is the outcome of an action that comes to one thing.
func always(outcome string) func(*lifecyclev1.Session) string {
	return func(*lifecyclev1.Session) string { return outcome }
}

// sleepOutcome: a needs_input session is asleep now; a running one sleeps
// when its turn ends.
func sleepOutcome(s *lifecyclev1.Session) string {
	if s.GetStatus() == rules.StatusWaiting {
		return OutcomeSessionAsleep
	}
	return OutcomeSleepDeferred
}

// fieldUpdated says that UpdateSession set field of the session.
func fieldUpdated(field string) func(*lifecyclev1.Session) string {
	return func(s *lifecyclev1.Session) string { return fmt.Sprintf("Session %d: %s updated.", s.GetId(), field) }
}

// updateSession is the run of an action that is an UpdateSession, headed
// outcome and saying what it did with message.
func updateSession(outcome string, message func(*lifecyclev1.Session) string) actionRun {
	return func(ctx context.Context, t *tools, in proto.Message) *mcpgo.CallToolResult {
		r, err := t.lifecycle.UpdateSession(ctx, in.(*lifecyclev1.UpdateSessionRequest))
		if err != nil {
			// Before message: a refused update left no session to describe.
			return t.failure(ctx, ToolActionSession, err)
		}
		return t.sessionResult(ctx, outcome, message(r.GetSession()), r.GetSession(), r)
	}
}

// sessionAnswer answers a call whose response r carries the session it
// left, headed outcome, with message saying what happened; or err's tool
// error.
func (t *tools) sessionAnswer(ctx context.Context, r interface {
	proto.Message
	GetSession() *lifecyclev1.Session
}, outcome, message string, err error,
) *mcpgo.CallToolResult {
	if err != nil {
		return t.failure(ctx, ToolActionSession, err)
	}
	return t.sessionResult(ctx, outcome, message, r.GetSession(), r)
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

func categoryMessage(s *lifecyclev1.Session) string {
	if s.CategoryId == nil {
		return fmt.Sprintf("Session %d: uncategorized.", s.GetId())
	}
	return fmt.Sprintf("Session %d: in category #%d.", s.GetId(), s.GetCategoryId())
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
	a := outcome(OutcomeBulkArchive).field("archived_count", resp.GetArchivedCount()).field("asked", len(in.GetSessionIds()))
	if len(resp.GetErrors()) > 0 {
		var b strings.Builder
		b.WriteString("Refused, each saying why:")
		for _, e := range resp.GetErrors() {
			fmt.Fprintf(&b, "\n- %s: %s", e.GetSessionId(), e.GetError())
		}
		a = a.say(b.String())
	}
	return t.jsonResult(ctx, a, resp)
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
	var a answer
	switch resp.GetOutcome() {
	case queuev1.FollowUpOutcome_FOLLOW_UP_OUTCOME_QUEUED:
		a = messageAnswer(OutcomeMessageQueued, resp.GetEnqueuedMessage())
	default:
		a = outcome(OutcomeFollowUpDelivered).field("session_id", in.GetSessionId()).field("job_id", resp.GetJobId())
	}
	return t.jsonResult(ctx, a.say(resp.GetMessage()), resp)
}

// undeclaredActing drops an acting_session_id that names no session (not
// a number, nor a string of digits) and returns what it was: the call then
// goes ahead as an undeclared caller's.
func (a *args) undeclaredActing() (string, bool) {
	v, ok := a.raw["acting_session_id"]
	if !ok {
		return "", false
	}
	var n json.Number
	if json.Unmarshal(v, &n) == nil {
		if _, err := n.Int64(); err == nil {
			return "", false
		}
	}
	var str string
	if json.Unmarshal(v, &str) == nil {
		if _, err := strconv.ParseInt(str, 10, 64); err == nil {
			return "", false
		}
	}
	delete(a.raw, "acting_session_id")
	return string(v), true
}
