package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/surface"
)

// The trigger tools: a session's wake-ups (the triggers group; the two
// that arm one are in self_session too, a credential arming its own).
const (
	ToolWakeMeUpLater                   = "wake_me_up_later"
	ToolWakeMeUpWhenSessionChangesState = "wake_me_up_when_session_changes_state"
	ToolSearchTriggers                  = "search_triggers"
	ToolActionTrigger                   = "action_trigger"
)

// noTriggers is the tool error of a trigger call on a gateway without the
// service.
const noTriggers = "the trigger service is not configured on this gateway"

// wakeArgs, watchArgs: the arming tools' arguments, their requests' fields.
var (
	wakeArgs  = fieldNames(&lifecyclev1.WakeMeUpLaterRequest{})
	watchArgs = fieldNames(&lifecyclev1.WatchSessionRequest{})
)

// wakeDoc is what a one-time wake does and refuses, for the tools that arm
// one, with the refusals' codes (ScheduleWakeUp's, lifecycle's rule).
var wakeDoc = fmt.Sprintf("When it fires, the session is resumed with prompt as its turn (delivered at once to an idle session, "+
	"queued behind a running turn). Refused, with a code: a wake_at or timezone that cannot be read (%s), a time in the past "+
	"or inside the %d s grace window, at least %d s from now (%s), a %s or %s session (%s), a blank prompt (%s).",
	rules.WakeRefusedUnparseable, rules.WakeGraceSeconds, rules.WakeGraceSeconds, rules.WakeRefusedTooSoon,
	rules.StatusFailed, rules.StatusArchived, rules.WakeRefusedNotWakeable, rules.WakeRefusedMissingPrompt)

// wakeAtDoc describes the wake_at argument of the tools that arm a wake.
var wakeAtDoc = fmt.Sprintf(`When to wake: a date-time without an offset, read in timezone, e.g. "2030-04-15T09:30:00" `+
	`(to the minute: "2030-04-15T09:30"); RFC 3339 with a Z is UTC. An offset ("+05:00") or a date alone is refused. `+
	`At least %d s from now.`, rules.WakeGraceSeconds)

// timezoneDoc describes the timezone argument.
const timezoneDoc = `The IANA time zone wake_at is read in, e.g. "America/New_York" or "Europe/Berlin"; left out: UTC. ` +
	`Stored as given and echoed back.`

// promptDoc describes a wake's prompt argument.
var promptDoc = counts.Sprintf("The prompt of the turn the wake starts, at most %d characters; left out: a standard nudge saying the "+
	"wake-up fired.", rules.MaxPromptChars)

// sessionToWakeDoc describes the session_id of the arming tools.
const sessionToWakeDoc = `The session to wake: its numeric id (e.g. "42") or its slug. A session credential arms its own session: leave it out.`

// wakeMeUpLaterTool is the tool as listed at now: its description says the
// server's time, so an agent computes a wake time without a clock of its
// own (the tool filter renders it afresh on every tools/list).
func wakeMeUpLaterTool(now time.Time) mcpgo.Tool {
	return mcpgo.NewTool(ToolWakeMeUpLater,
		mcpgo.WithToolTitle("Wake me up later"),
		mcpgo.WithDescription(fmt.Sprintf("The server's time is now %s (%s UTC). ", now.UTC().Format("2006-01-02T15:04:05"),
			now.UTC().Format("Monday"))+
			"Sleep the session until wake_at (wall-clock time in timezone), or for delay from now, and arm a one-time wake. A "+
			rules.StatusNeedsInput+" or "+rules.StatusWaiting+" session goes to "+rules.StatusWaiting+" now; a "+rules.StatusRunning+
			" one (an agent calling this in its turn) goes to "+rules.StatusWaiting+" when the turn ends. Wakes add up: arming one "+
			"keeps the others. "+wakeDoc+" A deliberate resume before then (a follow-up, a restart) cancels the wake. Give exactly "+
			"one of wake_at and delay."),
		mcpgo.WithString("session_id", mcpgo.Description(sessionToWakeDoc)),
		mcpgo.WithString("wake_at", mcpgo.Description(wakeAtDoc)),
		mcpgo.WithString("timezone", mcpgo.Description(timezoneDoc)),
		mcpgo.WithString("delay", mcpgo.Description(fmt.Sprintf(
			"How long from now to wake, e.g. \"90s\", \"15m\", \"2h\"; at least %d s.", rules.WakeGraceSeconds))),
		mcpgo.WithString("prompt", mcpgo.Description(promptDoc)),
		mcpgo.WithReadOnlyHintAnnotation(false),
		mcpgo.WithDestructiveHintAnnotation(false),
		mcpgo.WithIdempotentHintAnnotation(false),
		mcpgo.WithOpenWorldHintAnnotation(false),
	)
}

