package store_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/platform/pgtest"
	"github.com/zimmerhq/zimmer/services/runner/internal/store"
	"github.com/zimmerhq/zimmer/services/runner/internal/transcript"
)

// A line an agent prints while Postgres restarts is kept, not dropped: the
// write waits the outage out (here a proxy in front of the test database
// that cuts every connection and refuses new ones for a second), and the
// turn's end recorded after it lands too. The chaos test lost a turn's
// last words this way when Postgres was killed as the agent printed them.
func TestATranscriptWriteWaitsOutADatabaseOutage(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t, store.Migrations)
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	p := pgtest.NewProxy(t, u.Host)
	u.Host = p.Addr
	pool, err := pgxpool.New(t.Context(), u.String())
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	s := store.NewTranscripts(pool, transcript.DefaultLimits)

	require.NoError(t, s.Append(t.Context(), 7, "turn-1", say("before the outage")))
	p.Down()
	done := make(chan error, 2)
	go func() {
		if err := s.Append(context.Background(), 7, "turn-1", say("during the outage")); err != nil {
			done <- err
			return
		}
		done <- s.EndTurn(context.Background(), 7, "turn-1", "exit status 0")
	}()
	time.Sleep(time.Second)
	select {
	case err := <-done:
		t.Fatalf("the write ended while the database was unreachable: %v", err)
	default:
	}
	require.NoError(t, p.Up(), "the proxy's port was ours a second ago")
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("the write never landed after the database came back")
	}
	page, err := s.Page(t.Context(), transcript.Query{SessionID: 7, PageSize: 10})
	require.NoError(t, err)
	require.Equal(t, []string{"turn-1:before the outage", "turn-1:during the outage"}, texts(page.Lines))
	require.Len(t, page.Turns, 1)
	require.Equal(t, "exit status 0", page.Turns[0].Outcome)
}
