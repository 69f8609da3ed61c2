package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"google.golang.org/protobuf/proto"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	notificationv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/notification/v1"
)

// The notification tools: the operator's inbox (the notifications group),
// an agent's push to the operator (the notifications and self_session
// groups) and the operational alerts, read-only (the sessions group).
const (
	ToolGetNotifications     = "get_notifications"
	ToolActionNotification   = "action_notification"
	ToolSendPushNotification = "send_push_notification"
	ToolGetAlerts            = "get_alerts"
)

// notificationTypes are the inbox's types, as the service names them.
var notificationTypes = []string{"needs_input", "failure", "elicitation", "agent_message"}

// Push limits, as the notification service states them
// (SendPushNotificationRequest).
const (
	maxPushTitleChars = 200
	maxPushBodyChars  = 4000
)

// noNotifications is the tool error of a notification call on a gateway
// without the service.
const noNotifications = "the notification service is not configured on this gateway"

// sessionIDDoc describes a session_id argument the notification service
// takes: an id, or a slug the gateway resolves through lifecycle.
const sessionIDDoc = `the session's numeric id (e.g. "42") or its slug`

func getNotificationsTool() mcpgo.Tool {
	return mcpgo.NewTool(ToolGetNotifications,
		mcpgo.WithToolTitle("Get notifications"),
		mcpgo.WithDescription("List the operator's notifications, newest first: needs_input (a session paused and waits for its next "+
			"message; pushed, for a session opted in with push_notifications, once the pause has lasted a while), failure (a session failed; "+
			"pushed whatever the opt-in), elicitation (an agent asks a question) and agent_message (an agent's send_push_notification). "+
			"Each shows whether it is read, dismissed, and stale (the session resumed since, which stales all of its earlier ones). Dismissed ones are left out unless include_dismissed. The answer counts the unread ones across every page."),
		mcpgo.WithBoolean("unread", mcpgo.Description("Only unread notifications.")),
		mcpgo.WithString("type", mcpgo.Enum(notificationTypes...), mcpgo.Description("Only notifications of this type.")),
		mcpgo.WithString("session_id", mcpgo.Description("Only notifications about this session: "+sessionIDDoc+".")),
		mcpgo.WithBoolean("include_dismissed", mcpgo.Description("Also list dismissed notifications.")),
		mcpgo.WithInteger("page_size", mcpgo.Min(0), mcpgo.Max(500), mcpgo.Description("How many to list; 0 or left out: 50, at most 500.")),
		mcpgo.WithString("page_token", mcpgo.Description("next_page_token of the previous answer, for the next page.")),
		mcpgo.WithReadOnlyHintAnnotation(true),
		mcpgo.WithOpenWorldHintAnnotation(false),
	)
}

// notificationActions are action_notification's actions, each with the
// arguments it reads.
var notificationActions = toolActions{
	{"read", []string{"notification_id"}},
	{"dismiss", []string{"notification_id"}},
	{"read_all", []string{"session_id"}},
}

func actionNotificationTool() mcpgo.Tool {
	return mcpgo.NewTool(ToolActionNotification,
		mcpgo.WithToolTitle("Act on notifications"),
		mcpgo.WithDescription("read marks one notification read; dismiss removes one from the inbox's default view (get_notifications "+
			"with include_dismissed still lists it); read_all marks every unread notification read, or only one session's with session_id. "+
			"Each is idempotent."),
		mcpgo.WithString("action", mcpgo.Required(), mcpgo.Enum(notificationActions.names()...)),
		mcpgo.WithInteger("notification_id", mcpgo.Min(1), mcpgo.Description("read, dismiss: the notification's id (get_notifications lists them).")),
		mcpgo.WithString("session_id", mcpgo.Description("read_all: only this session's notifications: "+sessionIDDoc+".")),
		mcpgo.WithDestructiveHintAnnotation(false),
		mcpgo.WithIdempotentHintAnnotation(true),
		mcpgo.WithOpenWorldHintAnnotation(false),
	)
}

func sendPushNotificationTool() mcpgo.Tool {
	return mcpgo.NewTool(ToolSendPushNotification,
		mcpgo.WithToolTitle("Send a push notification"),
		mcpgo.WithDescription("Tell the operator something now: an agent_message notification in their inbox, pushed at once to every "+
			"configured sink (phone, chat, email). For what needs a person's attention — a decision, a blocker, a result worth "+
			"interrupting them for — not for progress reports. From a session credential it comes from your own session."),
		mcpgo.WithString("title", mcpgo.Required(), mcpgo.Description(counts.Sprintf("One line the operator reads first; at most %d characters.", maxPushTitleChars))),
		mcpgo.WithString("body", mcpgo.Description(counts.Sprintf("The detail; at most %d characters.", maxPushBodyChars))),
		mcpgo.WithString("session_id", mcpgo.Description("The session the message is from: "+sessionIDDoc+
			". A session credential sends as its own session: leave it out.")),
		mcpgo.WithReadOnlyHintAnnotation(false),
		mcpgo.WithDestructiveHintAnnotation(false),
		mcpgo.WithIdempotentHintAnnotation(false),
		mcpgo.WithOpenWorldHintAnnotation(true),
	)
}

