package mcp

import (
	"context"
	"fmt"
	"strings"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"google.golang.org/protobuf/proto"

	notificationv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/notification/v1"
)

// ToolManageSlackTriggers lists, creates and deletes the Slack triggers
// (the triggers group). Its methods take an operator key: a session
// credential is refused by the service, whatever group it selects.
const ToolManageSlackTriggers = "manage_slack_triggers"

// slackTriggerActions are manage_slack_triggers' actions, each with the
// arguments it reads.
var slackTriggerActions = toolActions{
	{"list", nil},
	{"create", []string{"channel", "allowed_user_ids", "prefix", "require_mention", "git_root", "agent_root", "agent_runtime"}},
	{"delete", []string{"trigger_id"}},
}

func manageSlackTriggersTool() mcpgo.Tool {
	return mcpgo.NewTool(ToolManageSlackTriggers,
		mcpgo.WithToolTitle("Manage Slack triggers"),
		mcpgo.WithDescription("A Slack trigger starts a session from a Slack message: a message in its channel (or a direct message to "+
			"the app, channel \"dm\") from one of its allowed_user_ids, starting with its prefix or mentioning the app when it asks for "+
			"that, becomes a new session's prompt (made from git_root, agent_root and agent_runtime), and Zimmer answers in the message's "+
			"thread with the session's link. A reply in that thread from an allowed user is the session's follow-up. Who may fire a "+
			"trigger is its list; whether the sender's words are recorded as a human's is the roster's (/supervisor/users). "+
			"list shows them; create adds one; delete removes one (sessions it started go on; its threads take no more follow-ups). "+
			"Operator keys only."),
		mcpgo.WithString("action", mcpgo.Required(), mcpgo.Enum(slackTriggerActions.names()...)),
		mcpgo.WithString("channel", mcpgo.Description(`create: a Slack channel ID (e.g. "C012AB3CD"), or "dm" for direct messages to the app.`)),
		mcpgo.WithArray("allowed_user_ids", mcpgo.WithStringItems(),
			mcpgo.Description(`create: the Slack user IDs (e.g. "U012AB3CD") that may fire it and follow up in its threads; at least one.`)),
		mcpgo.WithString("prefix", mcpgo.Description("create: only messages starting with this fire; it is cut from the prompt.")),
		mcpgo.WithBoolean("require_mention", mcpgo.Description("create: only messages mentioning the app fire; the mention is cut from the prompt.")),
		mcpgo.WithString("git_root", mcpgo.Description("create: the repository a started session's clone is made from (required).")),
		mcpgo.WithString("agent_root", mcpgo.Description("create: the started session's agent root.")),
		mcpgo.WithString("agent_runtime", mcpgo.Description("create: the started session's agent runtime.")),
		mcpgo.WithInteger("trigger_id", mcpgo.Min(1), mcpgo.Description("delete: the trigger's id (list shows them).")),
		mcpgo.WithDestructiveHintAnnotation(true),
		mcpgo.WithIdempotentHintAnnotation(false),
		mcpgo.WithOpenWorldHintAnnotation(true),
	)
}

// slackTriggerLine is one trigger as a markdown bullet.
func slackTriggerLine(t *notificationv1.SlackTrigger) string {
	where := "channel " + t.GetChannel()
	if t.GetChannel() == "dm" {
		where = "direct messages to the app"
	}
	line := fmt.Sprintf("- #%d %s, allowed: %s", t.GetId(), where, strings.Join(t.GetAllowedUserIds(), ", "))
	if p := t.GetPrefix(); p != "" {
		line += fmt.Sprintf(", prefix %q", p)
	}
	if t.GetRequireMention() {
		line += ", must mention the app"
	}
	line += " → " + t.GetGitRoot()
	if r := t.GetAgentRoot(); r != "" {
		line += ", agent root " + r
	}
	if r := t.GetAgentRuntime(); r != "" {
		line += ", runtime " + r
	}
	return line
}

func (t *tools) manageSlackTriggers(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
	a, act, res := slackTriggerActions.read(req)
	if res != nil {
		return res, nil
	}
	if act.name == "delete" && !a.has("trigger_id") {
		a.problems = append(a.problems, "delete needs trigger_id (list shows them)")
	}
	var (
		resp proto.Message
		ans  answer
		err  error
	)
	switch act.name {
	case "list":
		in := &notificationv1.ListSlackTriggersRequest{}
		if res := a.decode(in, act.args); res != nil {
			return res, nil
		}
		if t.notifications == nil {
			return mcpgo.NewToolResultError(noNotifications), nil
		}
		var r *notificationv1.ListSlackTriggersResponse
		r, err = t.notifications.ListSlackTriggers(ctx, in)
		var b strings.Builder
		if len(r.GetSlackTriggers()) == 0 {
			b.WriteString("No Slack triggers.")
		} else {
			b.WriteString("Oldest first:\n")
		}
		for _, st := range r.GetSlackTriggers() {
			b.WriteString("\n" + slackTriggerLine(st))
		}
		resp, ans = r, outcome(OutcomeSlackTriggers).field("count", len(r.GetSlackTriggers())).say(b.String())
	case "create":
		in := &notificationv1.CreateSlackTriggerRequest{}
		if res := a.decode(in, act.args); res != nil {
			return res, nil
		}
		if t.notifications == nil {
			return mcpgo.NewToolResultError(noNotifications), nil
		}
		var r *notificationv1.CreateSlackTriggerResponse
		r, err = t.notifications.CreateSlackTrigger(ctx, in)
		resp, ans = r, outcome(OutcomeSlackTriggerCreated).id("id", r.GetSlackTrigger().GetId()).say(slackTriggerLine(r.GetSlackTrigger()))
	case "delete":
		in := &notificationv1.DeleteSlackTriggerRequest{}
		if res := a.decode(in, act.args); res != nil {
			return res, nil
		}
		if t.notifications == nil {
			return mcpgo.NewToolResultError(noNotifications), nil
		}
		var r *notificationv1.DeleteSlackTriggerResponse
		r, err = t.notifications.DeleteSlackTrigger(ctx, in)
		resp, ans = r, outcome(OutcomeSlackTriggerDeleted).id("id", in.GetTriggerId())
	}
	if err != nil {
		return t.failureFrom(ctx, ToolManageSlackTriggers, "notification", err), nil
	}
	return t.jsonResult(ctx, ans, resp), nil
}
