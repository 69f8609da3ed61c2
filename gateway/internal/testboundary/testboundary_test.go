package testboundary_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/gateway/internal/grpctest"
	"github.com/zimmerhq/zimmer/gateway/internal/lineagefake"
	"github.com/zimmerhq/zimmer/gateway/internal/testboundary"
	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
	"github.com/zimmerhq/zimmer/services/platform/boundary"
	"github.com/zimmerhq/zimmer/services/platform/slogx"
)

const token = "test-boundary-token-0123456789"

// setup serves the boundary over a fake lineage behind the real
// authorizer, reached as the gateway reaches it: as a Zimmer service.
func setup(t *testing.T) (string, *lineagefake.Server) {
	t.Helper()
	lineage := lineagefake.New()
	conn := grpctest.DialAsService(t, grpctest.Serve(t, lineage.Register))
	ts := httptest.NewServer(testboundary.NewHandler(lineagev1.NewProvenanceServiceClient(conn), token, slogx.Discard()))
	t.Cleanup(ts.Close)
	return ts.URL, lineage
}

func post(t *testing.T, url, authorization, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/test/human_messages", strings.NewReader(body))
	require.NoError(t, err)
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// The boundary declares the actor its caller established to lineage, as
// metadata lineage believes from a service; the request's fields say only
// what was said and where.
func TestTheBoundaryDeclaresItsActor(t *testing.T) {
	t.Parallel()
	url, lineage := setup(t)
	lineage.Answer("RecordHumanMessage", &lineagev1.RecordHumanMessageResponse{Recorded: true, Message: &lineagev1.HumanMessage{
		Id: 1, Author: "tadasant", Provenance: "web_ui.follow_up", AuthoredInSessionId: 7, Content: "ship it",
	}}, nil)
	code, body := post(t, url, "Bearer "+token,
		`{"actor": {"kind": "web_ui_admin"}, "provenance": "web_ui.follow_up", "authored_in_session_id": 7, "content": "ship it", "occurred_at": "2026-02-01T09:00:00Z"}`)
	require.Equal(t, http.StatusOK, code, body)
	require.JSONEq(t, `{"recorded": true, "message": {"id": 1, "author": "tadasant", "provenance": "web_ui.follow_up", "authored_in_session_id": 7, "content": "ship it"}}`, body)

	lineage.Answer("RecordHumanMessage", &lineagev1.RecordHumanMessageResponse{NotRecordedReason: "slack user U42 belongs to nobody in the users roster"}, nil)
	code, body = post(t, url, "Bearer "+token,
		`{"actor": {"kind": "slack_user", "slack_user_id": "U42"}, "provenance": "slack.dm", "authored_in_session_id": 7, "content": "x"}`)
	require.Equal(t, http.StatusOK, code, body)
	require.JSONEq(t, `{"recorded": false, "not_recorded_reason": "slack user U42 belongs to nobody in the users roster"}`, body)

	got := lineage.Recorded()
	require.Len(t, got, 1)
	require.Equal(t, boundary.Actor{Kind: boundary.WebUIAdmin}, got[0].Actor)
	require.Equal(t, "2026-02-01T09:00:00Z", got[0].Request.GetOccurredAt().AsTime().Format("2006-01-02T15:04:05Z07:00"))
}

// Only its own token opens it; an actor it cannot declare and a body it
// cannot read are refused before lineage is asked.
func TestTheBoundaryRefuses(t *testing.T) {
	t.Parallel()
	url, lineage := setup(t)
	msg := `{"actor": {"kind": "web_ui_admin"}, "provenance": "web_ui.follow_up", "authored_in_session_id": 7, "content": "x"}`
	for _, auth := range []string{"", "Bearer nope", "Bearer " + grpctest.OperatorKey, "Bearer " + grpctest.AdminKey, "Bearer " + grpctest.InternalToken, token, "Basic " + token} {
		code, body := post(t, url, auth, msg)
		require.Equal(t, http.StatusUnauthorized, code, "%q: %s", auth, body)
		require.Contains(t, body, testboundary.UnauthorizedMessage)
	}
	code, body := post(t, url, "Bearer "+token, `{"actor": {"kind": "author", "slack_user_id": "tadasant"}, "provenance": "web_ui.follow_up", "content": "x"}`)
	require.Equal(t, http.StatusUnprocessableEntity, code, body)
	require.Contains(t, body, `actor: unknown actor kind \"author\"`)
	code, body = post(t, url, "Bearer "+token, `{"author": "tadasant", "content": "x"}`)
	require.Equal(t, http.StatusBadRequest, code, body)
	require.Contains(t, body, `unknown field \"author\"`)
	require.Empty(t, lineage.Calls("RecordHumanMessage"))
}

// Only a test build serves it, and only with a token long enough not to
// be guessed; unset, every build is fine.
func TestValidate(t *testing.T) {
	t.Parallel()
	require.NoError(t, testboundary.Validate(""))
	err := testboundary.Validate(token)
	if !testboundary.Compiled {
		require.ErrorContains(t, err, "GATEWAY_TEST_BOUNDARY_TOKEN is set, but this gateway was built without the testboundary tag")
		return
	}
	require.NoError(t, err)
	require.ErrorContains(t, testboundary.Validate("short"), "at least 16 characters")
}
