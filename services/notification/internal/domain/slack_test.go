package domain_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/notification/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// envelope is an event_callback as the Events API delivers it, with event
// as its event.
func envelope(t testing.TB, eventID string, event map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"token": "x", "team_id": "T1", "api_app_id": "A1", "type": "event_callback", "event_id": eventID, "event_time": 1,
		"event": event, "authorizations": []map[string]any{{"team_id": "T1", "user_id": "UBOT", "is_bot": true}},
	})
	require.NoError(t, err)
	return b
}

func message(over map[string]any) map[string]any {
	m := map[string]any{"type": "message", "user": "U1", "text": "fix the build", "channel": "C1", "channel_type": "channel", "ts": "1700000000.000100"}
	for k, v := range over {
		m[k] = v
	}
	return m
}

func TestParseEventCallback(t *testing.T) {
	t.Parallel()
	m, err := domain.ParseEventCallback(envelope(t, "Ev1", message(map[string]any{"thread_ts": "1699999999.000001"})))
	require.NoError(t, err)
	require.Equal(t, domain.SlackMessage{
		EventID: "Ev1", BotUserIDs: []string{"UBOT"}, Type: "message", User: "U1", Text: "fix the build", Channel: "C1",
		ChannelType: "channel", TS: "1700000000.000100", ThreadTS: "1699999999.000001",
	}, m)
	require.True(t, m.InThread())
	require.Equal(t, time.Date(2023, 11, 14, 22, 13, 20, 100_000, time.UTC), m.OccurredAt())

	for name, payload := range map[string][]byte{
		"not JSON":            []byte("{"),
		"a url_verification":  []byte(`{"type":"url_verification","challenge":"c"}`),
		"no event id":         envelope(t, "", message(nil)),
		"an event id to fear": envelope(t, "Ev1/../x", message(nil)),
		"no event":            []byte(`{"type":"event_callback","event_id":"Ev1"}`),
	} {
		_, err := domain.ParseEventCallback(payload)
		var verr *validation.Error
		require.ErrorAs(t, err, &verr, name)
	}
}

func TestIgnored(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		over map[string]any
		want string
	}{
		"a person's message":      {nil, ""},
		"a bot's (our own reply)": {map[string]any{"bot_id": "B1"}, "a bot's message"},
		"a bot_message":           {map[string]any{"subtype": "bot_message", "user": nil}, "a bot's message"},
		"an edit":                 {map[string]any{"subtype": "message_changed"}, "an edit"},
		"a deletion":              {map[string]any{"subtype": "message_deleted"}, "a deletion"},
		"a join":                  {map[string]any{"subtype": "channel_join"}, `a "channel_join" message, not a person's new message`},
		"a reaction":              {map[string]any{"type": "reaction_added"}, `a "reaction_added" event, not a message`},
		"no user":                 {map[string]any{"user": ""}, "a message with no Slack user"},
		"blank":                   {map[string]any{"text": "  "}, "an empty message"},
	} {
		m, err := domain.ParseEventCallback(envelope(t, "Ev1", message(tc.over)))
		require.NoError(t, err, name)
		require.Equal(t, tc.want, m.Ignored(), name)
	}
}

