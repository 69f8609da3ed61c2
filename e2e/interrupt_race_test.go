package e2e_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// interruptAll sends one interrupt per message, all at once, and returns
// the answers' status codes in the messages' order.
func (c restClient) interruptAll(t *testing.T, id int64, messages []int64) []int {
	t.Helper()
	codes := make([]int, len(messages))
	bodies := make([]string, len(messages))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, m := range messages {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			codes[i], bodies[i] = c.do(t, http.MethodPost,
				fmt.Sprintf("/api/v1/sessions/%d/enqueued_messages/%d/interrupt", id, m), `{}`)
		}()
	}
	close(start)
	wg.Wait()
	for i, code := range codes {
		t.Logf("interrupt with message %d: %d %s", messages[i], code, bodies[i])
	}
	return codes
}

// queueFollowUps queues one follow-up per prompt onto the running session.
func (c restClient) queueFollowUps(t *testing.T, id int64, prompts []string) []int64 {
	t.Helper()
	var ids []int64
	for _, p := range prompts {
		code, got := c.followUp(t, id, fmt.Sprintf(`{"prompt":%q}`, p))
		require.Equal(t, http.StatusAccepted, code, "%+v", got)
		ids = append(ids, got.EnqueuedMessage.ID)
	}
	return ids
}

// requireEachRanWhole waits for the session to rest with turns+1 turns
// ended, and checks that each message's turn ran to its end (its last
// words said), one turn each, and that the session rested only once, after
// them all.
func requireEachRanWhole(t *testing.T, api restClient, id int64, words []string) {
	t.Helper()
	var turns []turn
	require.Eventually(t, func() bool {
		turns = api.turns(t, id)
		ended := len(turns) > 0
		for _, tr := range turns {
			ended = ended && tr.Ended
		}
		return ended && len(turns) == len(words)+1 && api.session(t, id).Status == "needs_input"
	}, 120*time.Second, 250*time.Millisecond, "the messages' turns never all ran: %+v", turns)
	for _, w := range words {
		n := 0
		for _, tr := range turns[1:] {
			if strings.Contains(tr.Text, w) {
				n++
			}
		}
		require.Equal(t, 1, n, "%q: said by one turn, at the end of its whole run: %+v", w, turns)
	}
	require.Equal(t, []string{"start", "pause"}, api.transitions(t, id),
		"the session rested only once, after every message's turn")
	for _, m := range api.queue(t, id) {
		require.Equal(t, "sent", m.Status, "%+v", m)
	}
}

// TestConcurrentInterruptsEachRunAWholeTurn (issue 20, item 5): interrupts
// of one running session sent together, one per queued message. The first
// halts the running turn; the turn each message becomes runs whole, one
// after the other, and the session rests only after the last. The same
// when the interrupts race the running turn's own end.
func TestConcurrentInterruptsEachRunAWholeTurn(t *testing.T) {
	t.Parallel()
	s := newStackRunning(t, true)
	api := restClient{base: "http://" + s.addr["gateway"], key: s.apiKey}
	repo := gitRepo(t)
	messages := func(tag string, n int) (prompts, words []string) {
		for i := 1; i <= n; i++ {
			w := fmt.Sprintf("message %s-%d ran to its end", tag, i)
			prompts = append(prompts, "@demo sleep 1s\n@demo say "+w)
			words = append(words, w)
		}
		return prompts, words
	}

	t.Run("three interrupts at once", func(t *testing.T) {
		t.Parallel()
		id := api.createRunning(t, repo, "@demo say the first turn\n@demo sleep 120s")
		api.waitStatus(t, id, "running")
		require.Eventually(t, func() bool { return len(turnProcesses(t, s, id)) > 0 }, 30*time.Second, 50*time.Millisecond,
			"the agent never started")
		prompts, words := messages("at-once", 3)
		for _, code := range api.interruptAll(t, id, api.queueFollowUps(t, id, prompts)) {
			require.Equal(t, http.StatusOK, code)
		}
		requireEachRanWhole(t, api, id, words)
	})

	// The running turn ends on its own while the interrupts, sent together
	// just before, are being served: before the first halts it, between
	// the two, or as its own end hands a message over. (An interrupt asked
	// once a hand-over has begun is asked against the handed-over turn, and
	// halts it: that is the turn running when it was asked.)
	for _, offset := range []time.Duration{-500 * time.Millisecond, -250 * time.Millisecond, -100 * time.Millisecond} {
		t.Run(fmt.Sprintf("two interrupts racing the turn's end at %v", offset), func(t *testing.T) {
			t.Parallel()
			const runs = 3 * time.Second
			id := api.createRunning(t, repo, fmt.Sprintf("@demo sleep %v\n@demo say the first turn ended", runs))
			api.waitStatus(t, id, "running")
			require.Eventually(t, func() bool { return len(turnProcesses(t, s, id)) > 0 }, 30*time.Second, 10*time.Millisecond,
				"the agent never started")
			started := time.Now()
			prompts, words := messages(fmt.Sprint(offset), 2)
			ids := api.queueFollowUps(t, id, prompts)
			time.Sleep(time.Until(started.Add(runs + offset)))
			for _, code := range api.interruptAll(t, id, ids) {
				// 422: its message was handed over by the turn's end first
				// ("no longer pending"), and runs whole all the same.
				require.Contains(t, []int{http.StatusOK, http.StatusUnprocessableEntity}, code)
			}
			requireEachRanWhole(t, api, id, words)
		})
	}
}
