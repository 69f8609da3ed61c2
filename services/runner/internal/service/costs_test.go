package service_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	runnerv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/runner/v1"
	"github.com/zimmerhq/zimmer/services/platform/servicetest"
	"github.com/zimmerhq/zimmer/services/runner/internal/service"
)

// TestCostsThroughTheAPI: the gateway (a service) reports MCP responses,
// a retried report counting once and get_session_provenance apart; an
// operator reads the sums; a client key cannot report; a bad range is
// refused naming the field and writes nothing.
func TestCostsThroughTheAPI(t *testing.T) {
	t.Parallel()
	svc := servicetest.New(t, service.New, servicetest.Config(t, service.MigrationSets...))
	servicetest.RunInBackground(t, svc.Run)
	gateway := runnerv1.NewRunnerServiceClient(servicetest.DialAsService(t, svc.Addr(), "gateway"))
	operator := runnerv1.NewRunnerServiceClient(servicetest.DialOperator(t, svc.Addr()))
	ctx := t.Context()

	call := uuid.NewString()
	for range 2 {
		_, err := gateway.RecordMcpResponse(ctx, &runnerv1.RecordMcpResponseRequest{SessionId: 5, Tool: "get_session", Bytes: 1200, CallId: call})
		require.NoError(t, err)
	}
	_, err := gateway.RecordMcpResponse(ctx, &runnerv1.RecordMcpResponseRequest{SessionId: 5, Tool: "get_session_provenance", Bytes: 800, CallId: uuid.NewString()})
	require.NoError(t, err)

	_, err = operator.RecordMcpResponse(ctx, &runnerv1.RecordMcpResponseRequest{SessionId: 5, Tool: "get_session", Bytes: 1, CallId: uuid.NewString()})
	require.Equal(t, codes.PermissionDenied, status.Code(err), "a client's key never reports a cost: %v", err)
	_, err = gateway.RecordMcpResponse(ctx, &runnerv1.RecordMcpResponseRequest{SessionId: 5, Tool: "", Bytes: -1})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	require.ErrorContains(t, err, "tool: must name the MCP tool")
	require.ErrorContains(t, err, "call_id: must name the call")

	r, err := operator.GetCosts(ctx, &runnerv1.GetCostsRequest{SessionId: "5"})
	require.NoError(t, err)
	today := time.Now().UTC().Format("2006-01-02")
	require.Equal(t, today, r.GetTo())
	require.Equal(t, int64(2000), r.GetTotal().GetBytes())
	require.Equal(t, int64(2), r.GetTotal().GetEntries(), "the retried report counted once")
	kinds := map[string]int64{}
	for _, l := range r.GetByKind() {
		kinds[l.GetKind()] = l.GetBytes()
	}
	require.Equal(t, map[string]int64{"mcp_responses": 1200, "provenance_tool": 800}, kinds)
	require.Len(t, r.GetByTool(), 2)

	for _, c := range []struct {
		req  *runnerv1.GetCostsRequest
		want string
	}{
		{&runnerv1.GetCostsRequest{From: "yesterday"}, `from: must be a day written YYYY-MM-DD (UTC), like ` + today + `; got "yesterday"`},
		{&runnerv1.GetCostsRequest{From: "2026-12-02", To: "2026-12-01"}, "from: must not be after to (2026-12-01); got 2026-12-02"},
		{&runnerv1.GetCostsRequest{From: "2024-01-01", To: "2026-01-01"}, "to: must be at most 366 days after from"},
		{&runnerv1.GetCostsRequest{SessionId: "my-slug"}, `session_id: must be a session's numeric id`},
	} {
		_, err := operator.GetCosts(ctx, c.req)
		require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", c.req)
		require.ErrorContains(t, err, c.want)
	}
}
