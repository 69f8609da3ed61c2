package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/notification/internal/app"
	"github.com/zimmerhq/zimmer/services/notification/internal/app/apptest"
	"github.com/zimmerhq/zimmer/services/notification/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/clock"
)

type slackBundle struct {
	repo     *apptest.Slack
	boundary *apptest.SlackBoundary
	api      *apptest.SlackWebAPI
	accept   app.AcceptSlackEvent
	process  app.ProcessSlackEvent
	started  []string
	trigger  domain.SlackTrigger
}

type recordStarts struct{ started *[]string }

func (r recordStarts) StartSlackEvent(_ context.Context, id string) error {
	*r.started = append(*r.started, id)
	return nil
}

func setupSlack(t *testing.T) *slackBundle {
	t.Helper()
	b := &slackBundle{repo: apptest.NewSlack(), boundary: &apptest.SlackBoundary{Roster: map[string]string{"U1": "tadasant"}}, api: &apptest.SlackWebAPI{}}
	c := clock.System{}
	b.accept = app.AcceptSlackEvent{Repo: b.repo, Starter: recordStarts{&b.started}, Clock: c}
	b.process = app.ProcessSlackEvent{Repo: b.repo, Boundary: b.boundary, API: b.api, Clock: c,
		SessionURL: func(id int64) string { return fmt.Sprintf("http://z/console/sessions/%d", id) }}
	var err error
	b.trigger, err = app.SlackTriggers{Repo: b.repo, Clock: c}.Create(context.Background(),
		domain.SlackTrigger{Channel: "C1", AllowedUserIDs: []string{"U1", "U2"}, GitRoot: "/repo", AgentRoot: "agents/x"})
	require.NoError(t, err)
	return b
}

func slackPayload(t *testing.T, id, user, text, ts, threadTS string) []byte {
	t.Helper()
	ev := map[string]any{"type": "message", "user": user, "text": text, "channel": "C1", "channel_type": "channel", "ts": ts}
	if threadTS != "" {
		ev["thread_ts"] = threadTS
	}
	p, err := json.Marshal(map[string]any{"type": "event_callback", "event_id": id, "event": ev})
	require.NoError(t, err)
	return p
}

// deliver accepts and processes one event, as the gateway and the workflow
// do.
func (b *slackBundle) deliver(t *testing.T, payload []byte, id string) string {
	t.Helper()
	_, err := b.accept.Handle(context.Background(), id, payload)
	require.NoError(t, err)
	out, err := b.process.Handle(context.Background(), id)
	require.NoError(t, err)
	return out
}

func TestASlackMessageStartsOneSessionAndItsThreadFollowsItUp(t *testing.T) {
	t.Parallel()
	b := setupSlack(t)
	ctx := context.Background()
	first := slackPayload(t, "Ev1", "U1", "fix the build", "100.000001", "")

	out := b.deliver(t, first, "Ev1")
	require.Equal(t, "started session 1 (trigger #1)", out)
	// Slack's retry: accepted false, its processing started again (a lost
	// start is made up for) and a no-op.
	accepted, err := b.accept.Handle(ctx, "Ev1", first)
	require.NoError(t, err)
	require.False(t, accepted)
	require.Equal(t, []string{"Ev1", "Ev1"}, b.started)
	out, err = b.process.Handle(ctx, "Ev1")
	require.NoError(t, err)
	require.Equal(t, "started session 1 (trigger #1)", out)
	require.Len(t, b.boundary.Sessions, 1)
	require.Equal(t, []app.SlackHumanMessage{{SessionID: 1, Provenance: "slack.channel_message", Content: "fix the build",
		Permalink: "https://acme.slack.com/archives/C1/p100.000001", OccurredAt: time.Unix(100, 1000).UTC(),
		IdempotencyKey: "slack/Ev1"}}, b.boundary.Recorded)
	require.Equal(t, []string{"C1/100.000001: Started session #1: <http://z/console/sessions/1|open it in Zimmer>. Reply in this thread to follow up."}, b.api.Posts)

	// A reply in the thread: a follow-up, keyed by its event, and another
	// human message.
	b.boundary.Running = true
	out = b.deliver(t, slackPayload(t, "Ev2", "U1", "also the docs", "101.000001", "100.000001"), "Ev2")
	require.Equal(t, "queued a follow-up for session 1", out)
	require.Equal(t, map[string]string{"slack/Ev2": "also the docs"}, b.boundary.FollowUps)
	require.Len(t, b.boundary.Recorded, 2)

	// An allowed user off the roster follows up, recording nothing.
	out = b.deliver(t, slackPayload(t, "Ev3", "U2", "and the tests", "102.000001", "100.000001"), "Ev3")
	require.Equal(t, "queued a follow-up for session 1", out)
	require.Len(t, b.boundary.Recorded, 2)

	// Someone the trigger does not allow: nothing.
	out = b.deliver(t, slackPayload(t, "Ev4", "U9", "rm -rf", "103.000001", "100.000001"), "Ev4")
	require.Equal(t, "ignored: U9 is not allowed by trigger #1", out)
	require.Len(t, b.boundary.FollowUps, 2)

	// The trigger deleted: its thread takes no more follow-ups.
	require.NoError(t, app.SlackTriggers{Repo: b.repo, Clock: clock.System{}}.Delete(ctx, b.trigger.ID))
	out = b.deliver(t, slackPayload(t, "Ev5", "U1", "still there?", "104.000001", "100.000001"), "Ev5")
	require.Contains(t, out, "was deleted; its thread takes no follow-ups")
}

