package e2e_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	notificationv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/notification/v1"
)

// queuedMessage is an enqueued message as REST shows it.
type queuedMessage struct {
	ID            int64  `json:"id"`
	Position      int    `json:"position"`
	Status        string `json:"status"`
	Content       string `json:"content"`
	UndeliveredAt string `json:"undelivered_at"`
}

// followUp is POST /follow_up's answer.
type followUp struct {
	Outcome         string        `json:"outcome"`
	Message         string        `json:"message"`
	JobID           string        `json:"job_id"`
	EnqueuedMessage queuedMessage `json:"enqueued_message"`
}

func (c restClient) followUp(t *testing.T, id int64, body string) (int, followUp) {
	t.Helper()
	code, resp := c.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/follow_up", id), body)
	var got followUp
	require.NoError(t, json.Unmarshal([]byte(resp), &got), resp)
	return code, got
}

// queued is the session's enqueued_messages as its detail shows them.
func (c restClient) queued(t *testing.T, id int64) []queuedMessage {
	t.Helper()
	code, body := c.do(t, http.MethodGet, fmt.Sprintf("/api/v1/sessions/%d", id), "")
	require.Equal(t, http.StatusOK, code, body)
	var got struct {
		EnqueuedMessages []queuedMessage `json:"enqueued_messages"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &got), body)
	return got.EnqueuedMessages
}

// queue is the session's whole queue, sent and undelivered messages too.
func (c restClient) queue(t *testing.T, id int64) []queuedMessage {
	t.Helper()
	code, body := c.do(t, http.MethodGet, fmt.Sprintf("/api/v1/sessions/%d/enqueued_messages", id), "")
	require.Equal(t, http.StatusOK, code, body)
	var got struct {
		EnqueuedMessages []queuedMessage `json:"enqueued_messages"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &got), body)
	return got.EnqueuedMessages
}

// turn is one turn of a session's transcript with what its agent said.
type turn struct {
	ID    string
	Ended bool
	Text  string
}

// turns are the session's turns, oldest first, each with its lines' text.
func (c restClient) turns(t *testing.T, id int64) []turn {
	t.Helper()
	code, body := c.do(t, http.MethodGet, fmt.Sprintf("/api/v1/sessions/%d/transcript?page_size=1000", id), "")
	require.Equal(t, http.StatusOK, code, body)
	var page struct {
		Turns []struct {
			TurnID  string `json:"turn_id"`
			EndedAt string `json:"ended_at"`
		}
		Lines []struct {
			TurnID string `json:"turn_id"`
			Text   string
		}
	}
	require.NoError(t, json.Unmarshal([]byte(body), &page), body)
	var out []turn
	for _, tr := range slices.Backward(page.Turns) { // newest first on the wire
		var text []string
		for _, l := range page.Lines {
			if l.TurnID == tr.TurnID {
				text = append(text, l.Text)
			}
		}
		out = append(out, turn{ID: tr.TurnID, Ended: tr.EndedAt != "", Text: strings.Join(text, "\n")})
	}
	return out
}

