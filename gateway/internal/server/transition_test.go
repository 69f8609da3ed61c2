package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/surface"
)

func TestTransitionRoute(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	// What lifecycle answers for each event this test fires at session 1,
	// which it has just created (waiting).
	b.fake.Handle("TransitionSession", func(m proto.Message) (proto.Message, error) {
		req := m.(*lifecyclev1.TransitionSessionRequest)
		switch req.GetEvent() {
		case "start":
			return &lifecyclev1.TransitionSessionResponse{
				Session: &lifecyclev1.Session{Id: 1, Slug: "raw", Status: "running"}, Message: "Session 1: waiting → running.",
			}, nil
		case "fail":
			return &lifecyclev1.TransitionSessionResponse{
				Session: &lifecyclev1.Session{Id: 1, Slug: "raw", Status: "failed", FailureReason: req.GetFailureReason()},
				Message: "Session 1: running → failed.",
			}, nil
		case "pause":
			return nil, status.Error(codes.FailedPrecondition, "cannot pause session 1: it is failed, and pause is only possible from running")
		}
		return nil, invalid("event", `unknown event "`+req.GetEvent()+`"; use one of `+strings.Join(rules.Events(), ", "))
	})
	b.create(t, `{"prompt": "p", "git_root": "/g", "slug": "raw"}`)

	// The low-level driver needs the admin scope: an operator key is 403,
	// naming it, and lifecycle never hears of the call.
	before := len(b.fake.Calls())
	resp := b.call(t, http.MethodPost, "/api/v1/sessions/raw/transition", `{"event": "start"}`)
	require.Equal(t, http.StatusForbidden, resp.status, string(resp.body))
	require.Equal(t, "TransitionSession needs an admin key (ZIMMER_ADMIN_API_KEYS); this operator key lacks the admin scope", resp.errorText(t))
	require.Len(t, b.fake.Calls(), before)

	resp = b.admin(t, http.MethodPost, "/api/v1/sessions/raw/transition", `{"event": "start", "running_job_id": "job-1"}`)
	require.Equal(t, http.StatusOK, resp.status, string(resp.body))
	body := resp.json(t)
	require.Equal(t, "Session 1: waiting → running.", body["message"])
	require.Equal(t, "running", body["session"].(map[string]any)["status"])
	require.True(t, proto.Equal(&lifecyclev1.TransitionSessionRequest{SessionId: "raw", Event: "start", RunningJobId: "job-1"},
		b.lastRequest(t, "TransitionSession")))

	resp = b.admin(t, http.MethodPost, "/api/v1/sessions/1/transition",
		`{"event": "fail", "failure_reason": "gave up", "acting_session_id": 9, "system_recovery": false, "paused_by": ""}`)
	require.Equal(t, http.StatusOK, resp.status, string(resp.body))
	require.Equal(t, "gave up", resp.json(t)["session"].(map[string]any)["failure_reason"])
	calls := b.fake.Calls()
	last := calls[len(calls)-1]
	require.Equal(t, surface.REST, last.Surface)
	require.True(t, proto.Equal(&lifecyclev1.TransitionSessionRequest{
		SessionId: "1", Event: "fail", FailureReason: "gave up", ActingSessionId: proto.Int64(9),
	}, last.Request), "%v", last.Request)

	// A refusal is 422 naming the event and the state.
	resp = b.admin(t, http.MethodPost, "/api/v1/sessions/1/transition", `{"event": "pause"}`)
	require.Equal(t, http.StatusUnprocessableEntity, resp.status, string(resp.body))
	require.Equal(t, "cannot pause session 1: it is failed, and pause is only possible from running", resp.errorText(t))

	// An unknown event is 422 naming the valid ones.
	resp = b.admin(t, http.MethodPost, "/api/v1/sessions/1/transition", `{"event": "restart"}`)
	require.Equal(t, http.StatusUnprocessableEntity, resp.status, string(resp.body))
	require.Equal(t, `event: unknown event "restart"; use one of `+strings.Join(rules.Events(), ", "), resp.errorText(t))

	before = len(b.fake.Calls())
	resp = b.admin(t, http.MethodPost, "/api/v1/sessions/1/transition", `{"event": "resume", "force": true}`)
	require.Equal(t, http.StatusUnprocessableEntity, resp.status, string(resp.body))
	require.Contains(t, resp.errorText(t), `force: is not a field of this request`)
	resp = b.call(t, http.MethodGet, "/api/v1/sessions/1/transition", "")
	require.Equal(t, http.StatusMethodNotAllowed, resp.status, string(resp.body))
	require.Len(t, b.fake.Calls(), before, "neither reached lifecycle")
}

func TestPatchNotes(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	b.create(t, `{"prompt": "p", "git_root": "/g"}`)
	noted := &lifecyclev1.Session{Id: 1, Status: "waiting", Notes: "tried X; Y next"}

	b.fake.Answer("UpdateSession", &lifecyclev1.UpdateSessionResponse{Session: noted}, nil)
	resp := b.call(t, http.MethodPatch, "/api/v1/sessions/1", `{"notes": "tried X; Y next"}`)
	require.Equal(t, http.StatusOK, resp.status, string(resp.body))
	require.True(t, proto.Equal(&lifecyclev1.UpdateSessionRequest{SessionId: "1", Notes: proto.String("tried X; Y next")},
		b.lastRequest(t, "UpdateSession")), "only the notes are sent")
	s := resp.json(t)["session"].(map[string]any)
	require.Equal(t, "tried X; Y next", s["notes"])
	b.fake.Answer("GetSession", &lifecyclev1.GetSessionResponse{Session: noted}, nil)
	resp = b.call(t, http.MethodGet, "/api/v1/sessions/1", "")
	require.Equal(t, http.StatusOK, resp.status, string(resp.body))
	var got struct{ Session struct{ Notes string } }
	require.NoError(t, json.Unmarshal(resp.body, &got))
	require.Equal(t, "tried X; Y next", got.Session.Notes)

	long := strings.Repeat("n", rules.MaxNotesChars+1)
	b.fake.Answer("UpdateSession", nil, invalid("notes",
		"is longer than 50000 characters; keep the notes short and put the detail in the repository"))
	resp = b.call(t, http.MethodPatch, "/api/v1/sessions/1", `{"notes": "`+long+`"}`)
	require.Equal(t, http.StatusUnprocessableEntity, resp.status, string(resp.body))
	require.True(t, strings.HasPrefix(resp.errorText(t), "notes: is longer than 50000 characters"), string(resp.body))
	require.Equal(t, long, b.lastRequest(t, "UpdateSession").(*lifecyclev1.UpdateSessionRequest).GetNotes(), "sent whole: lifecycle judges")
}
