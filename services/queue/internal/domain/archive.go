package domain

import (
	"fmt"
	"strings"
)

// Previews: the refusal shows enough of each message for the caller to
// decide whether to discard it (at most 160 characters, as the original's);
// the archive line only names what was lost.
const (
	RefusalPreviewChars    = 160
	RetirementPreviewChars = 120
)

// RetirementAlertTitle is the retirement alert's title (its details'
// "title"): what an operator reads before the summary.
const RetirementAlertTitle = "Queued messages discarded by an archive"

// ArchiveRefusal is the archive guard's refusal over a session's live
// queue, in delivery order: the messages numbered, what to do instead, and
// force named last, because force is the exception (session-lifecycle.md,
// "Archiving over a queued message is refused"). "" when queue is empty:
// the archive may go ahead.
func ArchiveRefusal(sessionID int64, queue []Message) string {
	if len(queue) == 0 {
		return ""
	}
	one := len(queue) == 1
	var b strings.Builder
	fmt.Fprintf(&b, "Cannot archive session %d: %s. Archiving discards %s.\n\n",
		sessionID, plural(one, "1 queued message has not been delivered", fmt.Sprintf("%d queued messages have not been delivered", len(queue))),
		plural(one, "it", "them"))
	for i, m := range queue {
		fmt.Fprintf(&b, "  %d. %s\n", i+1, Preview(m.Content, RefusalPreviewChars))
	}
	fmt.Fprintf(&b, "\nDo not archive. If you are this session, end your turn instead — %s "+
		"as your next turn, and archiving after that succeeds because the queue is empty. "+
		"If you are archiving another session, leave it alone and let it consume what you sent it.\n\n",
		plural(one, "the queued message is delivered", "the queued messages are delivered in order, the first"))
	fmt.Fprintf(&b, "Only if you have read the %s above and are deliberately discarding %s: "+
		"re-call with \"force\": true. That is not the recommended path — %s accepted from someone who "+
		"was told %s would be delivered, and forcing throws %s away.",
		plural(one, "message", "messages"), plural(one, "it", "them"),
		plural(one, "the message was", "the messages were"), plural(one, "it", "they"), plural(one, "it", "them"))
	return b.String()
}

// RetirementClause is what the archive line adds after its actor when the
// archive retired messages: how many, and a preview of each. "" when none
// were retired.
func RetirementClause(retired []Message) string {
	if len(retired) == 0 {
		return ""
	}
	previews := make([]string, len(retired))
	for i, m := range retired {
		previews[i] = fmt.Sprintf("%q", Preview(m.Content, RetirementPreviewChars))
	}
	if len(retired) == 1 {
		return " — 1 queued message was never delivered and is now marked undelivered: " + previews[0]
	}
	return fmt.Sprintf(" — %d queued messages were never delivered and are now marked undelivered: %s",
		len(retired), strings.Join(previews, ", "))
}

// RetirementAlert is what an archive's retirements page about: the messages
// the alert names, and how many notices were retired beside them without
// paging. Exactly one combination does not page: an automated_pr_merged
// notice retired by an archive that forced past the guard — its only reader
// was shown it and acted ("The PR-merged notice does not page"). A system
// archive never consults the guard, so it is never forced and always pages.
type RetirementAlert struct {
	Page            []Message
	ExemptedNotices int
}

// AlertFor decides what the retirement of retired pages about.
func AlertFor(retired []Message, forced bool) RetirementAlert {
	var a RetirementAlert
	for _, m := range retired {
		if forced && m.Origin == OriginAutomatedPRMerged {
			a.ExemptedNotices++
			continue
		}
		a.Page = append(a.Page, m)
	}
	return a
}

// Pages says whether the alert fires at all.
func (a RetirementAlert) Pages() bool { return len(a.Page) > 0 }

// Summary is the alert's text: the archive line's clause for the paged
// messages, and beside it the count of exempted notices, so the page and
// the archive line agree on how many were retired.
func (a RetirementAlert) Summary(sessionID int64) string {
	s := fmt.Sprintf("Session %d archived", sessionID) + RetirementClause(a.Page)
	if a.ExemptedNotices > 0 {
		s += fmt.Sprintf("; %s retired alongside, not paged because the archive was forced after the guard showed %s",
			plural(a.ExemptedNotices == 1, "1 PR-merged notice was", fmt.Sprintf("%d PR-merged notices were", a.ExemptedNotices)),
			plural(a.ExemptedNotices == 1, "it", "them"))
	}
	return s
}

func plural(one bool, singular, many string) string {
	if one {
		return singular
	}
	return many
}