// TestQueueDelivery drives issue 12 on the real binaries with the demo
// agent: follow-ups queued onto a running session become its next turns,
// in order, none lost, handed over at each turn's end without a pause; a
// follow-up to an idle session is its turn at once (200); and an archive
// over a queued message is refused with the guard's words until forced,
// when the message is retired to undelivered, named on the archive line
// and listed by the session's detail as never delivered.
func TestQueueDelivery(t *testing.T) {
	t.Parallel()
	s := newStackRunning(t, true)
	api := restClient{base: "http://" + s.addr["gateway"], key: s.apiKey}
	repo := gitRepo(t)

	t.Run("three follow-ups onto a running session are its next three turns, in order", func(t *testing.T) {
		t.Parallel()
		id := api.createRunning(t, repo, "@demo say the first turn\n@demo sleep 8s")
		api.waitStatus(t, id, "running")
		require.Eventually(t, func() bool { return len(turnProcesses(t, s, id)) > 0 }, 20*time.Second, 50*time.Millisecond,
			"the agent never started")

		var prompts []string
		for i := 1; i <= 3; i++ {
			prompt := fmt.Sprintf("@demo say follow-up number %d", i)
			prompts = append(prompts, prompt)
			code, got := api.followUp(t, id, fmt.Sprintf(`{"prompt":%q}`, prompt))
			require.Equal(t, http.StatusAccepted, code, "a running session queues: %+v", got)
			require.Equal(t, "queued", got.Outcome)
			require.Equal(t, "Message queued (session is running). It will be sent when the agent completes its current task.", got.Message)
			require.Equal(t, i, got.EnqueuedMessage.Position)
		}
		var waiting []string
		for _, m := range api.queued(t, id) {
			require.Equal(t, "pending", m.Status)
			waiting = append(waiting, m.Content)
		}
		require.Equal(t, prompts, waiting, "the session's detail lists them in order while the turn runs")

		var turns []turn
		require.Eventually(t, func() bool {
			turns = api.turns(t, id)
			return len(turns) == 4 && turns[3].Ended && api.session(t, id).Status == "needs_input"
		}, 90*time.Second, 250*time.Millisecond, "the three follow-ups never all ran: %+v", turns)
		require.Contains(t, turns[0].Text, "the first turn")
		for i := 1; i <= 3; i++ {
			require.Contains(t, turns[i].Text, fmt.Sprintf("follow-up number %d", i), "turn %d is follow-up %d", i+1, i)
		}
		require.Equal(t, []string{"start", "pause"}, api.transitions(t, id),
			"each turn's end handed the next message over without a pause")

		sent := api.queue(t, id)
		require.Len(t, sent, 3, "none lost, none doubled")
		for _, m := range sent {
			require.Equal(t, "sent", m.Status, "%+v", m)
		}
		require.Empty(t, api.queued(t, id), "nothing is left to deliver")
	})

	t.Run("a follow-up to an idle session is its turn now", func(t *testing.T) {
		t.Parallel()
		id := api.createRunning(t, repo, "@demo say hello")
		api.waitStatus(t, id, "needs_input")

		code, got := api.followUp(t, id, `{"prompt":"@demo say hello again","goal":"say it twice"}`)
		require.Equal(t, http.StatusOK, code, "delivered: %+v", got)
		require.Equal(t, "delivered", got.Outcome)
		require.NotEmpty(t, got.JobID, "the turn's job is named")
		require.Empty(t, api.queue(t, id), "a delivered follow-up is never queued")

		require.Eventually(t, func() bool {
			return slices.Equal(api.transitions(t, id), []string{"start", "pause", "resume", "pause"})
		}, 60*time.Second, 100*time.Millisecond, "the follow-up's turn never ended: %v", api.transitions(t, id))
		turns := api.turns(t, id)
		require.Len(t, turns, 2)
		require.Equal(t, got.JobID, turns[1].ID, "the turn ran under the job the follow-up named")
		require.Contains(t, turns[1].Text, "hello again")
		require.Equal(t, "say it twice", getSession(t, api, id)["goal"])
	})

	t.Run("an archive over a queued message is refused until forced, and the message is kept as undelivered", func(t *testing.T) {
		t.Parallel()
		id := api.createRunning(t, repo, "@demo sleep 60s")
		api.waitStatus(t, id, "running")
		require.Eventually(t, func() bool { return len(turnProcesses(t, s, id)) > 0 }, 20*time.Second, 50*time.Millisecond,
			"the agent never started")
		const content = "What do you mean I pulled yellow onion? I didn't do that, add it back"
		code, got := api.followUp(t, id, fmt.Sprintf(`{"prompt":%q}`, content))
		require.Equal(t, http.StatusAccepted, code, "%+v", got)
		message := got.EnqueuedMessage.ID

		refusal := fmt.Sprintf("Cannot archive session %d: 1 queued message has not been delivered. Archiving discards it.\n\n  1. %s\n\nDo not archive.", id, content)
		code, body := api.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/archive", id), `{}`)
		require.Equal(t, http.StatusUnprocessableEntity, code, body)
		e := readError(t, body)
		require.Equal(t, "Cannot trash", e.Error)
		require.True(t, strings.HasPrefix(e.Message, refusal), "the guard's words: %s", e.Message)
		require.True(t, strings.HasSuffix(e.Message, "forcing throws it away."), "force named last: %s", e.Message)
		require.Contains(t, e.Message, `re-call with "force": true`)

		c := mcpConnect(t, s, "?tool_groups=sessions")
		res := callTool(t, c, "action_session", map[string]any{"action": "archive", "session_id": id})
		require.True(t, res.IsError, "refused over MCP too: %s", text(res))
		require.True(t, strings.HasPrefix(text(res), refusal), text(res))

		require.Equal(t, "running", api.session(t, id).Status, "a refused archive changes nothing")
		require.NotEmpty(t, turnProcesses(t, s, id), "a refused archive does not stop the turn")
		pending := api.queued(t, id)
		require.Len(t, pending, 1)
		require.Equal(t, "pending", pending[0].Status, "the message is still going to be delivered")

		code, body = api.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/archive", id), `{"force":true}`)
		require.Equal(t, http.StatusOK, code, body)
		require.Equal(t, "archived", api.session(t, id).Status)
		require.Contains(t, last(timeline(t, api, id, "transition")),
			fmt.Sprintf("Session moved to trash by a caller of the REST API — 1 queued message was never delivered and is now marked undelivered: %q", content),
			"the archive line names the retired message")

		var kept []queuedMessage
		require.Eventually(t, func() bool {
			kept = api.queued(t, id)
			return len(kept) == 1 && kept[0].Status == "undelivered"
		}, 20*time.Second, 100*time.Millisecond, "the session's detail never listed it as undelivered: %+v", kept)
		require.Equal(t, message, kept[0].ID)
		require.Equal(t, content, kept[0].Content)
		require.NotEmpty(t, kept[0].UndeliveredAt, "marked as never delivered, with when")

		res = callTool(t, c, "get_session", map[string]any{"session_id": id})
		require.False(t, res.IsError, text(res))
		require.Contains(t, text(res), "[undelivered: never delivered because the session was archived while the message was queued, retired ")
		require.Contains(t, text(res), content)

		// The loss pages: lifecycle's relay hands the archive's effect to the
		// queue, which raises one alert for the session naming the message.
		notification := notificationv1.NewNotificationServiceClient(s.dial("notification", s.asOperator()))
		retiredKey := fmt.Sprintf("queue_messages_retired/%d", id)
		pages := func() ([]*notificationv1.Alert, error) {
			resp, err := notification.ListAlerts(t.Context(), &notificationv1.ListAlertsRequest{PageSize: 500})
			if err != nil {
				return nil, err
			}
			var out []*notificationv1.Alert
			for _, a := range resp.GetAlerts() {
				if a.GetDedupKey() == retiredKey {
					out = append(out, a)
				}
			}
			return out, nil
		}
		var paged []*notificationv1.Alert
		require.Eventually(t, func() bool {
			var err error
			paged, err = pages()
			return err == nil && len(paged) > 0
		}, 20*time.Second, 100*time.Millisecond, "the retirement never paged (%s)", retiredKey)
		summary := fmt.Sprintf("Session %d archived — 1 queued message was never delivered and is now marked undelivered: %q", id, content)
		require.Len(t, paged, 1)
		require.Equal(t, summary, paged[0].GetSummary(), "the page names the retired message as the archive line does")

		// Unarchived, the session takes messages again; the retired one
		// stays undelivered (an unarchive does not resend what the archive
		// discarded).
		code, body = api.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/unarchive", id), `{}`)
		require.Equal(t, http.StatusOK, code, body)
		require.Contains(t, body, `"status":"needs_input"`, "archived while running, restored to needs_input")
		code, got = api.followUp(t, id, `{"prompt":"@demo say back from the trash\n@demo sleep 8s"}`)
		require.Equal(t, http.StatusOK, code, "an unarchived session at rest takes a follow-up as its turn: %+v", got)
		require.Equal(t, "delivered", got.Outcome)
		require.Eventually(t, func() bool { return len(turnProcesses(t, s, id)) > 0 }, 20*time.Second, 50*time.Millisecond,
			"the follow-up's agent never started")
		// Queued behind that turn: the queue is open again (the unarchive's
		// reopening reaches the queue through lifecycle's relay, so a
		// follow-up racing it may still find the queue sealed; the same
		// idempotency key makes the retries one message).
		const again = "@demo say the queue is open again"
		require.Eventually(t, func() bool {
			code, got = api.followUp(t, id, fmt.Sprintf(`{"prompt":%q,"idempotency_key":"after-unarchive"}`, again))
			return code == http.StatusAccepted
		}, 5*time.Second, 100*time.Millisecond, "a follow-up to the unarchived running session was never queued: %d %+v", code, got)
		require.Equal(t, "queued", got.Outcome)
		requeued := got.EnqueuedMessage.ID
		require.Equal(t, 1, got.EnqueuedMessage.Position, "the undelivered message holds no place in the queue")

		var turns []turn
		require.Eventually(t, func() bool {
			turns = api.turns(t, id)
			return len(turns) == 3 && turns[2].Ended && api.session(t, id).Status == "needs_input"
		}, 60*time.Second, 250*time.Millisecond, "the queued follow-up never ran: %+v", turns)
		require.Contains(t, turns[1].Text, "back from the trash")
		require.Contains(t, turns[2].Text, "the queue is open again", "handed over at the follow-up's turn end")
		require.NotContains(t, turns[2].Text+turns[1].Text, content, "the retired message never became a turn")

		statuses := map[int64]string{}
		for _, m := range api.queue(t, id) {
			statuses[m.ID] = m.Status
		}
		require.Equal(t, map[int64]string{message: "undelivered", requeued: "sent"}, statuses)
		kept = api.queued(t, id)
		require.Len(t, kept, 1, "the detail still lists the retired message: %+v", kept)
		require.Equal(t, message, kept[0].ID)
		require.Equal(t, "undelivered", kept[0].Status)

		// Exactly once: nothing since (the reopening, the new deliveries)
		// paged the retirement again.
		paged, err := pages()
		require.NoError(t, err)
		require.Len(t, paged, 1)
		require.EqualValues(t, 1, paged[0].GetOccurrences(), "one raise, not a repeat folded into the page")
	})
}