func TestTriggerFires(t *testing.T) {
	t.Parallel()
	channel := domain.SlackTrigger{ID: 1, Channel: "C1", AllowedUserIDs: []string{"U1", "U2"}, GitRoot: "/r"}
	prefixed := channel
	prefixed.Prefix = "zimmer:"
	mention := channel
	mention.RequireMention = true
	dm := channel
	dm.Channel = domain.ChannelDM
	for name, tc := range map[string]struct {
		t      domain.SlackTrigger
		over   map[string]any
		prompt string
	}{
		"its channel, an allowed user":       {channel, nil, "fix the build"},
		"another channel":                    {channel, map[string]any{"channel": "C2"}, ""},
		"a user not allowed":                 {channel, map[string]any{"user": "U3"}, ""},
		"the prefix, cut":                    {prefixed, map[string]any{"text": "zimmer: fix it"}, "fix it"},
		"no prefix":                          {prefixed, map[string]any{"text": "fix it"}, ""},
		"only the prefix":                    {prefixed, map[string]any{"text": "zimmer:"}, ""},
		"the mention, cut":                   {mention, map[string]any{"text": "<@UBOT> fix it"}, "fix it"},
		"no mention":                         {mention, map[string]any{"text": "fix it"}, ""},
		"someone else mentioned":             {mention, map[string]any{"text": "<@U9> fix it"}, ""},
		"a DM to the app":                    {dm, map[string]any{"channel": "D1", "channel_type": "im"}, "fix the build"},
		"a channel message for a DM trigger": {dm, nil, ""},
	} {
		m, err := domain.ParseEventCallback(envelope(t, "Ev1", message(tc.over)))
		require.NoError(t, err, name)
		prompt, ok := tc.t.Fires(m)
		require.Equal(t, tc.prompt != "", ok, name)
		require.Equal(t, tc.prompt, prompt, name)
	}

	// The oldest trigger that fires wins.
	m, err := domain.ParseEventCallback(envelope(t, "Ev1", message(map[string]any{"text": "zimmer: go"})))
	require.NoError(t, err)
	second := channel
	second.ID = 2
	got, prompt, ok := domain.FirstFiring([]domain.SlackTrigger{prefixed, second}, m)
	require.True(t, ok)
	require.Equal(t, int64(1), got.ID)
	require.Equal(t, "go", prompt)
}

func TestProvenanceOfAMessage(t *testing.T) {
	t.Parallel()
	require.Equal(t, "slack.channel_message", domain.SlackMessage{ChannelType: "channel"}.Provenance())
	require.Equal(t, "slack.channel_message", domain.SlackMessage{ChannelType: "group"}.Provenance())
	require.Equal(t, "slack.dm", domain.SlackMessage{ChannelType: "im"}.Provenance())
	require.Equal(t, "slack-ev0pv52k25", domain.SessionSlug("Ev0PV52K25"))
}

func TestSlackTriggerValidation(t *testing.T) {
	t.Parallel()
	ok := domain.SlackTrigger{Channel: " dm ", AllowedUserIDs: []string{" U2", "U1", "", "U1"}, GitRoot: " /r "}
	ok.Normalize()
	require.NoError(t, ok.Validate())
	require.Equal(t, domain.SlackTrigger{Channel: "dm", AllowedUserIDs: []string{"U1", "U2"}, GitRoot: "/r"}, ok)

	bad := domain.SlackTrigger{Channel: "#general", AllowedUserIDs: []string{"tadas"}, GitRoot: " "}
	bad.Normalize()
	err := bad.Validate()
	var verr *validation.Error
	require.ErrorAs(t, err, &verr)
	fields := map[string]string{}
	for _, v := range verr.Violations {
		fields[v.Field] = v.Reason
	}
	require.Contains(t, fields["channel"], `"#general" is not a Slack channel ID`)
	require.Contains(t, fields["allowed_user_ids"], `"tadas" is not a Slack user ID`)
	require.Contains(t, fields["git_root"], "is required")

	none := domain.SlackTrigger{Channel: "C1", GitRoot: "/r"}
	err = none.Validate()
	require.ErrorAs(t, err, &verr)
	require.Contains(t, verr.Error(), "at least one Slack user ID")
}

// FuzzParseEventCallback: whatever Slack (or an attacker with the secret)
// sends, parsing never panics, and what parses has an event id fit to key
// a delivery and a workflow id.
func FuzzParseEventCallback(f *testing.F) {
	f.Add(envelope(f, "Ev1", message(nil)))
	f.Add(envelope(f, "Ev2", message(map[string]any{"subtype": "message_changed", "thread_ts": "1.2"})))
	f.Add([]byte(`{"type":"event_callback","event_id":"Ev3","event":{"type":"message","ts":"x.y"}}`))
	f.Add([]byte(`{"type":"url_verification","challenge":"c"}`))
	f.Fuzz(func(t *testing.T, payload []byte) {
		m, err := domain.ParseEventCallback(payload)
		if err != nil {
			return
		}
		require.Regexp(t, `^[A-Za-z0-9]{1,64}$`, m.EventID)
		_ = m.Ignored()
		_ = m.OccurredAt()
		_ = m.FollowUpPrompt()
		_, _ = domain.SlackTrigger{Channel: "C1", AllowedUserIDs: []string{"U1"}, RequireMention: true, Prefix: "z"}.Fires(m)
	})
}
