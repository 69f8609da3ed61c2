package domain_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/notification/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

var now = time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC)

func TestNeedsInputRefusal(t *testing.T) {
	t.Parallel()
	waiting := domain.Session{ID: 42, Status: "needs_input", NeedsInputCount: 7, PushNotifications: true}
	tests := []struct {
		name    string
		session func(s domain.Session) domain.Session
		marker  int64
		want    string // "" pushes; otherwise a phrase of the refusal
	}{
		{"still waiting from that pause", func(s domain.Session) domain.Session { return s }, 7, ""},
		{"resumed since", func(s domain.Session) domain.Session { s.Status = "running"; return s }, 7, "session 42 is running now"},
		{"failed since", func(s domain.Session) domain.Session { s.Status = "failed"; return s }, 7, "is failed now"},
		{"paused again since", func(s domain.Session) domain.Session { s.NeedsInputCount = 8; return s }, 7, "paused again since (needs_input_count 8, this push was for 7)"},
		{"opted out", func(s domain.Session) domain.Session { s.PushNotifications = false; return s }, 7, "push_notifications off"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := domain.NeedsInputRefusal(tt.session(waiting), tt.marker)
			if tt.want == "" {
				require.Empty(t, got)
				return
			}
			require.Contains(t, got, tt.want)
		})
	}
}

func TestNeedsInputSaysWhichSessionWaits(t *testing.T) {
	t.Parallel()
	n := domain.NeedsInput(domain.Session{ID: 42, Title: "Fix the flaky retry test"}, 7, now)
	require.Equal(t, domain.TypeNeedsInput, n.Type)
	require.EqualValues(t, 42, n.SessionID)
	require.EqualValues(t, 7, n.Marker)
	require.Equal(t, now, n.CreatedAt)
	require.Equal(t, "Session 42 needs your input: Fix the flaky retry test", n.Title)
	require.Equal(t, `Session 42 ("Fix the flaky retry test") finished its turn and is waiting for you. `+
		"Send it a follow-up to continue, or archive it if its work is done.", n.Body)
	require.Empty(t, n.DedupKey, "a pause is identified by its session and marker")

	untitled := domain.NeedsInput(domain.Session{ID: 43, Title: "  "}, 1, now)
	require.Equal(t, "Session 43 needs your input", untitled.Title)
	require.True(t, strings.HasPrefix(untitled.Body, "Session 43 finished its turn"), untitled.Body)
}

func TestFailureNamesTheReasonAndIgnoresTheOptIn(t *testing.T) {
	t.Parallel()
	s := domain.Session{ID: 42, Title: "Fix the flaky retry test", PushNotifications: false}
	n := domain.Failure(s, "the clone is gone from disk.", "8d7c", now)
	require.Equal(t, domain.TypeFailure, n.Type)
	require.Equal(t, "Session 42 failed: Fix the flaky retry test", n.Title)
	require.Equal(t, `Session 42 ("Fix the flaky retry test") failed and will not retry on its own: the clone is gone from disk. `+
		"Read its timeline, then restart it to try again, or archive it.", n.Body)
	require.Equal(t, "failure/8d7c", n.DedupKey)

	silent := domain.Failure(domain.Session{ID: 5}, "", "e1", now)
	require.Equal(t, "Session 5 failed", silent.Title)
	require.Contains(t, silent.Body, "failed and will not retry on its own: no failure reason was recorded.")
}

func TestGeneratedTextIsCutToTheLimits(t *testing.T) {
	t.Parallel()
	s := domain.Session{ID: 1, Title: strings.Repeat("é", 500)}
	n := domain.Failure(s, strings.Repeat("x", 10_000), "e", now)
	require.Equal(t, domain.MaxTitleChars, len([]rune(n.Title)))
	require.True(t, strings.HasSuffix(n.Title, "…"))
	require.Equal(t, domain.MaxBodyChars, len([]rune(n.Body)))
	require.NoError(t, domain.AgentMessage{Title: n.Title, Body: n.Body}.Validate(), "within what an agent may send")
}

