package mcp

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"google.golang.org/protobuf/proto"

	"github.com/zimmerhq/zimmer/gateway/internal/rest"
	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/surface"
)

// ToolManageEnqueuedMessages lists, queues, edits, reorders and deletes
// the messages queued for a session (the queue service's methods).
const ToolManageEnqueuedMessages = "manage_enqueued_messages"

// enqueuedActions are manage_enqueued_messages' actions, each with the
// arguments it reads (decoded into its request message with protojson).
var enqueuedActions = toolActions{
	{"list", []string{"session_id", "status", "page", "per_page"}},
	{"get", []string{"session_id", "message_id"}},
	{"create", []string{"session_id", "content", "goal", "acting_session_id", "idempotency_key"}},
	{"update", []string{"session_id", "message_id", "content", "goal", "position"}},
	{"reorder", []string{"session_id", "message_id", "position"}},
	{"delete", []string{"session_id", "message_id"}},
	{"send_now", []string{"session_id", "message_id", "content", "goal", "acting_session_id"}},
	{"interrupt", []string{"session_id", "message_id", "acting_session_id"}},
}

// queueStatuses are a queued message's statuses (the queue's words), the
// list action's filter.
var queueStatuses = []string{rest.StatusPending, rest.StatusProcessing, "sent", rest.StatusUndelivered}

func manageEnqueuedMessagesTool() mcpgo.Tool {
	return mcpgo.NewTool(ToolManageEnqueuedMessages,
		mcpgo.WithToolTitle("Manage a session's queued messages"),
		mcpgo.WithDescription("Messages queued for a session are sent to it one by one, in position order, as its next turns: each when a turn ends, "+
			"or soon after the session comes to rest. "+
			"list shows the queue a page at a time (pending and processing messages in order, then sent and undelivered ones: undelivered were never delivered, "+
			"and each says why: its session was archived or deleted first, or it could never be a turn), optionally only some statuses; "+
			"get shows one message by its id; create queues a message at the end (refused on an archived or failed session); "+
			"update edits a pending message's content or goal, or moves it to position; reorder moves a pending message to position; "+
			"delete removes a pending message; "+
			"send_now delivers a pending message now when the session is idle, or, when it is running, moves it to the front so it is "+
			"the next turn when the current one ends — give content (and goal) instead of message_id to queue a message and send it in one call; "+
			"interrupt stops the running turn and delivers the message as the next turn "+
			"(on an idle session it delivers at once). Each message shows its origin: caller, or automated_<notice> for a notice Zimmer queued itself."),
		mcpgo.WithString("action", mcpgo.Required(), mcpgo.Enum(enqueuedActions.names()...)),
		mcpgo.WithString("session_id", mcpgo.Required(), mcpgo.Description(`The session's numeric id (e.g. "42") or its slug.`)),
		mcpgo.WithInteger("message_id", mcpgo.Description("get, update, reorder, delete, send_now, interrupt: the queued message's id "+
			"(send_now: or content instead).")),
		mcpgo.WithString("content", mcpgo.Description(counts.Sprintf("create (required), update, send_now (instead of message_id): the message, "+
			"up to %d characters; it becomes the turn's prompt.", rules.MaxPromptChars))),
		mcpgo.WithString("goal", mcpgo.Description(counts.Sprintf("create, update, send_now (with content): set as the session's goal when the "+
			"message is sent, up to %d characters; a blank goal never replaces the session's.", rules.MaxGoalChars))),
		mcpgo.WithInteger("position", mcpgo.Min(1), mcpgo.Description("reorder (required), update: move the message here; 1 is sent first.")),
		mcpgo.WithAny("status", oneOrMany(queueStatuses), mcpgo.Description(
			"list: only messages of this status or these statuses ("+strings.Join(queueStatuses, ", ")+"); none means every status.")),
		mcpgo.WithInteger("page", mcpgo.Min(1), mcpgo.Description("list: the page to show, from 1 (the default).")),
		mcpgo.WithInteger("per_page", mcpgo.Min(1), mcpgo.Max(rules.MaxPerPage), mcpgo.Description(counts.Sprintf(
			"list: messages per page, %d when left out, at most %d.", rules.DefaultPerPage, rules.MaxPerPage))),
		mcpgo.WithString("idempotency_key", mcpgo.Description("create: a retried create with the same key queues nothing new and returns the first message.")),
		mcpgo.WithInteger("acting_session_id", mcpgo.Description("create, send_now, interrupt: your own session id, when you are a session "+
			"(a session credential always acts as its own session).")),
		mcpgo.WithOpenWorldHintAnnotation(false),
	)
}

