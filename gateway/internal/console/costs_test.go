package console_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	runnerv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/runner/v1"
)

func (r fakeRunner) GetCosts(_ context.Context, in *runnerv1.GetCostsRequest, _ ...grpc.CallOption) (*runnerv1.GetCostsResponse, error) {
	if err := r.f.record("GetCosts", in); err != nil {
		return nil, err
	}
	return &runnerv1.GetCostsResponse{From: "2026-11-03", To: "2026-12-02",
		Total:     &runnerv1.CostLine{Bytes: 1500, InputTokens: 1000, OutputTokens: 100, CostUsd: 0.0125, Entries: 4},
		ByKind:    []*runnerv1.CostLine{{Kind: "session_hierarchy", Bytes: 300}, {Kind: "provenance_tool", Bytes: 1200}},
		ByTool:    []*runnerv1.CostLine{{Kind: "provenance_tool", Tool: "get_session_provenance", Bytes: 1200}},
		ByDay:     []*runnerv1.CostLine{{Day: "2026-12-02", Bytes: 1500}},
		BySession: []*runnerv1.CostLine{{SessionId: 7, Bytes: 1500}},
	}, nil
}

// The Costs page is linked from every page's header, asks the runner for
// the range in its query and shows the sums by kind, tool, day and
// session; a range the runner refuses is its words.
func TestTheCostsPage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.signedIn(t)
	require.Contains(t, b.get(t, c, "/console/").body, `<a href="/console/costs">Costs</a>`)

	a := b.get(t, c, "/console/costs?from=2026-11-03&session_id=7")
	require.Equal(t, http.StatusOK, a.code, a.body)
	for _, want := range []string{"<h2>Total, 2026-11-03 to 2026-12-02</h2>", "<code>session_hierarchy</code>", "<code>provenance_tool</code>",
		"<code>get_session_provenance</code>", `<a href="/console/sessions/7"`, "0.0125", `value="2026-11-03"`} {
		require.Contains(t, a.body, want)
	}
	var asked *runnerv1.GetCostsRequest
	for _, call := range b.calls() {
		if r, ok := call.(*runnerv1.GetCostsRequest); ok {
			asked = r
		}
	}
	require.True(t, proto.Equal(&runnerv1.GetCostsRequest{From: "2026-11-03", SessionId: "7"}, asked), "%v", asked)

	b.refuseNext("GetCosts", status.Error(codes.InvalidArgument, "from: must not be after to (2026-12-01); got 2026-12-02"))
	a = b.get(t, c, "/console/costs?from=2026-12-02&to=2026-12-01")
	require.Equal(t, http.StatusUnprocessableEntity, a.code)
	require.Contains(t, a.body, "from: must not be after to")
}
