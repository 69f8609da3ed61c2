package queuefake_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/gateway/internal/grpcfake"
	"github.com/zimmerhq/zimmer/gateway/internal/grpctest"
	"github.com/zimmerhq/zimmer/gateway/internal/queuefake"
	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"
)

// Every RPC of the service is recorded, so a new RPC cannot fall through
// to Unimplemented unnoticed.
func TestEveryMethodIsRecorded(t *testing.T) {
	t.Parallel()
	fake := queuefake.New()
	conn := grpctest.DialAsService(t, grpctest.Serve(t, fake.Register))
	n := grpcfake.RequireEveryMethod(t, conn, fake.Recorder, queuev1.File_zimmer_queue_v1_queue_service_proto.Services().ByName("QueueService"))
	require.Len(t, fake.Calls(), n)
}
