package domain

import (
	"fmt"
)

// Previews: the refusal shows enough of each message for the caller to
// decide whether to discard it (at most 160 characters, as the original's);
// the archive line only names what was lost.
const (
	RefusalPreviewChars    = 160
	RetirementPreviewChars = 120
)

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