func (t *tools) manageEnqueuedMessages(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
	a, act, res := enqueuedActions.read(req)
	if res != nil {
		return res, nil
	}
	action, names := act.name, act.args
	if sel := selectionFrom(ctx); sel.session != 0 && slices.Contains(names, "acting_session_id") {
		if res := a.actAs(sel.session); res != nil {
			return res, nil
		}
	}
	if t.queue == nil {
		return mcpgo.NewToolResultError(noQueue), nil
	}
	// The queue names the surface where it records who queued or
	// interrupted (the uncle edge's entry point).
	ctx = surface.Outgoing(ctx, surface.MCP)
	var (
		resp proto.Message
		ans  answer
		err  error
	)
	switch action {
	case "list":
		a.oneAsList("status")
		in := &queuev1.ListEnqueuedMessagesRequest{}
		if res := a.decode(in, names); res != nil {
			return res, nil
		}
		var r *queuev1.ListEnqueuedMessagesResponse
		r, err = t.queue.ListEnqueuedMessages(ctx, in)
		if err == nil {
			resp, ans = r, listAnswer(in.GetSessionId(), r.GetEnqueuedMessages(), r.GetPagination())
		}
	case "get":
		in := &queuev1.GetEnqueuedMessageRequest{}
		if res := a.decode(in, names); res != nil {
			return res, nil
		}
		var r *queuev1.GetEnqueuedMessageResponse
		r, err = t.queue.GetEnqueuedMessage(ctx, in)
		resp, ans = r, messageAnswer(OutcomeQueuedMessage, r.GetEnqueuedMessage()).say(messageLine(r.GetEnqueuedMessage()))
	case "reorder":
		if !a.has("position") {
			return mcpgo.NewToolResultError("reorder needs position: where to move the message (1 is sent first)"), nil
		}
		in := &queuev1.UpdateEnqueuedMessageRequest{}
		if res := a.decode(in, names); res != nil {
			return res, nil
		}
		var r *queuev1.UpdateEnqueuedMessageResponse
		r, err = t.queue.UpdateEnqueuedMessage(ctx, in)
		resp, ans = r, messageAnswer(OutcomeMessageMoved, r.GetEnqueuedMessage())
	case "create":
		in := &queuev1.EnqueueMessageRequest{}
		if res := a.decode(in, names); res != nil {
			return res, nil
		}
		var r *queuev1.EnqueueMessageResponse
		r, err = t.queue.EnqueueMessage(ctx, in)
		resp, ans = r, messageAnswer(OutcomeMessageQueued, r.GetEnqueuedMessage()).say(r.GetMessage())
	case "update":
		in := &queuev1.UpdateEnqueuedMessageRequest{}
		if res := a.decode(in, names); res != nil {
			return res, nil
		}
		var r *queuev1.UpdateEnqueuedMessageResponse
		r, err = t.queue.UpdateEnqueuedMessage(ctx, in)
		resp, ans = r, messageAnswer(OutcomeMessageUpdated, r.GetEnqueuedMessage())
	case "delete":
		in := &queuev1.DeleteEnqueuedMessageRequest{}
		if res := a.decode(in, names); res != nil {
			return res, nil
		}
		resp, err = t.queue.DeleteEnqueuedMessage(ctx, in)
		ans = outcome(OutcomeMessageDeleted).field("session_id", in.GetSessionId()).id("id", in.GetMessageId()).
			say("The messages behind it moved up.")
	case "send_now":
		in := &queuev1.SendEnqueuedMessageNowRequest{}
		if res := a.decode(in, names); res != nil {
			return res, nil
		}
		var staged string
		if in.GetMessageId() == 0 && (a.has("content") || a.has("goal")) {
			// Stage and send in one call: queue the message, then send it.
			if a.has("message_id") {
				return mcpgo.NewToolResultError("send_now takes message_id or content, not both"), nil
			}
			create := &queuev1.EnqueueMessageRequest{}
			if res := a.decode(create, names); res != nil {
				return res, nil
			}
			var c *queuev1.EnqueueMessageResponse
			if c, err = t.queue.EnqueueMessage(ctx, create); err != nil {
				return t.failureFrom(ctx, ToolManageEnqueuedMessages, "queue", err), nil
			}
			in.MessageId = c.GetEnqueuedMessage().GetId()
			staged = fmt.Sprintf("Message %d was queued for session %s, then sent now.", in.GetMessageId(), in.GetSessionId())
		}
		var r *queuev1.SendEnqueuedMessageNowResponse
		r, err = t.queue.SendEnqueuedMessageNow(ctx, in)
		ans = messageAnswer(OutcomeMessageFirstInLine, r.GetEnqueuedMessage()).say(staged).
			say("The session is running, so the message is its next turn when the current one ends (interrupt stops the turn now).")
		if r.GetDelivered() {
			ans = messageAnswer(OutcomeMessageSent, r.GetEnqueuedMessage()).say(staged).say("It is the session's turn now.")
		}
		resp, ans = r, ans.say(r.GetMessage())
	case "interrupt":
		in := &queuev1.InterruptWithEnqueuedMessageRequest{}
		if res := a.decode(in, names); res != nil {
			return res, nil
		}
		var r *queuev1.InterruptWithEnqueuedMessageResponse
		r, err = t.queue.InterruptWithEnqueuedMessage(ctx, in)
		m := r.GetEnqueuedMessage()
		switch {
		case r.GetInterrupted():
			ans = messageAnswer(OutcomeTurnInterrupted, m).say("The running turn was stopped: the message is the session's turn now.")
		case m.GetStatus() == "pending":
			// The turn it was to halt had given way to another, which runs
			// whole; the queue's message says so.
			ans = messageAnswer(OutcomeMessageFirstInLine, m).say("The running turn was not stopped: the message is next in line.")
		default:
			ans = messageAnswer(OutcomeMessageSent, m).say("The session was not running a turn: the message is its turn now.")
		}
		resp, ans = r, ans.say(r.GetMessage())
	}
	if err != nil {
		return t.failureFrom(ctx, ToolManageEnqueuedMessages, "queue", err), nil
	}
	return t.jsonResult(ctx, ans, resp), nil
}

