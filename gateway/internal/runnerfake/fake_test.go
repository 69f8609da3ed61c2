package runnerfake_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/gateway/internal/grpcfake"
	"github.com/zimmerhq/zimmer/gateway/internal/grpctest"
	"github.com/zimmerhq/zimmer/gateway/internal/runnerfake"
	runnerv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/runner/v1"
)

// Every unary RPC of the service is recorded, so a new RPC cannot fall
// through to Unimplemented unnoticed (FollowTranscript, the stream, is
// driven by the transcript tests).
func TestEveryMethodIsRecorded(t *testing.T) {
	t.Parallel()
	fake := runnerfake.New()
	conn := grpctest.DialAsService(t, grpctest.Serve(t, fake.Register))
	n := grpcfake.RequireEveryMethod(t, conn, fake.Recorder, runnerv1.File_zimmer_runner_v1_runner_service_proto.Services().ByName("RunnerService"))
	require.Len(t, fake.Calls(), n)
}
