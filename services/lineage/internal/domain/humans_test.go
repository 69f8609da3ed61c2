package domain_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lineage/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

func msg(id, session int64, at int64) domain.HumanMessage {
	return domain.HumanMessage{ID: id, Author: "tadasant", Provenance: domain.WebUIFollowUp, AuthoredInSessionID: session,
		Content: "message " + string(rune('a'+id%26)), OccurredAt: time.Unix(at, 0).UTC()}
}

func TestHumanMessageValidate(t *testing.T) {
	t.Parallel()
	valid := msg(0, 5, 10)
	tests := []struct {
		name   string
		modify func(*domain.HumanMessage)
		field  string
	}{
		{"valid", func(*domain.HumanMessage) {}, ""},
		{"slack with permalink", func(m *domain.HumanMessage) {
			m.Provenance, m.SlackPermalink = domain.SlackChannelMessage, "https://x.slack.com/archives/C1/p1"
		}, ""},
		{"no author", func(m *domain.HumanMessage) { m.Author = "" }, "author"},
		{"unknown provenance", func(m *domain.HumanMessage) { m.Provenance = "mcp.follow_up" }, "provenance"},
		{"no session", func(m *domain.HumanMessage) { m.AuthoredInSessionID = 0 }, "authored_in_session_id"},
		{"blank content", func(m *domain.HumanMessage) { m.Content = " \n" }, "content"},
		{"too long", func(m *domain.HumanMessage) { m.Content = strings.Repeat("x", domain.MaxHumanMessageLength+1) }, "content"},
		{"permalink on web UI", func(m *domain.HumanMessage) { m.SlackPermalink = "https://x" }, "slack_permalink"},
		{"permalink not https", func(m *domain.HumanMessage) {
			m.Provenance, m.SlackPermalink = domain.SlackDM, "javascript:alert(1)"
		}, "slack_permalink"},
		{"no time", func(m *domain.HumanMessage) { m.OccurredAt = time.Time{} }, "occurred_at"},
		{"a key", func(m *domain.HumanMessage) { m.IdempotencyKey = "slack/Ev0PV52K25" }, ""},
		{"a key at the bound", func(m *domain.HumanMessage) { m.IdempotencyKey = strings.Repeat("é", domain.MaxIdempotencyKeyChars) }, ""},
		{"a key too long", func(m *domain.HumanMessage) { m.IdempotencyKey = strings.Repeat("k", domain.MaxIdempotencyKeyChars+1) }, "idempotency_key"},
		{"a key with a space", func(m *domain.HumanMessage) { m.IdempotencyKey = "slack/Ev 1" }, "idempotency_key"},
		{"a key with a newline", func(m *domain.HumanMessage) { m.IdempotencyKey = "slack/Ev1\n" }, "idempotency_key"},
		{"a key not UTF-8", func(m *domain.HumanMessage) { m.IdempotencyKey = "slack/\xff" }, "idempotency_key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := valid
			tt.modify(&m)
			err := m.Validate()
			if tt.field == "" {
				require.NoError(t, err)
				return
			}
			var ve *validation.Error
			require.ErrorAs(t, err, &ve)
			require.Len(t, ve.Violations, 1)
			require.Equal(t, tt.field, ve.Violations[0].Field)
		})
	}
}

// A retry under a key is the first record when it says what the first
// said, whoever the author and whenever; anything else is the key reused.
func TestReplay(t *testing.T) {
	t.Parallel()
	first := msg(12, 5, 10)
	first.Provenance, first.IdempotencyKey = domain.SlackChannelMessage, "slack/Ev1"
	first.SlackPermalink = "https://x.slack.com/archives/C1/p1"
	same := first
	same.ID, same.Author, same.OccurredAt, same.SlackPermalink = 0, "juliehazz", time.Unix(99, 0), ""
	require.NoError(t, same.Replay(first))

	for name, modify := range map[string]func(*domain.HumanMessage){
		"other words":   func(m *domain.HumanMessage) { m.Content += "!" },
		"other session": func(m *domain.HumanMessage) { m.AuthoredInSessionID++ },
		"other channel": func(m *domain.HumanMessage) { m.Provenance = domain.SlackDM },
	} {
		other := same
		modify(&other)
		err := other.Replay(first)
		require.ErrorIs(t, err, domain.ErrAlreadyExists, name)
		require.EqualError(t, err, `idempotency_key "slack/Ev1" already recorded human message 12 (slack.channel_message in session 5), `+
			"which said something else; a retry must repeat the message it names, and a new message needs a new key", name)
	}
}

func TestParseProvenance(t *testing.T) {
	t.Parallel()
	for _, p := range domain.Provenances {
		got, err := domain.ParseProvenance(string(p))
		require.NoError(t, err)
		require.Equal(t, p, got)
		require.NotEqual(t, p.WebUI(), p.Slack())
	}
	_, err := domain.ParseProvenance("github.comment")
	require.Error(t, err)
}

func TestProvenanceChannel(t *testing.T) {
	t.Parallel()
	for _, p := range domain.Provenances {
		want := domain.ChannelSlack
		if p.WebUI() {
			want = domain.ChannelWebUI
		}
		require.Equal(t, want, p.Channel(), p)
	}
	require.Equal(t, "Zimmer web UI", domain.ChannelWebUI.Label())
	require.Equal(t, "Slack", domain.ChannelSlack.Label())
}

// Messages said at the same instant keep the order they were recorded in.
func TestGatherHumanMessagesOrdersTiesByID(t *testing.T) {
	t.Parallel()
	at := time.Unix(1_700_000_000, 0)
	got := domain.GatherHumanMessages(2, []domain.HumanMessage{
		{ID: 9, AuthoredInSessionID: 2, OccurredAt: at}, {ID: 3, AuthoredInSessionID: 1, OccurredAt: at},
		{ID: 5, AuthoredInSessionID: 2, OccurredAt: at.Add(-time.Second)},
	}, false)
	var ids []int64
	for _, m := range got.Messages {
		ids = append(ids, m.ID)
	}
	require.Equal(t, []int64{5, 3, 9}, ids)
}

func TestGatherHumanMessagesHereAndElsewhere(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name            string
		msgs            []domain.HumanMessage
		truncated       bool
		here, elsewhere int
		wantHere        bool
	}{
		{"none", nil, false, 0, 0, false},
		{"only elsewhere", []domain.HumanMessage{msg(1, 1, 1), msg(2, 3, 2)}, false, 0, 2, false},
		{"here and elsewhere", []domain.HumanMessage{msg(1, 1, 1), msg(2, 2, 2), msg(3, 2, 3)}, false, 2, 1, true},
		{"truncated", []domain.HumanMessage{msg(1, 1, 1)}, true, 0, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := domain.GatherHumanMessages(2, tt.msgs, tt.truncated)
			require.Equal(t, tt.here, got.HereCount)
			require.Equal(t, tt.elsewhere, got.ElsewhereCount)
			require.Equal(t, tt.wantHere, got.HumanMessageHere())
			require.Equal(t, tt.truncated, got.Truncated)
			require.Len(t, got.Messages, len(tt.msgs))
			for i, m := range got.Messages {
				if i > 0 {
					require.False(t, m.OccurredAt.Before(got.Messages[i-1].OccurredAt), "oldest first: in the order they were said")
				}
				require.Equal(t, m.AuthoredInSessionID == 2, m.Origin == domain.Here)
			}
		})
	}
}