func getAlertsTool() mcpgo.Tool {
	return mcpgo.NewTool(ToolGetAlerts,
		mcpgo.WithToolTitle("Get operational alerts"),
		mcpgo.WithDescription("List Zimmer's operational alerts, newest first: pages about something that needs a person (a side effect "+
			"that kept failing, a stuck poller), each with how many times it was raised (repeats inside its dedup window are counted on "+
			"it, not paged again). Read-only: the health page's list."),
		mcpgo.WithInteger("page_size", mcpgo.Min(0), mcpgo.Max(500), mcpgo.Description("How many to list; 0 or left out: 50, at most 500.")),
		mcpgo.WithReadOnlyHintAnnotation(true),
		mcpgo.WithOpenWorldHintAnnotation(false),
	)
}

// resolveSession turns the session_id argument, an id or a slug, into the
// number the notification service takes: a slug is resolved through
// lifecycle, which says when it names no session. nil when there is
// nothing to resolve or it resolved.
func (t *tools) resolveSession(ctx context.Context, a *args, tool string) *mcpgo.CallToolResult {
	return t.resolveRef(ctx, a, "session_id", tool)
}

// resolveRef is resolveSession for the argument name.
func (t *tools) resolveRef(ctx context.Context, a *args, name, tool string) *mcpgo.CallToolResult {
	v, ok := a.raw[name]
	if !ok {
		return nil
	}
	var ref string
	if json.Unmarshal(v, &ref) != nil || ref == "" || isDigits(ref) {
		return nil // an id, or a problem decoding reports
	}
	resp, err := t.lifecycle.GetSession(ctx, &lifecyclev1.GetSessionRequest{SessionId: ref})
	if err != nil {
		return t.failure(ctx, tool, err)
	}
	a.raw[name], _ = json.Marshal(resp.GetSession().GetId())
	return nil
}

func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

func (t *tools) getNotifications(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
	in := &notificationv1.ListNotificationsRequest{}
	names := fieldNames(in)
	a := readArgs(req, names)
	if res := t.resolveSession(ctx, a, ToolGetNotifications); res != nil {
		return res, nil
	}
	if res := a.decode(in, names); res != nil {
		return res, nil
	}
	if t.notifications == nil {
		return mcpgo.NewToolResultError(noNotifications), nil
	}
	resp, err := t.notifications.ListNotifications(ctx, in)
	if err != nil {
		return t.failureFrom(ctx, ToolGetNotifications, "notification", err), nil
	}
	var b strings.Builder
	if len(resp.GetNotifications()) == 0 {
		b.WriteString("No notifications match.")
	} else {
		b.WriteString("Newest first:\n")
	}
	for _, n := range resp.GetNotifications() {
		b.WriteString("\n" + notificationLine(n))
	}
	if tok := resp.GetNextPageToken(); tok != "" {
		fmt.Fprintf(&b, "\n\nMore: call %s again with page_token %q.", ToolGetNotifications, tok)
	}
	ans := outcome(OutcomeNotifications).field("unread_count", resp.GetUnreadCount()).field("listed", len(resp.GetNotifications()))
	return t.jsonResult(ctx, ans.say(b.String()), resp), nil
}

// notificationAnswer is an answer headed o about the notification n, as
// its JSON names its fields.
func notificationAnswer(o string, n *notificationv1.Notification) answer {
	a := outcome(o).id("id", n.GetId()).field("type", n.GetType()).id("session_id", n.GetSessionId()).field("title", n.GetTitle()).
		field("read", n.GetRead()).field("dismissed", n.GetDismissed())
	if n.GetCreatedAt() != nil {
		a = a.field("created_at", n.GetCreatedAt().AsTime().UTC().Format(time.RFC3339))
	}
	return a.say(n.GetBody())
}

// notificationLine is one notification as a markdown bullet.
func notificationLine(n *notificationv1.Notification) string {
	var marks []string
	if !n.GetRead() {
		marks = append(marks, "unread")
	}
	if n.GetDismissed() {
		marks = append(marks, "dismissed")
	}
	if n.GetStale() {
		marks = append(marks, "stale")
	}
	line := fmt.Sprintf("- #%d [%s]", n.GetId(), n.GetType())
	if n.GetSessionId() != 0 {
		line += fmt.Sprintf(" session #%d", n.GetSessionId())
	}
	line += " — " + oneLine(n.GetTitle())
	if len(marks) > 0 {
		line += " (" + strings.Join(marks, ", ") + ")"
	}
	if n.GetCreatedAt() != nil {
		line += ", " + n.GetCreatedAt().AsTime().UTC().Format(time.RFC3339)
	}
	if body := n.GetBody(); body != "" {
		line += "\n  " + oneLine(body)
	}
	return line
}

