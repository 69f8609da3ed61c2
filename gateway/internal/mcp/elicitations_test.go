package mcp_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/zimmerhq/zimmer/gateway/internal/lifecyclefake"
	"github.com/zimmerhq/zimmer/gateway/internal/mcp"
	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
)

// answer_elicitation is AnswerElicitation with the tool's arguments, and
// answers the action the agent took; lifecycle's refusal is the tool's
// error, in its words.
func TestAnswerElicitationCallsLifecycle(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.connect(t, "/mcp?tool_groups=sessions")
	require.Contains(t, toolNames(t, c), mcp.ToolAnswerElicitation)

	b.fake.Answer("AnswerElicitation", &lifecyclev1.AnswerElicitationResponse{Session: lifecyclefake.Session(), Action: "accept",
		Message: `Session 1's agent took the answer to elicitation "elicit_demo_1": accept.`}, nil)
	res := call(t, c, mcp.ToolAnswerElicitation, map[string]any{"session_id": "1", "elicitation_id": "elicit_demo_1",
		"action": "accept", "content": map[string]any{"answer": "yes"}})
	require.False(t, res.IsError, textOf(res))
	require.Equal(t, "\nSession 1's agent took the answer to elicitation \"elicit_demo_1\": accept.\n",
		strings.SplitAfter(requireShape(t, res, mcp.OutcomeElicitationAnswered), "accept.\n")[0])
	require.True(t, strings.HasPrefix(textOf(res), "## Elicitation answered\n\n- **session_id:** 1\n- **elicitation_id:** elicit_demo_1\n- **action:** accept\n"),
		textOf(res))
	calls := b.fake.Calls("AnswerElicitation")
	require.Len(t, calls, 1)
	got := calls[0].Request.(*lifecyclev1.AnswerElicitationRequest)
	require.Equal(t, "elicit_demo_1", got.GetElicitationId())
	require.Equal(t, map[string]any{"answer": "yes"}, got.GetContent().AsMap())

	b.fake.Answer("AnswerElicitation", nil, invalid("content.answer", "must be a string, got a number"))
	res = call(t, c, mcp.ToolAnswerElicitation, map[string]any{"session_id": "1", "elicitation_id": "elicit_demo_1",
		"action": "accept", "content": map[string]any{"answer": 5}})
	require.True(t, res.IsError)
	require.Contains(t, textOf(res), "content.answer")

	b.fake.Answer("AnswerElicitation", nil, status.Error(codes.NotFound, `session #1 has no pending elicitation "elicit_demo_1"`))
	res = call(t, c, mcp.ToolAnswerElicitation, map[string]any{"session_id": "1", "elicitation_id": "elicit_demo_1", "action": "cancel"})
	require.True(t, res.IsError)
	require.Contains(t, textOf(res), "no pending elicitation")
}

// get_session shows the question a blocked session's agent waits on, and
// the banner of one that went unanswered.
func TestGetSessionShowsElicitations(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.connect(t, "/mcp?tool_groups=sessions")
	s := lifecyclefake.Session()
	s.Status, s.BlockedOnElicitation = "needs_input", true
	s.LostElicitation = &lifecyclev1.LostElicitation{Reason: "expired", RequestId: "elicit_demo_1", Summary: "Old question?",
		LostAt: timestamppb.New(lifecyclefake.Now)}
	b.fake.Answer("GetSession", &lifecyclev1.GetSessionResponse{Session: s}, nil)
	schema, err := structpb.NewStruct(map[string]any{"type": "object", "properties": map[string]any{"answer": map[string]any{"type": "string"}}})
	require.NoError(t, err)
	b.fake.Answer("ListElicitations", &lifecyclev1.ListElicitationsResponse{Elicitations: []*lifecyclev1.Elicitation{
		{Id: "elicit_demo_2", SessionId: 1, Message: "Ship it?", RequestedSchema: schema}}}, nil)

	text := textOf(call(t, c, mcp.ToolGetSession, map[string]any{"session_id": "1"}))
	require.Contains(t, text, "### Lost elicitation\n\nA question the agent asked went unanswered (expired): elicit_demo_1 — Old question?")
	require.Contains(t, text, "### Pending elicitation\n\n- **Elicitation:** elicit_demo_2\n- **Asked:** Ship it?")
	require.Contains(t, text, `"lost_elicitation":{`)
}
