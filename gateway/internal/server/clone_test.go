package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	runnerv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/runner/v1"
)

func TestCloneResolvesTheSessionThenAsksTheRunner(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	resp := b.call(t, http.MethodGet, "/api/v1/sessions/fix-login/clone", "")
	require.Equal(t, http.StatusOK, resp.status, string(resp.body))
	require.Equal(t, "fix-login", b.lastRequest(t, "GetSession").(*lifecyclev1.GetSessionRequest).GetSessionId())
	calls := b.runner.Calls("GetClone")
	require.Len(t, calls, 1)
	require.Equal(t, "1", calls[0].Request.(*runnerv1.GetCloneRequest).GetSessionId(), "the id lifecycle resolved the slug to")
	require.Equal(t, "operator", string(calls[0].Principal.Kind), "the caller's principal is forwarded")

	clone := resp.json(t)["clone"].(map[string]any)
	require.Equal(t, "preserved", clone["state"])
	require.Equal(t, "node-a", clone["node"])
	require.Equal(t, "2026-01-03T03:04:05Z", clone["trash_after"])
	artifacts := clone["artifacts"].(map[string]any)
	require.Equal(t, "/srv/workspaces/.preserved/1", artifacts["dir"])
	require.NotNil(t, artifacts["patch_bytes"], "sizes are shown")
}

func TestCloneFailures(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	b.fake.Answer("GetSession", nil, notFound("nope"))
	resp := b.call(t, http.MethodGet, "/api/v1/sessions/nope/clone", "")
	require.Equal(t, http.StatusNotFound, resp.status)
	require.Empty(t, b.runner.Calls(), "an unknown session never reaches the runner")

	b.fake.Answer("GetSession", &lifecyclev1.GetSessionResponse{Session: &lifecyclev1.Session{Id: 1}}, nil)
	b.runner.FailWith(status.Error(codes.NotFound, "session 1 has no clone: the runner has not made one for it yet"))
	resp = b.call(t, http.MethodGet, "/api/v1/sessions/1/clone", "")
	require.Equal(t, http.StatusNotFound, resp.status)
	require.Contains(t, resp.errorText(t), "has no clone")
}