// A step that failed is retried without redoing the steps before it.
func TestARetriedEventRedoesNoStep(t *testing.T) {
	t.Parallel()
	b := setupSlack(t)
	ctx := context.Background()
	_, err := b.accept.Handle(ctx, "Ev1", slackPayload(t, "Ev1", "U1", "fix the build", "100.000001", ""))
	require.NoError(t, err)

	// The session starts, then the record fails (lineage is restarting).
	b.process.Boundary = &failRecordOnce{SlackBoundary: b.boundary}
	_, err = b.process.Handle(ctx, "Ev1")
	require.ErrorContains(t, err, "lineage: unavailable")

	out, err := b.process.Handle(ctx, "Ev1")
	require.NoError(t, err)
	require.Equal(t, "started session 1 (trigger #1)", out)
	require.Len(t, b.boundary.Sessions, 1, "the retry did not start a second session")
	require.Len(t, b.boundary.Recorded, 1)
	require.Len(t, b.api.Posts, 1)
}

// failRecordOnce is the boundary with its first record failing.
type failRecordOnce struct {
	*apptest.SlackBoundary
	failed bool
}

func (f *failRecordOnce) RecordHumanMessage(ctx context.Context, user string, m app.SlackHumanMessage) (bool, string, error) {
	if !f.failed {
		f.failed = true
		return false, "", errors.New("lineage: unavailable")
	}
	return f.SlackBoundary.RecordHumanMessage(ctx, user, m)
}

// A crash between lineage recording the message and the event's row
// noting it (here: the note fails, as if the process died there) is
// retried under the same key, so the message is recorded once.
func TestACrashBetweenTheRecordAndItsNoteRecordsOnce(t *testing.T) {
	t.Parallel()
	b := setupSlack(t)
	ctx := context.Background()
	_, err := b.accept.Handle(ctx, "Ev1", slackPayload(t, "Ev1", "U1", "fix the build", "100.000001", ""))
	require.NoError(t, err)

	b.process.Repo = &failNoteOnce{Slack: b.repo, step: app.StepCaptured}
	_, err = b.process.Handle(ctx, "Ev1")
	require.ErrorContains(t, err, "the process died here")
	out, err := b.process.Handle(ctx, "Ev1")
	require.NoError(t, err)
	require.Equal(t, "started session 1 (trigger #1)", out)

	require.Equal(t, []string{"slack/Ev1", "slack/Ev1"}, b.boundary.RecordCalls, "recorded again, under the same key")
	require.Len(t, b.boundary.Recorded, 1)
}

// failNoteOnce is the repository with its first note of step failing.
type failNoteOnce struct {
	*apptest.Slack
	step   app.SlackEventStep
	failed bool
}

func (f *failNoteOnce) MarkEventStep(ctx context.Context, id string, step app.SlackEventStep, at time.Time) error {
	if step == f.step && !f.failed {
		f.failed = true
		return errors.New("the process died here")
	}
	return f.Slack.MarkEventStep(ctx, id, step, at)
}

