package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/zimmerhq/zimmer/gateway/internal/grpcerr"
	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

// ToolAnswerElicitation answers the question a session's agent is blocked
// on: POST /api/v1/sessions/{id}/elicitations/{eid}/answer.
const ToolAnswerElicitation = "answer_elicitation"

// answerElicitationArgs are AnswerElicitationRequest's fields.
var answerElicitationArgs = fieldNames(&lifecyclev1.AnswerElicitationRequest{})

func answerElicitationTool() mcpgo.Tool {
	return mcpgo.NewTool(ToolAnswerElicitation,
		mcpgo.WithToolTitle("Answer an elicitation"),
		mcpgo.WithDescription("Answer the question a session's agent is blocked on (an MCP elicitation; get_session shows it under "+
			"\"Pending elicitation\" with its id and requested schema). \""+rules.ElicitAccept+"\" sends `content`, an object matching the "+
			"requested schema; \""+rules.ElicitDecline+"\" and \""+rules.ElicitCancel+"\" send none. The answer reaches the agent's process and "+
			"the session goes back to running; the result says what the agent did with it. Refused, saying why: content that does not match "+
			"the schema (naming the field), an elicitation that is not pending any more (answered, expired, or its turn ended), an archived "+
			"session. Same as POST /api/v1/sessions/{id}/elicitations/{elicitation_id}/answer."),
		mcpgo.WithString("session_id", mcpgo.Required(), mcpgo.Description(`The session's numeric id (e.g. "42") or its slug.`)),
		mcpgo.WithString("elicitation_id", mcpgo.Required(), mcpgo.Description("The pending elicitation's id, as get_session shows it.")),
		mcpgo.WithString("action", mcpgo.Required(), mcpgo.Enum(rules.ElicitationActions()...),
			mcpgo.Description("accept (with content), decline or cancel.")),
		mcpgo.WithObject("content", mcpgo.Description("With accept: the answer, an object matching the elicitation's requested schema.")),
		mcpgo.WithReadOnlyHintAnnotation(false),
		mcpgo.WithDestructiveHintAnnotation(false),
		mcpgo.WithIdempotentHintAnnotation(false),
		mcpgo.WithOpenWorldHintAnnotation(false),
	)
}

func (t *tools) answerElicitation(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
	a := readArgs(req, answerElicitationArgs)
	in := &lifecyclev1.AnswerElicitationRequest{}
	a.into(in, answerElicitationArgs...)
	if res := a.problem(); res != nil {
		return res, nil
	}
	resp, err := t.lifecycle.AnswerElicitation(ctx, in)
	if err != nil {
		return t.failure(ctx, ToolAnswerElicitation, err), nil
	}
	ans := outcome(OutcomeElicitationAnswered).id("session_id", resp.GetSession().GetId()).field("elicitation_id", in.GetElicitationId()).
		field("action", resp.GetAction())
	return t.jsonResult(ctx, ans.say(resp.GetMessage()), resp), nil
}

// elicitationSection is get_session's "### Pending elicitation": the
// question a blocked session's agent waits on, with what answers it; ""
// when it waits on none.
func (t *tools) elicitationSection(ctx context.Context, s *lifecyclev1.Session) string {
	if !s.GetBlockedOnElicitation() {
		return ""
	}
	resp, err := t.lifecycle.ListElicitations(ctx, &lifecyclev1.ListElicitationsRequest{SessionId: fmt.Sprint(s.GetId())})
	if err != nil {
		return "### Pending elicitation\n\nUnavailable: " + grpcerr.From("lifecycle", err).Message + "\n"
	}
	var b strings.Builder
	b.WriteString("### Pending elicitation\n\n")
	if len(resp.GetElicitations()) == 0 {
		b.WriteString("The agent is blocked on a question Zimmer was not told; it cannot be answered here.\n")
	}
	for _, e := range resp.GetElicitations() {
		fmt.Fprintf(&b, "- **Elicitation:** %s\n- **Asked:** %s\n", e.GetId(), oneLine(e.GetMessage()))
		if e.GetExpiresAt() != nil {
			fmt.Fprintf(&b, "- **Expires:** %s\n", e.GetExpiresAt().AsTime().UTC().Format(time.RFC3339))
		}
		if e.GetRequestedSchema() != nil {
			schema, _ := json.Marshal(e.GetRequestedSchema().AsMap())
			fmt.Fprintf(&b, "- **Requested schema:** `%s`\n", schema)
		}
		fmt.Fprintf(&b, "\nAnswer it with %s (accept with content, decline or cancel).\n", ToolAnswerElicitation)
	}
	return b.String()
}
