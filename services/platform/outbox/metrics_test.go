package outbox_test

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/platform/metrics"
	"github.com/zimmerhq/zimmer/services/platform/outbox"
	"github.com/zimmerhq/zimmer/services/platform/pgtest"
	"github.com/zimmerhq/zimmer/services/platform/slogx"
)

// TestObserveBacklogCountsWaitingAndDeadPerSubscriber: a scrape shows,
// per subscriber, what waits (and for how long) and what is dead; a
// delivered message counts nowhere.
func TestObserveBacklogCountsWaitingAndDeadPerSubscriber(t *testing.T) {
	pool := pgtest.DB(t, outbox.Migrations)
	ctx := context.Background()
	_, err := pool.Exec(ctx, `
		INSERT INTO outbox_messages (event_id, subscriber, topic, aggregate_key, payload, created_at, delivered_at, dead_at) VALUES
		  (gen_random_uuid(), 'queue',   't', '1', '', now() - interval '90 seconds', NULL, NULL),
		  (gen_random_uuid(), 'queue',   't', '1', '', now() - interval '5 seconds',  NULL, NULL),
		  (gen_random_uuid(), 'queue',   't', '1', '', now(), now(), NULL),
		  (gen_random_uuid(), 'lineage', 't', '1', '', now(), NULL, now())`)
	require.NoError(t, err)

	exp, err := metrics.Start("lifecycle", "127.0.0.1:0", slogx.Discard())
	require.NoError(t, err)
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- exp.Serve(sctx) }()
	t.Cleanup(func() { stop(); require.NoError(t, <-done); exp.Close() })
	require.NoError(t, outbox.ObserveBacklog(pool, "lifecycle", []string{"queue", "lineage", "runner"}, slogx.Discard()))

	resp, err := http.Get("http://" + exp.Addr() + metrics.Path)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	series := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if name, rest, ok := strings.Cut(line, "{"); ok && strings.HasPrefix(name, "zimmer_outbox_") {
			labels, value, _ := strings.Cut(rest, "} ")
			_, sub, _ := strings.Cut(labels, `subscriber="`)
			sub, _, _ = strings.Cut(sub, `"`)
			require.Contains(t, labels, `producer="lifecycle"`)
			series[name+"/"+sub] = value
		}
	}
	require.Equal(t, "2", series["zimmer_outbox_pending/queue"])
	require.Equal(t, "1", series["zimmer_outbox_dead/lineage"])
	require.Equal(t, "0", series["zimmer_outbox_pending/lineage"], "a dead letter is not waiting")
	require.Equal(t, "0", series["zimmer_outbox_dead/queue"])
	require.Equal(t, "0", series["zimmer_outbox_pending/runner"], "a relay with nothing to do is reported, at zero")
	require.Equal(t, "0", series["zimmer_outbox_dead/runner"])
	age, err := strconv.ParseFloat(series["zimmer_outbox_oldest_pending_age_seconds/queue"], 64)
	require.NoError(t, err)
	require.InDelta(t, 90, age, 30, "the oldest waiting message was written 90 s ago")
}