func (t *tools) actionNotification(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
	a, act, res := notificationActions.read(req)
	if res != nil {
		return res, nil
	}
	action, names := act.name, act.args
	if slices.Contains(names, "notification_id") && !a.has("notification_id") {
		a.problems = append(a.problems, action+" needs notification_id (get_notifications lists them)")
	}
	if res := t.resolveSession(ctx, a, ToolActionNotification); res != nil {
		return res, nil
	}
	var (
		resp proto.Message
		ans  answer
		err  error
	)
	switch action {
	case "read":
		in := &notificationv1.MarkNotificationReadRequest{}
		if res := a.decode(in, names); res != nil {
			return res, nil
		}
		if t.notifications == nil {
			return mcpgo.NewToolResultError(noNotifications), nil
		}
		var r *notificationv1.MarkNotificationReadResponse
		r, err = t.notifications.MarkNotificationRead(ctx, in)
		resp, ans = r, notificationAnswer(OutcomeNotificationRead, r.GetNotification())
	case "dismiss":
		in := &notificationv1.DismissNotificationRequest{}
		if res := a.decode(in, names); res != nil {
			return res, nil
		}
		if t.notifications == nil {
			return mcpgo.NewToolResultError(noNotifications), nil
		}
		var r *notificationv1.DismissNotificationResponse
		r, err = t.notifications.DismissNotification(ctx, in)
		resp, ans = r, notificationAnswer(OutcomeNotificationGone, r.GetNotification())
	case "read_all":
		in := &notificationv1.MarkAllNotificationsReadRequest{}
		if res := a.decode(in, names); res != nil {
			return res, nil
		}
		if t.notifications == nil {
			return mcpgo.NewToolResultError(noNotifications), nil
		}
		var r *notificationv1.MarkAllNotificationsReadResponse
		r, err = t.notifications.MarkAllNotificationsRead(ctx, in)
		scope := "every session's"
		if in.GetSessionId() != 0 {
			scope = fmt.Sprintf("session #%d's", in.GetSessionId())
		}
		resp, ans = r, outcome(OutcomeNotificationsRead).field("marked", r.GetMarked()).
			say(fmt.Sprintf("Marked %d of %s unread notifications read.", r.GetMarked(), scope))
	}
	if err != nil {
		return t.failureFrom(ctx, ToolActionNotification, "notification", err), nil
	}
	return t.jsonResult(ctx, ans, resp), nil
}

func (t *tools) sendPushNotification(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
	in := &notificationv1.SendPushNotificationRequest{}
	names := fieldNames(in)
	a := readArgs(req, names)
	if res := t.resolveSession(ctx, a, ToolSendPushNotification); res != nil {
		return res, nil
	}
	if res := a.decode(in, names); res != nil {
		return res, nil
	}
	if own := selectionFrom(ctx).session; own != 0 {
		// A session credential sends as its own session (the service
		// holds to the same whatever it is sent); naming another is a
		// mistake worth saying.
		if in.GetSessionId() != 0 && in.GetSessionId() != own {
			return mcpgo.NewToolResultError(fmt.Sprintf(
				"session_id %d is not your session: this credential sends as session #%d; leave session_id out", in.GetSessionId(), own)), nil
		}
		in.SessionId = own
	}
	if t.notifications == nil {
		return mcpgo.NewToolResultError(noNotifications), nil
	}
	resp, err := t.notifications.SendPushNotification(ctx, in)
	if err != nil {
		return t.failureFrom(ctx, ToolSendPushNotification, "notification", err), nil
	}
	return t.jsonResult(ctx, notificationAnswer(OutcomePushSent, resp.GetNotification()).say("The operator is told now."), resp), nil
}

func (t *tools) getAlerts(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
	in := &notificationv1.ListAlertsRequest{}
	names := fieldNames(in)
	a := readArgs(req, names)
	if res := a.decode(in, names); res != nil {
		return res, nil
	}
	if t.notifications == nil {
		return mcpgo.NewToolResultError(noNotifications), nil
	}
	resp, err := t.notifications.ListAlerts(ctx, in)
	if err != nil {
		return t.failureFrom(ctx, ToolGetAlerts, "notification", err), nil
	}
	var b strings.Builder
	if len(resp.GetAlerts()) == 0 {
		b.WriteString("No alerts.")
	} else {
		b.WriteString("Newest first:\n")
	}
	for _, al := range resp.GetAlerts() {
		fmt.Fprintf(&b, "\n- #%d `%s` ×%d — %s (first %s, last %s)", al.GetId(), al.GetDedupKey(), al.GetOccurrences(), oneLine(al.GetSummary()),
			al.GetFirstSeenAt().AsTime().UTC().Format(time.RFC3339), al.GetLastSeenAt().AsTime().UTC().Format(time.RFC3339))
	}
	return t.jsonResult(ctx, outcome(OutcomeAlerts).field("count", len(resp.GetAlerts())).say(b.String()), resp), nil
}