func TestPushTitleNamesTheAgentsSession(t *testing.T) {
	t.Parallel()
	msg := domain.AgentMessage{SessionID: 12, Title: "Tests are green"}.Notification(now)
	require.Equal(t, "Session 12: Tests are green", msg.PushTitle())
	require.Equal(t, "Tests are green", msg.Title, "the inbox keeps the agent's words")
	require.Equal(t, "Deploy done", domain.AgentMessage{Title: "Deploy done"}.Notification(now).PushTitle(), "no session to name")
	failure := domain.Failure(domain.Session{ID: 3}, "", "e", now)
	require.Equal(t, failure.Title, failure.PushTitle(), "Zimmer's titles name their session already")
	require.Equal(t, "notification/9", domain.Notification{ID: 9}.PushDedupKey())
}

func TestAgentMessageValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		msg    domain.AgentMessage
		fields []string
	}{
		{"a message", domain.AgentMessage{SessionID: 3, Title: "Tests are green", Body: "All 212 passed."}, nil},
		{"from no session", domain.AgentMessage{Title: "Backup finished"}, nil},
		{"the longest title and body", domain.AgentMessage{Title: strings.Repeat("t", 200), Body: strings.Repeat("b", 4000)}, nil},
		{"no title", domain.AgentMessage{Title: "  ", Body: "x"}, []string{"title"}},
		{"a title too long", domain.AgentMessage{Title: strings.Repeat("t", 201)}, []string{"title"}},
		{"a body too long", domain.AgentMessage{Title: "t", Body: strings.Repeat("b", 4001)}, []string{"body"}},
		{"a NUL", domain.AgentMessage{Title: "t\x00", Body: "b\x00"}, []string{"title", "body"}},
		{"everything wrong", domain.AgentMessage{SessionID: -1, Body: strings.Repeat("b", 4001)}, []string{"title", "body", "session_id"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.fields, violatedFields(tt.msg.Validate()))
		})
	}
}

func TestNewFilter(t *testing.T) {
	t.Parallel()
	f, err := domain.NewFilter(true, "failure", 42, true, 0, "")
	require.NoError(t, err)
	require.Equal(t, domain.Filter{Unread: true, Type: domain.TypeFailure, SessionID: 42, IncludeDismissed: true, Limit: domain.DefaultPageSize}, f)

	_, err = domain.NewFilter(false, "digest", -1, false, 501, "garbage!")
	require.Equal(t, []string{"type", "session_id", "page_size", "page_token"}, violatedFields(err))
	require.ErrorContains(t, err, "use one of needs_input, failure, elicitation, agent_message")
}

func TestPagesContinueBelowTheLastID(t *testing.T) {
	t.Parallel()
	f, err := domain.NewFilter(false, "", 0, false, 2, "")
	require.NoError(t, err)
	rows := []domain.Notification{{ID: 9}, {ID: 7}, {ID: 4}}
	page := domain.NewPage(f, rows, 5)
	require.Equal(t, rows[:2], page.Notifications)
	require.Equal(t, 5, page.UnreadCount)
	require.NotEmpty(t, page.NextPageToken)

	next, err := domain.NewFilter(false, "", 0, false, 2, page.NextPageToken)
	require.NoError(t, err)
	require.EqualValues(t, 7, next.BeforeID)

	last := domain.NewPage(next, rows[2:], 5)
	require.Empty(t, last.NextPageToken, "no row beyond the page")
}

func violatedFields(err error) []string {
	if err == nil {
		return nil
	}
	var verr *validation.Error
	if !errors.As(err, &verr) {
		return []string{"not a validation error: " + err.Error()}
	}
	var fields []string
	for _, v := range verr.Violations {
		fields = append(fields, v.Field)
	}
	return fields
}
