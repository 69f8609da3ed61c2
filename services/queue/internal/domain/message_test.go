package domain_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/platform/validation"
	"github.com/zimmerhq/zimmer/services/queue/internal/domain"
)

func TestNewMessageValidate(t *testing.T) {
	t.Parallel()
	valid := domain.NewMessage{SessionID: 1, Origin: domain.OriginCaller, Content: "hello"}
	with := func(f func(*domain.NewMessage)) domain.NewMessage { n := valid; f(&n); return n }
	cases := []struct {
		name   string
		msg    domain.NewMessage
		fields []string
	}{
		{"a caller's message", valid, nil},
		{"an automated notice", with(func(n *domain.NewMessage) { n.Origin = domain.OriginAutomatedMergeConflict }), nil},
		{"content at the limit", with(func(n *domain.NewMessage) { n.Content = strings.Repeat("é", domain.MaxContentChars) }), nil},
		{"content over the limit", with(func(n *domain.NewMessage) { n.Content = strings.Repeat("a", domain.MaxContentChars+1) }), []string{"content"}},
		{"goal over the limit", with(func(n *domain.NewMessage) { n.Goal = strings.Repeat("a", domain.MaxGoalChars+1) }), []string{"goal"}},
		{"empty content", with(func(n *domain.NewMessage) { n.Content = "" }), []string{"content"}},
		{"NUL in content", with(func(n *domain.NewMessage) { n.Content = "a\x00b" }), []string{"content"}},
		{"blank content", with(func(n *domain.NewMessage) { n.Content = " \n\t" }), []string{"content"}},
		{"content of no-break spaces", with(func(n *domain.NewMessage) { n.Content = "\u00a0\u3000" }), []string{"content"}},
		{"content padded with white space", with(func(n *domain.NewMessage) { n.Content = "\n  hello\t" }), nil},
		{"invalid UTF-8 in goal", with(func(n *domain.NewMessage) { n.Goal = "\xff" }), []string{"goal"}},
		{"NUL in idempotency key", with(func(n *domain.NewMessage) { n.IdempotencyKey = "\x00" }), []string{"idempotency_key"}},
		{"an unknown origin", with(func(n *domain.NewMessage) { n.Origin = "someone" }), []string{"origin"}},
		{"a bare automated_", with(func(n *domain.NewMessage) { n.Origin = "automated_" }), []string{"origin"}},
		{"an automated origin with a double underscore", with(func(n *domain.NewMessage) { n.Origin = "automated_pr__merged" }), []string{"origin"}},
		{"no session", with(func(n *domain.NewMessage) { n.SessionID = 0 }), []string{"session_id"}},
		{"every problem at once", domain.NewMessage{ActingSessionID: -1, Goal: "\x00"}, []string{"session_id", "acting_session_id", "origin", "content", "goal"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.fields, violatedFields(t, tc.msg.Validate()))
		})
	}
}

func TestEditValidate(t *testing.T) {
	t.Parallel()
	empty, long, ok := "", strings.Repeat("a", domain.MaxGoalChars+1), "fine"
	require.NoError(t, domain.Edit{}.Validate())
	require.NoError(t, domain.Edit{Content: &ok, Goal: &empty}.Validate(), "an empty goal clears it")
	require.Equal(t, []string{"content", "goal"}, violatedFields(t, domain.Edit{Content: &empty, Goal: &long}.Validate()))
	blank := "\n\r\t"
	require.Equal(t, []string{"content"}, violatedFields(t, domain.Edit{Content: &blank}.Validate()), "an edit cannot blank a message")
}

// A message that can never be a turn (blank content, queued before blank
// text was refused) says so, and why.
func TestUndeliverable(t *testing.T) {
	t.Parallel()
	require.Empty(t, domain.Message{ID: 1, Content: " hi "}.Undeliverable())
	require.NoError(t, domain.CheckDeliverable(domain.Message{ID: 1, Content: "hi"}))
	blank := domain.Message{ID: 12, Content: " \n\t"}
	require.Equal(t, domain.ReasonBlank, blank.Undeliverable())
	var u *domain.UndeliverableError
	require.ErrorAs(t, domain.CheckDeliverable(blank), &u)
	require.Equal(t, domain.UndeliverableError{MessageID: 12, Reason: domain.ReasonBlank}, *u)
	require.EqualError(t, u, "message 12 can never be delivered: "+domain.ReasonBlank+"; it is now marked undelivered")
}

func violatedFields(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	var verr *validation.Error
	require.True(t, errors.As(err, &verr), "%T is not a *validation.Error", err)
	fields := make([]string, len(verr.Violations))
	for i, v := range verr.Violations {
		fields[i] = v.Field
	}
	return fields
}

func TestReorder(t *testing.T) {
	t.Parallel()
	queue := []int64{10, 20, 30, 40}
	cases := []struct {
		name string
		id   int64
		to   int
		want []int64
	}{
		{"to the front", 30, 1, []int64{30, 10, 20, 40}},
		{"to the back", 10, 4, []int64{20, 30, 40, 10}},
		{"in place", 20, 2, []int64{10, 20, 30, 40}},
		{"one down", 20, 3, []int64{10, 30, 20, 40}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := domain.Reorder(queue, tc.id, tc.to)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
	require.Equal(t, []int64{10, 20, 30, 40}, queue, "the input is not changed")
	_, err := domain.Reorder(queue, 99, 1)
	require.ErrorContains(t, err, "message 99 is not pending")
	for _, to := range []int{0, 5} {
		_, err := domain.Reorder(queue, 10, to)
		require.Equal(t, []string{"position"}, violatedFields(t, err))
	}
}

func TestPreview(t *testing.T) {
	t.Parallel()
	require.Equal(t, "short", domain.Preview("short", 10))
	require.Equal(t, "two lines", domain.Preview("two\n  lines", 10))
	require.Equal(t, "abcdefg...", domain.Preview("abcdefghijk", 10))
	require.Equal(t, "ééééééé...", domain.Preview(strings.Repeat("é", 11), 10), "characters, not bytes")
}
