package console_test

import (
	"context"
	"net/http"
	"net/url"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
)

// elicitations is the fake lifecycle's pending question and the answers it
// was sent, per test bundle.
type elicitations struct {
	mu      sync.Mutex
	pending *lifecyclev1.Elicitation
	answers []*lifecyclev1.AnswerElicitationRequest
}

var elicitationFakes sync.Map // *fakes → *elicitations

func elicitationsOf(f *fakes) *elicitations {
	e, _ := elicitationFakes.LoadOrStore(f, &elicitations{})
	return e.(*elicitations)
}

func (l fakeLifecycle) ListElicitations(context.Context, *lifecyclev1.ListElicitationsRequest, ...grpc.CallOption) (*lifecyclev1.ListElicitationsResponse, error) {
	e := elicitationsOf(l.f)
	e.mu.Lock()
	defer e.mu.Unlock()
	resp := &lifecyclev1.ListElicitationsResponse{}
	if e.pending != nil {
		resp.Elicitations = append(resp.Elicitations, e.pending)
	}
	return resp, nil
}

// AnswerElicitation refuses content whose answer is not "yes" as lifecycle
// refuses a mismatch, naming the field.
func (l fakeLifecycle) AnswerElicitation(_ context.Context, in *lifecyclev1.AnswerElicitationRequest, _ ...grpc.CallOption) (*lifecyclev1.AnswerElicitationResponse, error) {
	e := elicitationsOf(l.f)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.answers = append(e.answers, in)
	if in.GetAction() == "accept" && in.GetContent().AsMap()["answer"] != "yes" {
		return nil, status.Error(codes.InvalidArgument, "content.answer: must be one of \"yes\", \"no\"")
	}
	return &lifecyclev1.AnswerElicitationResponse{Session: l.f.session, Action: in.GetAction(),
		Message: "Session 7's agent took the answer to elicitation \"elicit_demo_1\": " + in.GetAction() + "."}, nil
}

func TestABlockedSessionsPageAsksTheAgentsQuestion(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.fakes.session.BlockedOnElicitation = true
	schema, err := structpb.NewStruct(map[string]any{
		"type": "object",
		"properties": map[string]any{
			"answer":  map[string]any{"type": "string", "enum": []any{"yes", "no"}, "title": "Ship it?"},
			"copies":  map[string]any{"type": "integer", "minimum": 1, "maximum": 3},
			"confirm": map[string]any{"type": "boolean"},
		},
		"required": []any{"answer"},
	})
	require.NoError(t, err)
	e := elicitationsOf(b.fakes)
	e.pending = &lifecyclev1.Elicitation{Id: "elicit_demo_1", SessionId: 7, Message: hostile, RequestedSchema: schema,
		RequestedAt: timestamppb.Now()}
	c := b.signedIn(t)

	page := b.get(t, c, "/console/sessions/7")
	require.Equal(t, http.StatusOK, page.code, page.body)
	require.Contains(t, page.body, "The agent asks")
	require.NotContains(t, page.body, hostile, "the question is escaped")
	require.Contains(t, page.body, `action="/console/sessions/7/elicitations/elicit_demo_1/answer"`)
	require.Contains(t, page.body, `<select id="content.answer" name="content.answer"><option>yes</option><option>no</option></select>`)
	require.Contains(t, page.body, `name="content.copies" type="number" min="1" max="3" step="1"`)
	require.Contains(t, page.body, `type="checkbox" name="content.confirm"`)
	for _, action := range []string{"accept", "decline", "cancel"} {
		require.Contains(t, page.body, `name="action" value="`+action+`"`)
	}

	token := b.csrf(t, c, "/console/sessions/7")
	form := url.Values{"csrf": {token}, "action": {"accept"}, "content.answer": {"maybe"}, "content.copies": {"2"}}
	refused := b.post(t, c, "/console/sessions/7/elicitations/elicit_demo_1/answer", form)
	require.Equal(t, http.StatusUnprocessableEntity, refused.code, refused.body)
	require.Contains(t, refused.body, "content.answer: must be one of")

	form.Set("content.answer", "yes")
	answered := b.post(t, c, "/console/sessions/7/elicitations/elicit_demo_1/answer", form)
	require.Equal(t, http.StatusSeeOther, answered.code, answered.body)
	e.mu.Lock()
	last := e.answers[len(e.answers)-1]
	e.mu.Unlock()
	require.Equal(t, map[string]any{"answer": "yes", "copies": 2.0, "confirm": false}, last.GetContent().AsMap(),
		"the form's inputs are sent as the schema types them")

	declined := b.post(t, c, "/console/sessions/7/elicitations/elicit_demo_1/answer", url.Values{"csrf": {token}, "action": {"decline"}})
	require.Equal(t, http.StatusSeeOther, declined.code, declined.body)
	e.mu.Lock()
	last = e.answers[len(e.answers)-1]
	e.mu.Unlock()
	require.Equal(t, "decline", last.GetAction())
	require.Nil(t, last.GetContent(), "a decline sends no content")

	noCSRF := b.post(t, c, "/console/sessions/7/elicitations/elicit_demo_1/answer", url.Values{"action": {"cancel"}})
	require.Equal(t, http.StatusForbidden, noCSRF.code)
}

func TestALostElicitationShowsItsBanner(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.fakes.session.LostElicitation = &lifecyclev1.LostElicitation{Reason: "expired", RequestId: "elicit_demo_4",
		Summary: "Which branch?", LostAt: timestamppb.Now()}
	c := b.signedIn(t)
	page := b.get(t, c, "/console/sessions/7")
	require.Equal(t, http.StatusOK, page.code, page.body)
	require.Contains(t, page.body, "A question the agent asked went unanswered")
	require.Contains(t, page.body, "(expired, elicit_demo_4, just now)")
	require.Contains(t, page.body, "Which branch?")
	require.NotContains(t, page.body, "The agent asks", "nothing is pending")
}
