package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/zimmerhq/zimmer/services/platform/workflowid"
)

// TestADeadDeliverersClaimIsDrainedOnceItExpires is issue 23 rule 7's
// crash corner on the real binaries: a pause schedules no drain while the
// session's only message is processing, so a deliverer killed holding its
// claim left the message to wait for the session's next enqueue or turn.
// Here the deliverer is the queue handing the message over at the turn's
// end: lifecycle's DeliverTurn for it is held (the test holds a row lock on
// the delivery's id) while the queue holds its claim; a user pauses the
// session meanwhile, and the queue is killed with SIGKILL. The pause lands
// with the message still processing; once the claim's lease is over the
// queue's expired-claims sweep (QU-20) pokes the session's drain, and the
// message is delivered, exactly once.
func TestADeadDeliverersClaimIsDrainedOnceItExpires(t *testing.T) {
	t.Parallel()
	skipWithoutChaos(t)
	s := newStackWith(t, stackOptions{turns: true})
	api := restClient{base: "http://" + s.addr["gateway"], key: s.apiKey}
	repo := gitRepo(t)
	tc, err := client.Dial(client.Options{HostPort: s.temporal, Namespace: s.namespace})
	require.NoError(t, err)
	t.Cleanup(tc.Close)

	id := api.createRunning(t, repo, "@demo sleep 25s")
	api.waitStatus(t, id, "running")
	code, queued := api.followUp(t, id, `{"prompt":"@demo say the claimed message"}`)
	require.Equal(t, http.StatusAccepted, code, "%+v", queued)
	message := queued.EnqueuedMessage.ID
	// The enqueue's drain finds the session running and ends.
	require.Eventually(t, func() bool {
		d, err := tc.DescribeWorkflow(t.Context(), workflowid.Drain(id), "")
		var notFound *serviceerror.NotFound
		if errors.As(err, &notFound) {
			return false
		}
		require.NoError(t, err)
		return d.RawResponse.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
	}, 60*time.Second, 200*time.Millisecond, "the enqueue's drain never ended")

	// Lifecycle's DeliverTurn of the message waits on this row lock: the
	// queue's claim is held, as a deliverer holds it mid-send.
	ctx := context.Background()
	lock, err := pgx.Connect(ctx, s.dbURL["lifecycle"])
	require.NoError(t, err)
	t.Cleanup(func() { _ = lock.Close(ctx) })
	tx, err := lock.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `INSERT INTO deliveries (delivery_id, session_id, job_id) VALUES ($1, $2, 'e2e-held')`,
		fmt.Sprintf("queue/message/%d", message), id)
	require.NoError(t, err)

	// The turn ends; the queue claims the message to hand it over.
	require.Eventually(t, func() bool {
		return s.queryInt(t, "lifecycle", `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%INSERT INTO deliveries%'`) == 1
	}, 90*time.Second, 100*time.Millisecond, "the hand-over never reached lifecycle")
	require.Equal(t, 1, s.queryInt(t, "queue", `SELECT count(*) FROM enqueued_messages WHERE id = $1 AND status = 'processing'`, message),
		"the queue holds its claim while lifecycle delivers")
	// A user pauses the session meanwhile; the pause waits for the
	// delivery's transaction.
	paused := make(chan struct{})
	go func() {
		defer close(paused)
		for range 30 {
			code, _ := api.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/pause", id), "{}")
			if code == http.StatusOK || api.session(t, id).Status == "needs_input" {
				return
			}
			time.Sleep(time.Second)
		}
	}()
	time.Sleep(time.Second)

	s.kill("queue")
	time.Sleep(2 * time.Second) // lifecycle sees its caller gone and gives the delivery up
	require.NoError(t, tx.Rollback(ctx))
	s.start("queue")
	s.waitHealthy("queue")
	<-paused
	api.waitStatus(t, id, "needs_input")
	q := api.queue(t, id)
	require.Len(t, q, 1)
	require.NotEqual(t, "sent", q[0].Status, "the dead deliverer delivered nothing")

	require.Eventually(t, func() bool {
		q := api.queue(t, id)
		return len(q) == 1 && q[0].Status == "sent"
	}, 180*time.Second, 500*time.Millisecond, "the expired claim's message was never delivered: %+v", api.queue(t, id))
	var turns []turn
	require.Eventually(t, func() bool {
		turns = api.turns(t, id)
		return len(turns) >= 2 && turns[len(turns)-1].Ended && api.session(t, id).Status == "needs_input"
	}, 60*time.Second, 250*time.Millisecond, "the message's turn never ended")
	said := 0
	for _, tr := range turns {
		if strings.Contains(tr.Text, "the claimed message") {
			said++
		}
	}
	require.Equal(t, 1, said, "delivered exactly once, one turn: %+v", turns)
	require.Len(t, turns, 2, "the first turn and the message's")
}
