package inbox_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/platform/inbox"
	"github.com/zimmerhq/zimmer/services/platform/pgtest"
)

func TestClaimIsFirstTimeOnly(t *testing.T) {
	t.Parallel()
	tx := pgtest.Tx(t, inbox.Migrations)
	id := uuid.NewString()

	fresh, err := inbox.Claim(context.Background(), tx, id, "t")
	require.NoError(t, err)
	require.True(t, fresh)
	fresh, err = inbox.Claim(context.Background(), tx, id, "t")
	require.NoError(t, err)
	require.False(t, fresh, "a redelivery is recognised")

	_, err = inbox.Claim(context.Background(), tx, "not-a-uuid", "t")
	require.Error(t, err)
}
