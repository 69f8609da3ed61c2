package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// replicaRole is what a session of TestReplicas is asked besides its
// first turn.
type replicaRole int

const (
	replicaFollowUp   replicaRole = iota // a follow-up queued while its turn runs
	replicaInterrupt                     // a follow-up that interrupts the turn
	replicaArchive                       // archived (forced) over a queued follow-up
	replicaPauseUntil                    // Pause Until a moment after the kills
	replicaRoles
)

func (r replicaRole) String() string {
	return [...]string{"follow-up", "interrupt", "archive", "pause-until"}[r]
}

// replicaSession is one session of TestReplicas and what the stack
// acknowledged about it.
type replicaSession struct {
	id     int64
	parent int64 // 0: none
	role   replicaRole
	text   string // what its follow-up or wake says, unique to it
	// message is the acknowledged follow-up's id (follow-up, interrupt,
	// archive); 0 when none was acknowledged.
	message     int64
	interrupted bool      // the interrupt was acknowledged
	archived    bool      // the archive was acknowledged
	wakeAt      time.Time // the acknowledged Pause Until's moment
}

// replicaAPI spreads a client's requests over the two gateways and does
// not fail the test on a refused or cut-off request: during the kills one
// is expected, and what counts is whether an acknowledged write holds.
type replicaAPI struct {
	gateways [2]restClient
	next     atomic.Int64
	refused  atomic.Int64 // requests that got no answer or a 5xx
}