func wakeWhenSessionChangesStateTool() mcpgo.Tool {
	return mcpgo.NewTool(ToolWakeMeUpWhenSessionChangesState,
		mcpgo.WithToolTitle("Wake me up when a session changes state"),
		mcpgo.WithDescription("Arm a watcher: when watched_session_id next reaches one of states ("+strings.Join(rules.WatchableStates(), ", ")+
			"), the session gets prompt as its next turn. Arming it puts the session to sleep as a wake does: a "+rules.StatusNeedsInput+
			" one goes to "+rules.StatusWaiting+" now, a "+rules.StatusRunning+" one (an agent calling this in its turn) when the turn "+
			"ends. A watcher fires once, on the first of those states the watched session reaches after it is armed; arm another to "+
			"keep watching. Refused: watching the session itself, a session that does not exist, one already in a state watched for "+
			"(act on it now), a "+rules.StatusFailed+" or "+rules.StatusArchived+" one (it will not transition further), a state "+
			"that cannot be watched. An orchestrator uses it to wait for its children."),
		mcpgo.WithString("session_id", mcpgo.Description(sessionToWakeDoc)),
		mcpgo.WithString("watched_session_id", mcpgo.Required(), mcpgo.Description(
			`The session to watch: its numeric id (e.g. "42") or its slug; not the session to wake.`)),
		mcpgo.WithArray("states", mcpgo.Required(), mcpgo.MinItems(1),
			mcpgo.Items(map[string]any{"type": "string", "enum": rules.WatchableStates()}),
			mcpgo.Description("The states that fire it, at least one.")),
		mcpgo.WithString("prompt", mcpgo.Description(counts.Sprintf("The prompt of the turn it starts, at most %d characters; left out: "+
			"a line naming the watched session and the state it reached.", rules.MaxPromptChars))),
		mcpgo.WithReadOnlyHintAnnotation(false),
		mcpgo.WithDestructiveHintAnnotation(false),
		mcpgo.WithIdempotentHintAnnotation(false),
		mcpgo.WithOpenWorldHintAnnotation(false),
	)
}

func searchTriggersTool() mcpgo.Tool {
	return mcpgo.NewTool(ToolSearchTriggers,
		mcpgo.WithToolTitle("Search triggers"),
		mcpgo.WithDescription("List armed triggers, soonest first: one-time wakes (wake_me_up_later, Pause Until) and watchers "+
			"(wake_me_up_when_session_changes_state). Filter by the session they wake, the session they watch, or kind; "+
			"fired and cancelled ones are not listed."),
		mcpgo.WithString("session_id", mcpgo.Description(`Only triggers waking this session: its numeric id (e.g. "42") or its slug.`)),
		mcpgo.WithString("watched_session_id", mcpgo.Description(`Only watchers of this session: its numeric id or its slug.`)),
		mcpgo.WithString("kind", mcpgo.Enum(rules.TriggerKinds()...),
			mcpgo.Description(fmt.Sprintf("%q: wakes at a time; %q: watchers.", rules.TriggerKindOneTime, rules.TriggerKindSessionState))),
		mcpgo.WithInteger("page_size", mcpgo.Min(0), mcpgo.Max(500), mcpgo.Description("How many to list; 0 or left out: 50, at most 500.")),
		mcpgo.WithReadOnlyHintAnnotation(true),
		mcpgo.WithOpenWorldHintAnnotation(false),
	)
}

// triggerActions are action_trigger's actions, each with the arguments it
// reads.
var triggerActions = toolActions{
	{"cancel", fieldNames(&lifecyclev1.CancelTriggerRequest{})},
}

