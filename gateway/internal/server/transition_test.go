package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/zimmerhq/zimmer/gateway/internal/lifecyclefake"
	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/platform/surface"
)

func TestTransitionRoute(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	b.create(t, `{"prompt": "p", "git_root": "/g", "slug": "raw"}`)

	resp := b.call(t, http.MethodPost, "/api/v1/sessions/raw/transition", `{"event": "start", "running_job_id": "job-1"}`)
	require.Equal(t, http.StatusOK, resp.status, string(resp.body))
	body := resp.json(t)
	require.Equal(t, "Session 1: waiting → running.", body["message"])
	require.Equal(t, "running", body["session"].(map[string]any)["status"])

	resp = b.call(t, http.MethodPost, "/api/v1/sessions/1/transition",
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
	resp = b.call(t, http.MethodPost, "/api/v1/sessions/1/transition", `{"event": "pause"}`)
	require.Equal(t, http.StatusUnprocessableEntity, resp.status, string(resp.body))
	require.Equal(t, "cannot pause session 1: it is failed, and pause is only possible from running", resp.errorText(t))

	// An unknown event is 400 naming the valid ones.
	resp = b.call(t, http.MethodPost, "/api/v1/sessions/1/transition", `{"event": "restart"}`)
	require.Equal(t, http.StatusBadRequest, resp.status, string(resp.body))
	require.Equal(t, `event: unknown event "restart"; use one of `+strings.Join(lifecyclefake.Events, ", "), resp.errorText(t))

	resp = b.call(t, http.MethodPost, "/api/v1/sessions/1/transition", `{"event": "resume", "force": true}`)
	require.Equal(t, http.StatusBadRequest, resp.status, string(resp.body))
	require.Contains(t, resp.errorText(t), `unknown field "force"`)
	resp = b.call(t, http.MethodGet, "/api/v1/sessions/1/transition", "")
	require.Equal(t, http.StatusMethodNotAllowed, resp.status, string(resp.body))
}

func TestPatchNotes(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	b.create(t, `{"prompt": "p", "git_root": "/g"}`)

	resp := b.call(t, http.MethodPatch, "/api/v1/sessions/1", `{"notes": "tried X; Y next"}`)
	require.Equal(t, http.StatusOK, resp.status, string(resp.body))
	s := resp.json(t)["session"].(map[string]any)
	require.Equal(t, "tried X; Y next", s["notes"])
	resp = b.call(t, http.MethodGet, "/api/v1/sessions/1", "")
	require.Equal(t, http.StatusOK, resp.status, string(resp.body))
	var got struct{ Session struct{ Notes string } }
	require.NoError(t, json.Unmarshal(resp.body, &got))
	require.Equal(t, "tried X; Y next", got.Session.Notes)

	resp = b.call(t, http.MethodPatch, "/api/v1/sessions/1", `{"notes": "`+strings.Repeat("n", 50_001)+`"}`)
	require.Equal(t, http.StatusBadRequest, resp.status, string(resp.body))
	require.True(t, strings.HasPrefix(resp.errorText(t), "notes: is longer than 50000 characters"), string(resp.body))
}
