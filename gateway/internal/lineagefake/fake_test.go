package lineagefake_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/gateway/internal/grpcfake"
	"github.com/zimmerhq/zimmer/gateway/internal/grpctest"
	"github.com/zimmerhq/zimmer/gateway/internal/lineagefake"
	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
)

// Every RPC of the service is recorded, so a new RPC cannot fall through
// to Unimplemented unnoticed.
func TestEveryMethodIsRecorded(t *testing.T) {
	t.Parallel()
	fake := lineagefake.New()
	conn := grpctest.DialAsService(t, grpctest.Serve(t, fake.Register))
	n := grpcfake.RequireEveryMethod(t, conn, fake.Recorder,
		lineagev1.File_zimmer_lineage_v1_provenance_service_proto.Services().ByName("ProvenanceService"))
	require.Len(t, fake.Calls(), n)
}