func actionTriggerTool() mcpgo.Tool {
	return mcpgo.NewTool(ToolActionTrigger,
		mcpgo.WithToolTitle("Act on a trigger"),
		mcpgo.WithDescription("cancel disarms one of a session's armed triggers: its wake never fires (a session asleep on it stays "+
			rules.StatusWaiting+" until something else wakes it). A trigger that already fired or was cancelled is not found."),
		mcpgo.WithString("action", mcpgo.Required(), mcpgo.Enum(triggerActions.names()...)),
		mcpgo.WithString("session_id", mcpgo.Required(), mcpgo.Description(`The session the trigger wakes: its numeric id (e.g. "42") or its slug.`)),
		mcpgo.WithInteger("trigger_id", mcpgo.Required(), mcpgo.Min(1), mcpgo.Description("The trigger's id (search_triggers lists them).")),
		mcpgo.WithDestructiveHintAnnotation(true),
		mcpgo.WithIdempotentHintAnnotation(false),
		mcpgo.WithOpenWorldHintAnnotation(false),
	)
}

// sessionToWake settles the session_id of an arming tool: a session
// credential's own session (naming another is refused), a key's required.
func (t *tools) sessionToWake(ctx context.Context, a *args, tool string) *mcpgo.CallToolResult {
	own := selectionFrom(ctx).session
	if own == 0 {
		if !a.has("session_id") {
			a.problems = append(a.problems, "session_id is required: the session to wake, by numeric id or slug")
		}
		return nil
	}
	if res := t.resolveRef(ctx, a, "session_id", tool); res != nil {
		return res
	}
	if v, ok := a.raw["session_id"]; ok {
		if n, err := parseRef(v); err != nil || n != own {
			return mcpgo.NewToolResultError(fmt.Sprintf(
				"session_id %s is not your session: this credential arms wakes of session #%d only; leave session_id out", a.word("session_id"), own))
		}
	}
	a.raw["session_id"], _ = json.Marshal(fmt.Sprint(own))
	return nil
}

// parseRef reads a resolved session reference: a number, or digits.
func parseRef(v json.RawMessage) (int64, error) {
	var n json.Number
	if err := json.Unmarshal(v, &n); err == nil {
		return n.Int64()
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return 0, err
	}
	return json.Number(s).Int64()
}

// via is the surface a trigger call comes through: the self-session server
// for a session credential.
func via(ctx context.Context) string {
	if selectionFrom(ctx).session != 0 {
		return surface.MCPSelf
	}
	return surface.MCP
}

func (t *tools) wakeMeUpLater(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
	a := readArgs(req, wakeArgs)
	if res := t.sessionToWake(ctx, a, ToolWakeMeUpLater); res != nil {
		return res, nil
	}
	in := &lifecyclev1.WakeMeUpLaterRequest{}
	if res := a.decode(in, wakeArgs); res != nil {
		return res, nil
	}
	if t.triggers == nil {
		return mcpgo.NewToolResultError(noTriggers), nil
	}
	resp, err := t.triggers.WakeMeUpLater(surface.Outgoing(ctx, via(ctx)), in)
	if err != nil {
		return t.failure(ctx, ToolWakeMeUpLater, err), nil
	}
	ans := triggerAnswer(OutcomeWakeUpScheduled, resp.GetTrigger()).field("status", resp.GetSession().GetStatus())
	return t.jsonResult(ctx, ans.say(resp.GetMessage()), resp), nil
}

func (t *tools) wakeWhenSessionChangesState(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
	a := readArgs(req, watchArgs)
	if res := t.sessionToWake(ctx, a, ToolWakeMeUpWhenSessionChangesState); res != nil {
		return res, nil
	}
	if res := t.resolveRef(ctx, a, "watched_session_id", ToolWakeMeUpWhenSessionChangesState); res != nil {
		return res, nil
	}
	in := &lifecyclev1.WatchSessionRequest{}
	if res := a.decode(in, watchArgs); res != nil {
		return res, nil
	}
	if t.triggers == nil {
		return mcpgo.NewToolResultError(noTriggers), nil
	}
	resp, err := t.triggers.WatchSession(surface.Outgoing(ctx, via(ctx)), in)
	if err != nil {
		return t.failure(ctx, ToolWakeMeUpWhenSessionChangesState, err), nil
	}
	return t.jsonResult(ctx, triggerAnswer(OutcomeWatcherArmed, resp.GetTrigger()).say(resp.GetMessage()), resp), nil
}

