package e2e_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
)

// hopBreakdown splits create → agent started into the session workflow's
// hops, from its history's event times (the server's clock, the same host):
// each segment is the time from the previous event to this one, keyed by
// the event's place and type, up to RunTurn's start; then RunTurn's own
// start (its ActivityTaskStarted → the agent's first line stored). Sessions
// of one shape give the same sequence of keys.
type hopBreakdown struct {
	order []string
	by    map[string][]time.Duration
}

func (b *hopBreakdown) add(key string, d time.Duration) {
	if b.by == nil {
		b.by = map[string][]time.Duration{}
	}
	if _, ok := b.by[key]; !ok {
		b.order = append(b.order, key)
	}
	b.by[key] = append(b.by[key], d)
}

// addSession reads session id's workflow history and adds its segments.
func (b *hopBreakdown) addSession(t *testing.T, tc client.Client, id int64, created, firstLine time.Time) {
	t.Helper()
	it := tc.GetWorkflowHistory(t.Context(), fmt.Sprintf("session/%d", id), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	prev, n := created, 0
	var runTurnScheduled int64
	var runTurnSched time.Time
	names := map[int64]string{}
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		at := ev.GetEventTime().AsTime()
		label := strings.TrimPrefix(ev.GetEventType().String(), "EVENT_TYPE_")
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			name := ev.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName()
			names[ev.GetEventId()] = name
			label += " " + name
			if strings.HasSuffix(name, "RunTurn") && runTurnScheduled == 0 {
				runTurnScheduled, runTurnSched = ev.GetEventId(), at
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
			sid := ev.GetActivityTaskStartedEventAttributes().GetScheduledEventId()
			if sid == runTurnScheduled {
				b.add("RunTurn: dispatch (scheduled → started)", at.Sub(runTurnSched))
				b.add("RunTurn: started → agent's first line stored", firstLine.Sub(at))
				return
			}
			label += " " + names[sid]
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
			label += " " + names[ev.GetActivityTaskCompletedEventAttributes().GetScheduledEventId()]
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			label += " (local activity)"
		}
		if runTurnScheduled != 0 {
			continue // RunTurn's own events, until its start
		}
		n++
		b.add(fmt.Sprintf("%02d %s", n, label), at.Sub(prev))
		prev = at
	}
}

// stepTimes reads the runner's debug lines that time the steps inside
// PrepareWorkspace and RunTurn ("prepare steps", "turn start steps"): each
// numeric field ending in _ms, per message.
func stepTimes(t *testing.T, logFile string) *hopBreakdown {
	t.Helper()
	f, err := os.Open(logFile)
	require.NoError(t, err)
	defer f.Close()
	var b hopBreakdown
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !strings.Contains(string(line), " steps\"") {
			continue
		}
		var rec map[string]any
		if json.Unmarshal(line, &rec) != nil {
			continue
		}
		msg, _ := rec["msg"].(string)
		keys := make([]string, 0, len(rec))
		for k := range rec {
			if strings.HasSuffix(k, "_ms") {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			if v, ok := rec[k].(float64); ok {
				b.add(msg+": "+strings.TrimSuffix(k, "_ms"), time.Duration(v*float64(time.Millisecond)))
			}
		}
	}
	require.NoError(t, sc.Err())
	return &b
}

func (b *hopBreakdown) log(t *testing.T, title string) {
	t.Helper()
	t.Logf("%s:", title)
	t.Logf("| segment | n | p50 | p99 |")
	t.Logf("|---|---|---|---|")
	for _, k := range b.order {
		d := dist(b.by[k])
		t.Logf("| %s | %d | %s | %s |", k, len(d), d.p(50), d.p(99))
	}
}
