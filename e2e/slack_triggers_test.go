package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// waitProcessed waits until the event's workflow has finished with it and
// returns what became of it (slack_events.outcome).
func (ss slackStack) waitProcessed(t *testing.T, eventID string) string {
	t.Helper()
	var outcome string
	require.Eventually(t, func() bool {
		conn, err := pgx.Connect(context.Background(), ss.dbURL["notification"])
		require.NoError(t, err)
		defer conn.Close(context.Background())
		err = conn.QueryRow(context.Background(),
			`SELECT outcome FROM slack_events WHERE event_id = $1 AND processed_at IS NOT NULL`, eventID).Scan(&outcome)
		return err == nil
	}, 60*time.Second, 200*time.Millisecond, "event %s was never processed", eventID)
	return outcome
}

// TestSlackDirectMessagesMentionsAndRetries drives, through signed fixtures
// on POST /slack/events and the loopback Web API fake, what TestSlack does
// not: a direct message to the app starts a session (recorded slack.dm); a
// follow-up in its thread while it runs is told, once, in the thread, that
// it is queued; a channel trigger with the mention rule starts nothing for
// a message without the mention and one session for one with it; and the
// invariant "no forged, no duplicated human message" holds when the
// notification service fails between lineage recording a message and the
// event's row noting it (the retry records nothing twice).
func TestSlackDirectMessagesMentionsAndRetries(t *testing.T) {
	t.Parallel()
	ss := newSlackStack(t)
	api, slack, web := ss.api, ss.slack, ss.web
	repo := gitRepo(t)
	const (
		mapped     = "U0JULIE" // on the roster: Julie
		dmChannel  = "D0E2EDM01"
		mentionsIn = "C0E2EMENTION"
	)
	code, body := ss.supervisor(t, http.MethodPatch, "/supervisor/users/juliehazz", fmt.Sprintf(`{"slack_user_ids":[%q]}`, mapped))
	require.Equal(t, http.StatusOK, code, body)
	for _, trigger := range []string{
		fmt.Sprintf(`{"channel":"dm","allowed_user_ids":[%q],"git_root":%q}`, mapped, repo),
		fmt.Sprintf(`{"channel":%q,"allowed_user_ids":[%q],"require_mention":true,"git_root":%q}`, mentionsIn, mapped, repo),
	} {
		code, body = api.do(t, http.MethodPost, "/api/v1/slack/triggers", trigger)
		require.Equal(t, http.StatusOK, code, body)
	}
	retried := map[string]string{"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"}

	var dm slackSession
	dmMessage := slackEvent{ID: "Ev0DM00001", User: mapped, Channel: dmChannel, ChannelType: "im",
		Text: "@demo sleep 30s", TS: "1700001000.000100"}
	t.Run("a direct message to the app starts a session", func(t *testing.T) {
		code, body := slack.post(t, dmMessage.body(), time.Now(), "", nil)
		require.Equal(t, http.StatusOK, code, body)
		dm = api.slackStarted(t, dmMessage.ID)
		require.Equal(t, "slack", dm.Session.Genesis)
		require.Equal(t, dmMessage.Text, dm.Session.Prompt)
		require.Equal(t, fmt.Sprintf("started session %d (trigger #1)", dm.Session.ID), ss.waitProcessed(t, dmMessage.ID))
		got := api.slackSessionByID(t, dm.Session.ID)
		require.Len(t, got.HumanMessages, 1)
		require.Equal(t, "juliehazz", got.HumanMessages[0].Author)
		require.Equal(t, "slack.dm", got.HumanMessages[0].EntryPoint)
		require.Equal(t, slackPermalink(dmChannel, dmMessage.TS), got.HumanMessages[0].SlackPermalink)
		require.Len(t, web.inThreadSaying(dmChannel, dmMessage.TS, fmt.Sprintf("Started session #%d", dm.Session.ID)), 1)
	})

	t.Run("a follow-up while it runs is told it is queued, once", func(t *testing.T) {
		api.waitStatus(t, dm.Session.ID, "running")
		reply := slackEvent{ID: "Ev0DM00002", User: mapped, Channel: dmChannel, ChannelType: "im",
			Text: "@demo say and then this", TS: "1700001001.000100", ThreadTS: dmMessage.TS}
		code, body := slack.post(t, reply.body(), time.Now(), "", nil)
		require.Equal(t, http.StatusOK, code, body)
		code, body = slack.post(t, reply.body(), time.Now(), "", retried)
		require.Equal(t, http.StatusOK, code, body)
		require.Equal(t, fmt.Sprintf("queued a follow-up for session %d", dm.Session.ID), ss.waitProcessed(t, reply.ID))
		// The queue's words, the spec's: "Message queued (session is
		// running). It will be sent when the agent completes its current
		// task."
		queued := web.inThreadSaying(dmChannel, dmMessage.TS, "Message queued (session is running)")
		require.Len(t, queued, 1, "%+v", web.inThread(dmChannel, dmMessage.TS))
		require.Contains(t, queued[0].Text, "when the agent completes its current task")
		require.Len(t, api.slackSessionByID(t, dm.Session.ID).HumanMessages, 2)
	})

	t.Run("the mention rule: without it nothing starts, with it one session", func(t *testing.T) {
		plain := slackEvent{ID: "Ev0MENT001", User: mapped, Channel: mentionsIn, ChannelType: "channel",
			Text: "@demo say nobody called you", TS: "1700002000.000100"}
		code, body := slack.post(t, plain.body(), time.Now(), "", nil)
		require.Equal(t, http.StatusOK, code, body)
		require.Equal(t, "ignored: no trigger fires for it", ss.waitProcessed(t, plain.ID))
		code, body = api.do(t, http.MethodGet, "/api/v1/sessions/slack-"+strings.ToLower(plain.ID), "")
		require.Equal(t, http.StatusNotFound, code, body)
		require.Empty(t, web.inThread(mentionsIn, plain.TS))

		called := slackEvent{ID: "Ev0MENT002", User: mapped, Channel: mentionsIn, ChannelType: "channel",
			Text: "<@" + slackBot + "> @demo say you were called", TS: "1700002001.000100"}
		code, body = slack.post(t, called.body(), time.Now(), "", nil)
		require.Equal(t, http.StatusOK, code, body)
		code, body = slack.post(t, called.body(), time.Now(), "", retried)
		require.Equal(t, http.StatusOK, code, body)
		got := api.slackStarted(t, called.ID)
		require.Equal(t, "@demo say you were called", got.Session.Prompt, "the mention is cut from the prompt")
		require.Equal(t, fmt.Sprintf("started session %d (trigger #2)", got.Session.ID), ss.waitProcessed(t, called.ID))
		require.Len(t, web.inThread(mentionsIn, called.TS), 1)
	})

	t.Run("a crash between the record and the event's note records one message", func(t *testing.T) {
		// The notification service's first attempt to note the capture
		// done fails, as if it died right after lineage recorded the
		// message; Temporal retries the activity, which records again.
		ev := slackEvent{ID: "Ev0CRASH01", User: mapped, Channel: dmChannel, ChannelType: "im",
			Text: "@demo say recorded once", TS: "1700003000.000100"}
		_, err := ss.exec(t, "notification", fmt.Sprintf(`
			CREATE SEQUENCE e2e_capture_notes;
			CREATE FUNCTION e2e_die_before_noting_capture() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN
				IF NEW.event_id = '%s' AND OLD.captured_at IS NULL AND NEW.captured_at IS NOT NULL THEN
					IF nextval('e2e_capture_notes') = 1 THEN
						RAISE EXCEPTION 'e2e: the service died between the record and its note';
					END IF;
				END IF;
				RETURN NEW;
			END $$;
			CREATE TRIGGER e2e_die_before_noting_capture BEFORE UPDATE ON slack_events
				FOR EACH ROW EXECUTE FUNCTION e2e_die_before_noting_capture();`, ev.ID))
		require.NoError(t, err)

		code, body := slack.post(t, ev.body(), time.Now(), "", nil)
		require.Equal(t, http.StatusOK, code, body)
		got := api.slackStarted(t, ev.ID)
		require.Equal(t, fmt.Sprintf("started session %d (trigger #1)", got.Session.ID), ss.waitProcessed(t, ev.ID))
		require.GreaterOrEqual(t, ss.queryInt(t, "notification", `SELECT last_value::int FROM e2e_capture_notes`), 2,
			"the first note failed and a retry noted it")
		messages := api.slackSessionByID(t, got.Session.ID).HumanMessages
		require.Len(t, messages, 1, "recorded once: %+v", messages)
		require.Equal(t, "@demo say recorded once", messages[0].Content)
		require.Equal(t, 1, ss.queryInt(t, "lineage", `SELECT count(*)::int FROM human_messages WHERE authored_in_session_id = $1`, got.Session.ID))
	})
}
