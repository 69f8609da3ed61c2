package domain_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/queue/internal/domain"
)

func caller(content string) domain.Message {
	return domain.Message{Origin: domain.OriginCaller, Content: content}
}

func notice(origin domain.Origin) domain.Message {
	return domain.Message{Origin: origin, Content: "notice " + string(origin)}
}

// The spec's own example, word for word.
func TestArchiveRefusalOneMessage(t *testing.T) {
	t.Parallel()
	got := domain.ArchiveRefusal(6073, []domain.Message{caller("What do you mean I pulled yellow onion? I didn't do that, add it back")})
	want := "Cannot archive session 6073: 1 queued message has not been delivered. Archiving discards it.\n\n" +
		"  1. What do you mean I pulled yellow onion? I didn't do that, add it back\n\n" +
		"Do not archive. If you are this session, end your turn instead — the queued message is delivered " +
		"as your next turn, and archiving after that succeeds because the queue is empty. If you are " +
		"archiving another session, leave it alone and let it consume what you sent it.\n\n" +
		"Only if you have read the message above and are deliberately discarding it: re-call with " +
		"\"force\": true. That is not the recommended path — the message was accepted from someone who " +
		"was told it would be delivered, and forcing throws it away."
	require.Equal(t, want, got)
}

func TestArchiveRefusalSeveralMessages(t *testing.T) {
	t.Parallel()
	got := domain.ArchiveRefusal(7, []domain.Message{caller("first"), caller(strings.Repeat("x", 300)), notice(domain.OriginAutomatedPRMerged)})
	require.True(t, strings.HasPrefix(got, "Cannot archive session 7: 3 queued messages have not been delivered. Archiving discards them.\n\n"), got)
	require.Contains(t, got, "  1. first\n  2. "+strings.Repeat("x", domain.RefusalPreviewChars-3)+"...\n  3. notice automated_pr_merged\n")
	require.Contains(t, got, "the messages were accepted from someone who was told they would be delivered")
	require.Greater(t, strings.Index(got, `"force": true`), strings.Index(got, "Do not archive."), "force is named last")
	require.Equal(t, 1, strings.Count(got, "force"+`": true`))
	require.Empty(t, domain.ArchiveRefusal(7, nil), "an empty queue does not refuse")
}

func TestRetirementClause(t *testing.T) {
	t.Parallel()
	require.Empty(t, domain.RetirementClause(nil))
	require.Equal(t,
		` — 1 queued message was never delivered and is now marked undelivered: "What do you mean I pulled yellow onion?"`,
		domain.RetirementClause([]domain.Message{caller("What do you mean I pulled yellow onion?")}))
	long := strings.Repeat("y", 200)
	require.Equal(t,
		` — 2 queued messages were never delivered and are now marked undelivered: "a", "`+long[:117]+`..."`,
		domain.RetirementClause([]domain.Message{caller("a"), caller(long)}))
}

func TestAlertFor(t *testing.T) {
	t.Parallel()
	merged, conflict, user := notice(domain.OriginAutomatedPRMerged), notice(domain.OriginAutomatedMergeConflict), caller("hi")
	cases := []struct {
		name     string
		retired  []domain.Message
		forced   bool
		page     []domain.Message
		exempted int
	}{
		{"nothing retired", nil, true, nil, 0},
		{"a forced PR-merged notice alone", []domain.Message{merged}, true, nil, 1},
		{"a PR-merged notice under a system archive", []domain.Message{merged}, false, []domain.Message{merged}, 0},
		{"a merge-conflict notice, forced", []domain.Message{conflict}, true, []domain.Message{conflict}, 0},
		{"a caller's message, forced", []domain.Message{user}, true, []domain.Message{user}, 0},
		{"a mixed queue, forced", []domain.Message{merged, user, merged}, true, []domain.Message{user}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := domain.AlertFor(tc.retired, tc.forced)
			require.Equal(t, tc.page, a.Page)
			require.Equal(t, tc.exempted, a.ExemptedNotices)
			require.Equal(t, len(tc.page) > 0, a.Pages())
		})
	}
	mixed := domain.AlertFor([]domain.Message{merged, user}, true).Summary(9)
	require.Equal(t, `Session 9 archived — 1 queued message was never delivered and is now marked undelivered: "hi"`+
		"; 1 PR-merged notice was retired alongside, not paged because the archive was forced after the guard showed it", mixed)
}