// messageAnswer is an answer headed o about the queued message m: its id,
// session, place and status, as its JSON names them.
func messageAnswer(o string, m *queuev1.EnqueuedMessage) answer {
	a := outcome(o).id("id", m.GetId()).id("session_id", m.GetSessionId())
	if m.GetPosition() > 0 {
		a = a.field("position", m.GetPosition())
	}
	return a.field("status", m.GetStatus()).field("origin", m.GetOrigin())
}

// listAnswer is the queue in words, one line a message, so a model reads
// the order and each message's origin without parsing the JSON.
func listAnswer(ref string, ms []*queuev1.EnqueuedMessage, p *queuev1.Pagination) answer {
	a := outcome(OutcomeQueuedMessages).field("session_id", ref).field("total_count", p.GetTotalCount())
	if p.GetTotalPages() > 1 || p.GetPage() > 1 {
		a = a.field("page", fmt.Sprintf("%d of %d", p.GetPage(), p.GetTotalPages()))
	}
	if len(ms) == 0 && p.GetTotalCount() == 0 {
		return a.say(fmt.Sprintf("Session %s has no queued messages.", ref))
	}
	var b strings.Builder
	for _, m := range ms {
		b.WriteString(messageLine(m))
	}
	return a.say(b.String())
}

// messageLine is one queued message in words: where it is, who wrote it,
// what it says; an undelivered one says it was never delivered.
func messageLine(m *queuev1.EnqueuedMessage) string {
	where := m.GetStatus()
	switch {
	case m.GetPosition() > 0:
		where = fmt.Sprintf("#%d %s", m.GetPosition(), m.GetStatus())
	case m.GetStatus() == rest.StatusUndelivered:
		where = "undelivered: never delivered"
		if why := m.GetUndeliveredReason(); why != "" {
			where += " because " + why
		}
		if at := m.GetUndeliveredAt(); at != nil {
			where += ", retired " + at.AsTime().UTC().Format(time.RFC3339)
		}
	}
	return fmt.Sprintf("- [%s] message %d, origin %s: %s\n", where, m.GetId(), m.GetOrigin(), preview(strings.Join(strings.Fields(m.GetContent()), " ")))
}

// queueSection is get_session's section on the session's queued messages
// (rest.DetailEnqueuedMessages): ok false when the queue could not be
// asked, which must not read as an empty queue.
func queueSection(ms []*queuev1.EnqueuedMessage, ok bool) string {
	var b strings.Builder
	b.WriteString("### Queued messages\n\n")
	switch {
	case !ok:
		b.WriteString("Unavailable: the queue service could not be asked, so messages may be queued all the same.\n")
	case len(ms) == 0:
		b.WriteString("None waiting, and none undelivered.\n")
	default:
		b.WriteString("Pending ones are sent in position order as the session's next turns; undelivered ones were accepted and never " +
			"delivered (each says why).\n\n")
		for _, m := range ms {
			b.WriteString(messageLine(m))
		}
	}
	return b.String()
}