// try sends one request through the next gateway, round robin.
func (a *replicaAPI) try(method, path, body string) (int, string) {
	c := a.gateways[a.next.Add(1)%2]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewBufferString(body))
	if err != nil {
		panic(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-API-Key", c.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.refused.Add(1)
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 500 {
		a.refused.Add(1)
	}
	return resp.StatusCode, string(b)
}

// until asks again (through the other gateway, the next time) while the
// answer is no answer or a 5xx, for at most a minute: what an idempotent
// write's client does. It returns the last answer.
func (a *replicaAPI) until(method, path, body string) (int, string) {
	deadline := time.Now().Add(time.Minute)
	for {
		code, resp := a.try(method, path, body)
		if (code != 0 && code < 500) || time.Now().After(deadline) {
			return code, resp
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// TestReplicas is issue 30's two of everything: two gateways, lifecycles,
// lineages, queues, notifications and runner nodes on one Postgres and one
// Temporal namespace, every service reaching its peers' two replicas round
// robin. A mixed load goes through both gateways — creates with parents,
// follow-ups queued while turns run, interrupts, forced archives over a
// queued follow-up, Pause Untils — while one of each pair is killed with
// SIGKILL and started again, one after another. Afterwards: no
// acknowledged write lost (each create there with its parent, each
// follow-up run once, each archive archived with its message undelivered
// and never run, each Pause Until fired once and not early), no outbox
// event undelivered, dead or applied twice (each consumer's inbox holds
// each event its producer delivered), no push received twice, and no
// session ever with two agent processes. A crash test: make test-chaos.
func TestReplicas(t *testing.T) {
	skipWithoutChaos(t)
	t.Parallel()
	n := 20
	if testing.Short() {
		n = 12
	}
	start := time.Now()
	step := func(format string, args ...any) {
		t.Logf("[%6.1fs] %s", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}
	s := newStackWith(t, stackOptions{turns: true, replicas: true})
	step("two of everything up")
	api := &replicaAPI{gateways: [2]restClient{
		{base: "http://" + s.addr["gateway"], key: s.apiKey},
		{base: "http://" + s.addr[replica("gateway")], key: s.apiKey},
	}}
	check := restClient{base: "http://" + s.addr["gateway"], key: s.apiKey}
	repo := gitRepo(t)
	watch := watchAgents(t, s, s.nodeWorkspaces(true))

	// An MCP session opened on the gateway about to be killed: after its
	// death it must go on through either gateway, or fail with a clear
	// "initialize again".
	mcpSession := mcpInitialize(t, api.gateways[1])

	// The kills, one of each pair, alternating which twin, while the load
	// runs: each SIGKILLed, started again a second later, and the next one
	// killed once it serves.
	victims := []string{"lifecycle", replica("lineage"), "queue", replica("runner"), replica("notification"), replica("gateway")}
	killsDone := make(chan struct{})
	go func() {
		defer close(killsDone)
		time.Sleep(3 * time.Second)
		for _, v := range victims {
			s.kill(v)
			step("killed %s", v)
			time.Sleep(time.Second)
			s.start(v)
			if serviceOf(v) == "gateway" {
				s.waitGatewayAt(s.addr[v])
			} else {
				s.waitHealthy(v)
			}
			step("%s back", v)
			time.Sleep(time.Second)
		}
	}()

	// The load, paced over the kills (a session every 1.5 s): sessions
	// created through both gateways, most as children of one created
	// before, each running a 12 s first turn (their ends, follow-ups and
	// pushes fall among the kills) and, while it runs, given its part: a
	// follow-up queued, one that interrupts the turn, a forced archive over
	// a queued one, or a Pause Until.
	sessions := make([]*replicaSession, 0, n)
	var mu sync.Mutex
	creates, createsAcked := 0, 0
	var lateStarts atomic.Int64 // first turns started more than 15 s after their create
	loadStart := time.Now()
	inParallel(n, n, func(i int) {
		time.Sleep(time.Until(loadStart.Add(time.Duration(i) * 1500 * time.Millisecond)))
		mu.Lock()
		parent := int64(0)
		if len(sessions) > 0 && i%4 != 0 {
			parent = sessions[len(sessions)-1].id
		}
		mu.Unlock()
		// Pushes on: each pause is pushed (after the 2 s debounce), while
		// notification's twin dies, and none may reach the sink twice.
		body := map[string]any{"prompt": "@demo sleep 12s\nreplicas: a first turn", "git_root": repo, "branch": "main", "push_notifications": true}
		if parent != 0 {
			body["parent_session_id"] = parent
		}
		raw, _ := json.Marshal(body)
		// A create has no idempotency key: asked once per gateway at most,
		// and only an answer counts as acknowledged.
		var cs *replicaSession
		for range 2 {
			mu.Lock()
			creates++
			mu.Unlock()
			code, resp := api.try(http.MethodPost, "/api/v1/sessions", string(raw))
			if code != http.StatusCreated {
				t.Logf("create (parent %d) not acknowledged: %d %s", parent, code, resp)
				continue
			}
			var got struct{ Session runnerSession }
			require.NoError(t, json.Unmarshal([]byte(resp), &got), resp)
			cs = &replicaSession{id: got.Session.ID, parent: parent, role: replicaRole(i % int(replicaRoles))}
			mu.Lock()
			createsAcked++
			sessions = append(sessions, cs)
			mu.Unlock()
			break
		}
		if cs == nil {
			return
		}
		cs.text = fmt.Sprintf("replicas: the %s of session %d", cs.role, cs.id)
		// Its turn starts first: what is asked next is asked of a running
		// session. A turn handed to a runner node as it dies starts only
		// once the lost turn is noticed (its heartbeat timeout, 30 s) and
		// run again: the rest is asked all the same after a while.
		created := time.Now()
		for len(watch.agents(cs.id)) == 0 && time.Since(created) < 45*time.Second {
			time.Sleep(100 * time.Millisecond)
		}
		if took := time.Since(created).Round(time.Second); took > 15*time.Second {
			lateStarts.Add(1)
			t.Logf("session %d: its first turn's agent running: %v, %s after its create", cs.id, len(watch.agents(cs.id)) > 0, took)
		}
		if cs.role == replicaPauseUntil {
			cs.wakeAt = time.Now().Add(45 * time.Second)
			body, _ := json.Marshal(map[string]string{"wake_at": cs.wakeAt.Format(time.RFC3339Nano), "prompt": "@demo say " + cs.text})
			// Not idempotent either: one try per gateway.
			for range 2 {
				code, resp := api.try(http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/pause_until", cs.id), string(body))
				if code == http.StatusOK {
					return
				}
				t.Logf("session %d: Pause Until not acknowledged: %d %s", cs.id, code, resp)
			}
			cs.wakeAt = time.Time{}
			return
		}
		msg, _ := json.Marshal(map[string]string{"content": "@demo say " + cs.text, "idempotency_key": uuid.NewString()})
		code, resp := api.until(http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/enqueued_messages", cs.id), string(msg))
		if code != http.StatusOK {
			t.Logf("session %d: follow-up not acknowledged: %d %s", cs.id, code, resp)
			return
		}
		var got struct {
			EnqueuedMessage queuedMessage `json:"enqueued_message"`
		}
		require.NoError(t, json.Unmarshal([]byte(resp), &got), resp)
		cs.message = got.EnqueuedMessage.ID
		switch cs.role {
		case replicaInterrupt:
			// An interrupt is idempotent: a second ask of a message
			// already handed over is refused with 422, which is an answer.
			code, resp := api.until(http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/enqueued_messages/%d/interrupt", cs.id, cs.message), `{}`)
			cs.interrupted = code == http.StatusOK || code == http.StatusUnprocessableEntity
			if !cs.interrupted {
				t.Logf("session %d: interrupt not acknowledged: %d %s", cs.id, code, resp)
			}
		case replicaArchive:
			code, resp := api.until(http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/archive", cs.id), `{"force":true}`)
			cs.archived = code == http.StatusOK
			if !cs.archived {
				t.Logf("session %d: archive not acknowledged: %d %s", cs.id, code, resp)
			}
		}
	})
	step("%d of %d creates acknowledged", createsAcked, creates)
	require.GreaterOrEqual(t, len(sessions), n*3/4, "most creates are acknowledged even with a gateway down")
	step("load sent (%d requests refused or cut off so far)", api.refused.Load())
	<-killsDone
	step("every kill done and restarted")

	// Rest: nothing running, no wake armed, no follow-up pending; bounded.
	quiet := func() bool {
		if !noTurnOrWake(t, s) {
			return false
		}
		for _, cs := range sessions {
			if cs.message != 0 && !cs.archived {
				if st := messageStatus(t, check, cs.id, cs.message); st == "pending" || st == "processing" {
					return false
				}
			}
		}
		return true
	}
	for bound := time.Now().Add(120 * time.Second); !quiet() && time.Now().Before(bound); {
		time.Sleep(2 * time.Second)
	}
	step("settled: %v", quiet())
	time.Sleep(time.Second)
	watch.halt()

	r := judgeReplicas(t, s, check, sessions, watch)
	for _, g := range api.gateways {
		code, body := mcpPost(t, g, mcpSession, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_session","arguments":{"session_id":"`+
			fmt.Sprint(sessions[0].id)+`"}}}`)
		if code == http.StatusOK && strings.Contains(body, fmt.Sprintf("%d", sessions[0].id)) {
			r.mcpCalls++
		} else {
			r.note("MCP session %s opened on the killed gateway, called at %s: %d %s", mcpSession, g.base, code, body)
		}
	}
	t.Logf("replicas: %d sessions (%d of %d creates acknowledged, %d requests refused during the kills, %d first turns late); kill -9 of %s; "+
		"lost writes %d (creates %d/%d, follow-ups run once %d/%d, interrupts %d, archives %d/%d, pause-untils fired once %d/%d); "+
		"follow-ups run twice %d; wakes early %d, twice %d; outbox events %d delivered, %d undelivered or dead, %d recorded twice; "+
		"pushes %d, received twice %d; sessions with two agents %d; stranded running %d; "+
		"MCP calls in a session opened on the killed gateway, after its restart, answered %d/2; %d scans of /proc",
		len(sessions), createsAcked, creates, api.refused.Load(), lateStarts.Load(), strings.Join(victims, ", "),
		r.lost, r.createsHeld, len(sessions), r.followUpsOnce, r.followUps, r.interrupts, r.archivesHeld, r.archives, r.wakesOnce, r.wakes,
		r.twice, r.wakesEarly, r.wakesTwice, r.events, r.eventsStuck, r.eventsTwice,
		r.pushes, r.pushesTwice, len(r.twoAgents), r.stranded, r.mcpCalls, watch.scanCount())
	for _, line := range r.evidence {
		t.Log(line)
	}
	require.Zero(t, r.lost, "acknowledged writes lost")
	require.Zero(t, r.twice, "follow-ups run twice")
	require.Zero(t, r.wakesEarly, "wakes early")
	require.Zero(t, r.wakesTwice, "wakes fired twice")
	require.Zero(t, r.eventsStuck, "outbox events undelivered or dead")
	require.Zero(t, r.eventsTwice, "outbox events recorded twice for a subscriber")
	require.Zero(t, r.pushesTwice, "pushes received twice")
	require.Zero(t, len(r.twoAgents), "sessions with two agent processes at once")
	require.Zero(t, r.stranded, "sessions stranded in running with no agent")
	require.Equal(t, 2, r.mcpCalls, "an MCP session outlives its gateway replica, on either gateway")
}

// mcpInitialize opens an MCP session at the gateway and returns its id.
func mcpInitialize(t *testing.T, g restClient) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, g.base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize",`+
		`"params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"replicas","version":"1"}}}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("X-API-Key", g.key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	id := resp.Header.Get("Mcp-Session-Id")
	require.NotEmpty(t, id)
	return id
}

// mcpPost sends one JSON-RPC message in an MCP session at the gateway.
func mcpPost(t *testing.T, g restClient, session, message string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, g.base+"/mcp", strings.NewReader(message))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("X-API-Key", g.key)
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// replicaResult counts what TestReplicas's load left.
type replicaResult struct {
	lost, twice                              int
	createsHeld                              int
	followUps, followUpsOnce, interrupts     int
	archives, archivesHeld                   int
	wakes, wakesOnce, wakesEarly, wakesTwice int
	events, eventsStuck, eventsTwice         int
	pushes, pushesTwice                      int
	stranded                                 int
	mcpCalls                                 int
	twoAgents                                map[int64]string
	evidence                                 []string
}

func (r *replicaResult) note(format string, args ...any) {
	r.evidence = append(r.evidence, fmt.Sprintf(format, args...))
}

// judgeReplicas reads where every acknowledged write ended up.
func judgeReplicas(t *testing.T, s *stack, api restClient, sessions []*replicaSession, watch *agentWatch) *replicaResult {
	t.Helper()
	r := &replicaResult{twoAgents: watch.twoProcesses()}
	for id, seen := range r.twoAgents {
		r.note("two agent processes: session %d, %s", id, seen)
	}
	wakes := map[int64][]wakeRow{}
	for _, w := range wakeRows(t, s) {
		wakes[w.SessionID] = append(wakes[w.SessionID], w)
	}
	for _, cs := range sessions {
		code, body := api.do(t, http.MethodGet, fmt.Sprintf("/api/v1/sessions/%d", cs.id), "")
		var got struct {
			Session struct {
				Status          string `json:"status"`
				ParentSessionID int64  `json:"parent_session_id"`
			}
		}
		if code != http.StatusOK || json.Unmarshal([]byte(body), &got) != nil || got.Session.ParentSessionID != cs.parent {
			r.lost++
			r.note("session %d: created with parent %d, reads %d %s", cs.id, cs.parent, code, body)
			continue
		}
		r.createsHeld++
		if got.Session.Status == "running" && len(watch.agents(cs.id)) == 0 {
			r.stranded++
			r.note("session %d running with no agent", cs.id)
		}
		turns := api.timedTurns(t, cs.id)
		ran := countTurnsSaying(turns, cs.text)
		switch {
		case cs.role == replicaPauseUntil && !cs.wakeAt.IsZero():
			r.wakes++
			ws := wakes[cs.id]
			if len(ws) != 1 || ws[0].Status != "fired" || ran != 1 {
				r.lost++
				r.note("session %d: Pause Until %s: wake rows %+v, its prompt ran %d times", cs.id, cs.wakeAt, ws, ran)
				if ran > 1 {
					r.wakesTwice++
				}
				continue
			}
			r.wakesOnce++
			w := ws[0]
			for _, tr := range turns {
				if strings.Contains(tr.Text, cs.text) && (tr.StartedAt.Before(w.FireAt) || w.FiredAt == nil || w.FiredAt.Before(w.FireAt)) {
					r.wakesEarly++
					r.note("session %d: wake %d due %s fired at %v, its turn started %s", cs.id, w.ID, w.FireAt, w.FiredAt, tr.StartedAt)
				}
			}
		case cs.role == replicaArchive && cs.archived:
			r.archives++
			status := messageStatus(t, api, cs.id, cs.message)
			if got.Session.Status != "archived" || ran != 0 || status != "undelivered" {
				r.lost++
				r.note("session %d: archived over message %d, reads %s, the message %q, run %d times", cs.id, cs.message, got.Session.Status, status, ran)
				continue
			}
			r.archivesHeld++
		case cs.message != 0 && cs.role != replicaArchive:
			r.followUps++
			if cs.interrupted {
				r.interrupts++
			}
			status := messageStatus(t, api, cs.id, cs.message)
			switch {
			case ran > 1:
				r.twice++
				r.note("session %d: follow-up %d ran %d times", cs.id, cs.message, ran)
			case ran == 1 && status == "sent":
				r.followUpsOnce++
			default:
				r.lost++
				r.note("session %d: follow-up %d (%s) is %q and ran %d times; session %s", cs.id, cs.message, cs.role, status, ran, got.Session.Status)
			}
		}
	}
	judgeOutbox(t, s, r)
	// Pushes: a receiver sees each one once (its dedup_key).
	s.webhook.mu.Lock()
	seen := map[string]int{}
	for _, d := range s.webhook.got {
		r.pushes++
		if d.DedupKey != "" {
			seen[d.DedupKey]++
		}
	}
	s.webhook.mu.Unlock()
	for key, times := range seen {
		if times > 1 {
			r.pushesTwice++
			r.note("push %s received %d times", key, times)
		}
	}
	return r
}

// judgeOutbox checks every producer's outbox: each event delivered to
// each subscriber (none pending or parked dead), and none recorded for a
// subscriber twice. That a delivered event is applied once is judged by
// its effects: each follow-up, wake and push once (judgeReplicas); the
// consumers' inboxes and idempotent effects are what keep it so.
func judgeOutbox(t *testing.T, s *stack, r *replicaResult) {
	t.Helper()
	ctx := context.Background()
	for _, producer := range []string{"lifecycle", "lineage"} {
		conn, err := pgx.Connect(ctx, s.dbURL[producer])
		require.NoError(t, err)
		rows, err := conn.Query(ctx, `SELECT event_id::text, subscriber, topic, delivered_at IS NOT NULL, dead_at IS NOT NULL, coalesce(last_error, '')
			FROM outbox_messages ORDER BY id`)
		require.NoError(t, err)
		type message struct {
			event, subscriber, topic string
			delivered, dead          bool
			lastError                string
		}
		msgs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (message, error) {
			var m message
			return m, row.Scan(&m.event, &m.subscriber, &m.topic, &m.delivered, &m.dead, &m.lastError)
		})
		require.NoError(t, err)
		conn.Close(ctx)
		twice := map[[2]string]int{}
		for _, m := range msgs {
			r.events++
			twice[[2]string{m.event, m.subscriber}]++
			switch {
			case !m.delivered || m.dead:
				r.eventsStuck++
				r.note("%s's event %s (%s) to %s: delivered %v, dead %v, last error %q", producer, m.event, m.topic, m.subscriber, m.delivered, m.dead, m.lastError)
			}
		}
		for k, times := range twice {
			if times > 1 {
				r.eventsTwice++
				r.note("%s recorded event %s for %s %d times", producer, k[0], k[1], times)
			}
		}
	}
}
