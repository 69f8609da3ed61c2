package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"google.golang.org/protobuf/proto"

	"github.com/zimmerhq/zimmer/gateway/internal/grpcerr"
	"github.com/zimmerhq/zimmer/gateway/internal/wirejson"
	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"
)

// ToolManageEnqueuedMessages lists, queues, edits, reorders and deletes
// the messages queued for a session (the queue service's methods).
const ToolManageEnqueuedMessages = "manage_enqueued_messages"

// enqueuedActions are manage_enqueued_messages' actions, each with the
// arguments it reads (decoded into its request message with protojson).
var enqueuedActions = []struct {
	name string
	args []string
}{
	{"list", []string{"session_id"}},
	{"create", []string{"session_id", "content", "goal", "acting_session_id", "idempotency_key"}},
	{"update", []string{"session_id", "message_id", "content", "goal", "position"}},
	{"delete", []string{"session_id", "message_id"}},
}

func manageEnqueuedMessagesTool() mcpgo.Tool {
	names := make([]string, len(enqueuedActions))
	for i, a := range enqueuedActions {
		names[i] = a.name
	}
	return mcpgo.NewTool(ToolManageEnqueuedMessages,
		mcpgo.WithToolTitle("Manage a session's queued messages"),
		mcpgo.WithDescription("Messages queued for a session are sent to it one by one, in position order, as its next turns once it is idle. "+
			"list shows the queue (pending and processing messages in order, then sent and undelivered ones); create queues a message at the end "+
			"(refused on an archived or failed session); update edits a pending message's content or goal, or moves it to position; "+
			"delete removes a pending message. Each message shows its origin: caller, or automated_<notice> for a notice Zimmer queued itself."),
		mcpgo.WithString("action", mcpgo.Required(), mcpgo.Enum(names...)),
		mcpgo.WithString("session_id", mcpgo.Required(), mcpgo.Description(`The session's numeric id (e.g. "42") or its slug.`)),
		mcpgo.WithInteger("message_id", mcpgo.Description("update, delete: the queued message's id.")),
		mcpgo.WithString("content", mcpgo.Description(counts.Sprintf("create (required), update: the message, up to %d characters; it becomes the turn's prompt.", 500000))),
		mcpgo.WithString("goal", mcpgo.Description(counts.Sprintf("create, update: set as the session's goal when the message is sent, up to %d characters.", 50000))),
		mcpgo.WithInteger("position", mcpgo.Min(1), mcpgo.Description("update: move the message here; 1 is sent first.")),
		mcpgo.WithString("idempotency_key", mcpgo.Description("create: a retried create with the same key queues nothing new and returns the first message.")),
		mcpgo.WithInteger("acting_session_id", mcpgo.Description("create: your own session id, when you are a session.")),
		mcpgo.WithOpenWorldHintAnnotation(false),
	)
}

func (t *tools) manageEnqueuedMessages(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
	accepted := []string{"action"}
	for _, a := range enqueuedActions {
		for _, n := range a.args {
			if !slices.Contains(accepted, n) {
				accepted = append(accepted, n)
			}
		}
	}
	a := readArgs(req, accepted)
	action := a.word("action")
	var names []string
	for _, ea := range enqueuedActions {
		if ea.name == action {
			names = ea.args
		}
	}
	if names == nil {
		offered := make([]string, len(enqueuedActions))
		for i, ea := range enqueuedActions {
			offered[i] = ea.name
		}
		if action == "" {
			return mcpgo.NewToolResultError("action is required; use one of " + strings.Join(offered, ", ")), nil
		}
		return mcpgo.NewToolResultError(fmt.Sprintf("unknown action %q; use one of %s", action, strings.Join(offered, ", "))), nil
	}
	for k := range a.raw {
		if k != "action" && !slices.Contains(names, k) {
			a.problems = append(a.problems, fmt.Sprintf("argument %q is not read by action %s (it reads %s)", k, action, strings.Join(names, ", ")))
		}
	}
	if sel := selectionFrom(ctx); sel.session != 0 && action == "create" {
		if res := a.actAs(sel.session); res != nil {
			return res, nil
		}
	}
	if t.queue == nil {
		return mcpgo.NewToolResultError("the queue service is not configured on this gateway"), nil
	}
	var (
		resp proto.Message
		lead string
		err  error
	)
	switch action {
	case "list":
		in := &queuev1.ListEnqueuedMessagesRequest{}
		if res := a.decode(in, names); res != nil {
			return res, nil
		}
		var r *queuev1.ListEnqueuedMessagesResponse
		r, err = t.queue.ListEnqueuedMessages(ctx, in)
		if err == nil {
			resp, lead = r, listLead(in.GetSessionId(), r.GetEnqueuedMessages())
		}
	case "create":
		in := &queuev1.EnqueueMessageRequest{}
		if res := a.decode(in, names); res != nil {
			return res, nil
		}
		var r *queuev1.EnqueueMessageResponse
		r, err = t.queue.EnqueueMessage(ctx, in)
		resp, lead = r, r.GetMessage()
	case "update":
		in := &queuev1.UpdateEnqueuedMessageRequest{}
		if res := a.decode(in, names); res != nil {
			return res, nil
		}
		var r *queuev1.UpdateEnqueuedMessageResponse
		r, err = t.queue.UpdateEnqueuedMessage(ctx, in)
		m := r.GetEnqueuedMessage()
		resp, lead = r, fmt.Sprintf("Message %d updated; it is at position %d of session %d's queue.", m.GetId(), m.GetPosition(), m.GetSessionId())
	case "delete":
		in := &queuev1.DeleteEnqueuedMessageRequest{}
		if res := a.decode(in, names); res != nil {
			return res, nil
		}
		resp, err = t.queue.DeleteEnqueuedMessage(ctx, in)
		lead = fmt.Sprintf("Message %d deleted from session %s's queue; the messages behind it moved up.", in.GetMessageId(), in.GetSessionId())
	}
	if err != nil {
		p := grpcerr.From("queue", err)
		if p.Internal() {
			t.logger.ErrorContext(ctx, "MCP tool call failed", "tool", ToolManageEnqueuedMessages, "code", p.Code.String(), "error", err)
		}
		return mcpgo.NewToolResultError(p.Message), nil
	}
	body, merr := wirejson.NewMarshaler().Marshal(resp)
	if merr != nil {
		t.logger.ErrorContext(ctx, "render enqueued messages as JSON", "error", merr)
		return mcpgo.NewToolResultError("internal error rendering the queue; retry, and report it if it persists"), nil
	}
	return mcpgo.NewToolResultStructured(json.RawMessage(body), lead+"\n\n```json\n"+string(body)+"\n```"), nil
}

// listLead is the queue in words, one line a message, so a model reads the
// order and each message's origin without parsing the JSON.
func listLead(ref string, ms []*queuev1.EnqueuedMessage) string {
	if len(ms) == 0 {
		return fmt.Sprintf("Session %s has no queued messages.", ref)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Session %s's queue:\n", ref)
	for _, m := range ms {
		where := m.GetStatus()
		if m.GetPosition() > 0 {
			where = fmt.Sprintf("#%d %s", m.GetPosition(), m.GetStatus())
		}
		fmt.Fprintf(&b, "- [%s] message %d, origin %s: %s\n", where, m.GetId(), m.GetOrigin(), preview(strings.Join(strings.Fields(m.GetContent()), " ")))
	}
	return strings.TrimRight(b.String(), "\n")
}
