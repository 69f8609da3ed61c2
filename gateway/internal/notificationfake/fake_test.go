package notificationfake_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/gateway/internal/grpcfake"
	"github.com/zimmerhq/zimmer/gateway/internal/grpctest"
	"github.com/zimmerhq/zimmer/gateway/internal/notificationfake"
	notificationv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/notification/v1"
)

// Every RPC of the service is recorded, so a new RPC cannot fall through
// to Unimplemented unnoticed.
func TestEveryMethodIsRecorded(t *testing.T) {
	t.Parallel()
	fake := notificationfake.New()
	conn := grpctest.DialAsService(t, grpctest.Serve(t, fake.Register))
	n := grpcfake.RequireEveryMethod(t, conn, fake.Recorder,
		notificationv1.File_zimmer_notification_v1_notification_service_proto.Services().ByName("NotificationService"))
	require.Len(t, fake.Calls(), n)
}