// A follow-up in a session's thread is answered there, in the queue's
// words, once: not again when Slack redelivers the event, nor when the
// post failed and the activity retries (which asks the queue nothing
// again and tells what it answered the first time).
func TestAThreadFollowUpIsAnsweredOnce(t *testing.T) {
	t.Parallel()
	b := setupSlack(t)
	ctx := context.Background()
	b.deliver(t, slackPayload(t, "Ev1", "U1", "fix the build", "100.000001", ""), "Ev1")
	require.Len(t, b.api.Posts, 1)

	b.boundary.Running = true
	reply := slackPayload(t, "Ev2", "U1", "also the docs", "101.000001", "100.000001")
	require.Equal(t, "queued a follow-up for session 1", b.deliver(t, reply, "Ev2"))
	require.Equal(t, "C1/100.000001: fake queue: queued behind session 1's turn", b.api.Posts[1])
	b.deliver(t, reply, "Ev2") // Slack's retry
	require.Len(t, b.api.Posts, 2)

	// The post fails once; the retry answers with the kept answer, though
	// the session is idle by now.
	b.boundary.Running = false
	flaky := &failPostOnce{SlackWebAPI: b.api}
	b.process.API = flaky
	_, err := b.accept.Handle(ctx, "Ev3", slackPayload(t, "Ev3", "U2", "and the tests", "102.000001", "100.000001"))
	require.NoError(t, err)
	_, err = b.process.Handle(ctx, "Ev3")
	require.ErrorContains(t, err, "slack: 503")
	b.boundary.Running = true
	out, err := b.process.Handle(ctx, "Ev3")
	require.NoError(t, err)
	require.Equal(t, "followed up session 1", out)
	require.Len(t, b.boundary.FollowUps, 2, "the retry did not follow up again")
	require.Equal(t, []string{
		"C1/100.000001: Started session #1: <http://z/console/sessions/1|open it in Zimmer>. Reply in this thread to follow up.",
		"C1/100.000001: fake queue: queued behind session 1's turn",
		"C1/100.000001: fake queue: session 1's turn now",
	}, b.api.Posts)
}

// failPostOnce is the Web API with its first post failing.
type failPostOnce struct {
	*apptest.SlackWebAPI
	failed bool
}

func (f *failPostOnce) PostMessage(ctx context.Context, channel, threadTS, text string) error {
	if !f.failed {
		f.failed = true
		return errors.New("slack: 503")
	}
	return f.SlackWebAPI.PostMessage(ctx, channel, threadTS, text)
}

// A refusal by lifecycle ends the event and says why in the thread.
func TestARefusedStartIsToldInTheThread(t *testing.T) {
	t.Parallel()
	b := setupSlack(t)
	b.boundary.FailNext = &app.RefusedError{Reason: "git_root: is required"}
	out := b.deliver(t, slackPayload(t, "Ev1", "U1", "fix the build", "100.000001", ""), "Ev1")
	require.Equal(t, "refused: Zimmer could not start a session for trigger #1: git_root: is required", out)
	require.Equal(t, []string{"C1/100.000001: Zimmer could not start a session for trigger #1: git_root: is required"}, b.api.Posts)
}

func TestIgnoredEventsDoNothing(t *testing.T) {
	t.Parallel()
	b := setupSlack(t)
	bot, err := json.Marshal(map[string]any{"type": "event_callback", "event_id": "Ev2",
		"event": map[string]any{"type": "message", "subtype": "bot_message", "bot_id": "B1", "text": "Started session #1", "channel": "C1", "ts": "1.2"}})
	require.NoError(t, err)
	require.Equal(t, "ignored: a bot's message", b.deliver(t, bot, "Ev2"))
	require.Equal(t, "ignored: no trigger fires for it", b.deliver(t, slackPayload(t, "Ev3", "U9", "hi", "1.3", ""), "Ev3"))
	require.Equal(t, "ignored: a reply in a thread no session started", b.deliver(t, slackPayload(t, "Ev4", "U1", "hi", "1.4", "0.9"), "Ev4"))
	require.Empty(t, b.boundary.Sessions)
	require.Empty(t, b.api.Posts)
}