func (t *tools) searchTriggers(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
	in := &lifecyclev1.SearchTriggersRequest{}
	names := fieldNames(in)
	a := readArgs(req, names)
	for _, ref := range []string{"session_id", "watched_session_id"} {
		if res := t.resolveRef(ctx, a, ref, ToolSearchTriggers); res != nil {
			return res, nil
		}
	}
	if res := a.decode(in, names); res != nil {
		return res, nil
	}
	if t.triggers == nil {
		return mcpgo.NewToolResultError(noTriggers), nil
	}
	resp, err := t.triggers.SearchTriggers(ctx, in)
	if err != nil {
		return t.failure(ctx, ToolSearchTriggers, err), nil
	}
	var b strings.Builder
	if len(resp.GetTriggers()) == 0 {
		b.WriteString("No armed triggers match.")
	} else {
		b.WriteString("Soonest first:\n")
	}
	for _, tr := range resp.GetTriggers() {
		b.WriteString("\n" + triggerLine(tr))
	}
	ans := outcome(OutcomeArmedTriggers).field("count", len(resp.GetTriggers()))
	return t.jsonResult(ctx, ans.say(b.String()), resp), nil
}

func (t *tools) actionTrigger(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
	a, _, res := triggerActions.read(req)
	if res != nil {
		return res, nil
	}
	// cancel, the one action.
	for _, need := range []string{"session_id", "trigger_id"} {
		if !a.has(need) {
			a.problems = append(a.problems, "cancel needs "+need+" (search_triggers lists the armed triggers)")
		}
	}
	in := &lifecyclev1.CancelTriggerRequest{}
	if res := a.decode(in, fieldNames(in)); res != nil {
		return res, nil
	}
	if t.triggers == nil {
		return mcpgo.NewToolResultError(noTriggers), nil
	}
	resp, err := t.triggers.CancelTrigger(surface.Outgoing(ctx, via(ctx)), in)
	if err != nil {
		return t.failure(ctx, ToolActionTrigger, err), nil
	}
	return t.jsonResult(ctx, triggerAnswer(OutcomeTriggerCancelled, resp.GetTrigger()), resp), nil
}

// triggerAnswer is an answer headed o about the trigger tr: what it wakes,
// when, why, and with what, as its JSON names them.
func triggerAnswer(o string, tr *lifecyclev1.Trigger) answer {
	a := outcome(o).id("id", tr.GetId()).id("session_id", tr.GetSessionId()).field("kind", tr.GetKind())
	if tr.GetKind() == rules.TriggerKindSessionState {
		a = a.id("watched_session_id", tr.GetWatchedSessionId()).field("states", strings.Join(tr.GetStates(), " or "))
	} else if tr.GetFireAt() != nil {
		a = a.field("fire_at", formatTime(tr.GetFireAt().AsTime())).field("timezone", tr.GetTimezone())
	}
	a = a.field("source", tr.GetSource())
	if p := tr.GetPrompt(); p != "" {
		a = a.field("prompt", clip(p, 200))
	}
	return a
}

// triggerLine is one trigger as a markdown bullet.
func triggerLine(tr *lifecyclev1.Trigger) string {
	line := fmt.Sprintf("- #%d wakes session #%d", tr.GetId(), tr.GetSessionId())
	switch tr.GetKind() {
	case rules.TriggerKindSessionState:
		line += fmt.Sprintf(" when session #%d is %s", tr.GetWatchedSessionId(), strings.Join(tr.GetStates(), " or "))
	default:
		line += " at " + formatTime(tr.GetFireAt().AsTime())
	}
	if src := tr.GetSource(); src != "" {
		line += " (" + src + ")"
	}
	if p := tr.GetPrompt(); p != "" {
		line += "\n  prompt: " + oneLine(clip(p, 200))
	}
	return line
}

func formatTime(at time.Time) string { return at.UTC().Format(time.RFC3339) }

// clip cuts s to n characters, marking the cut.
func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
