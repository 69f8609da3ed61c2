package mcp

import (
	"fmt"
	"strings"
)

// The outcomes that head a tool's answer ("## Session archived"): the MCP
// facade's render table, one line for each thing a call can come to, in
// the original's shape (issue 23 rule 21). Tools and their tests read
// these constants; a new tool or outcome adds its line here.
const (
	OutcomeSessionStarted      = "Session started"
	OutcomeSessions            = "Sessions"
	OutcomeFollowUpDelivered   = "Follow-up delivered"
	OutcomeMessageQueued       = "Message queued"
	OutcomeSessionPaused       = "Session paused"
	OutcomeSessionAsleep       = "Session asleep"
	OutcomeSleepDeferred       = "Sleep deferred"
	OutcomeSessionPausedUntil  = "Session paused until a time"
	OutcomeSessionArchived     = "Session archived"
	OutcomeBulkArchive         = "Bulk archive"
	OutcomeSessionUnarchived   = "Session unarchived"
	OutcomeSessionRestarted    = "Session restarted"
	OutcomeSessionRefreshed    = "Session refreshed"
	OutcomeSessionFailed       = "Session failed"
	OutcomeTitleUpdated        = "Session title updated"
	OutcomeNotesUpdated        = "Session notes updated"
	OutcomeHeartbeatSet        = "Heartbeat set"
	OutcomePushSet             = "Push notifications set"
	OutcomeTransitionApplied   = "Transition applied"
	OutcomeQueuedMessages      = "Queued messages"
	OutcomeQueuedMessage       = "Queued message"
	OutcomeMessageUpdated      = "Message updated"
	OutcomeMessageMoved        = "Message moved"
	OutcomeMessageDeleted      = "Message deleted"
	OutcomeMessageSent         = "Message sent"
	OutcomeMessageFirstInLine  = "Message first in line"
	OutcomeTurnInterrupted     = "Turn interrupted"
	OutcomeElicitationAnswered = "Elicitation answered"
	OutcomeWakeUpScheduled     = "Wake-up scheduled"
	OutcomeWatcherArmed        = "Watcher armed"
	OutcomeArmedTriggers       = "Armed triggers"
	OutcomeTriggerCancelled    = "Trigger cancelled"
	OutcomeNotifications       = "Notifications"
	OutcomeNotificationRead    = "Notification read"
	OutcomeNotificationGone    = "Notification dismissed"
	OutcomeNotificationsRead   = "Notifications read"
	OutcomePushSent            = "Push notification sent"
	OutcomeAlerts              = "Alerts"
	OutcomeSlackTriggers       = "Slack triggers"
	OutcomeSlackTriggerCreated = "Slack trigger created"
	OutcomeSlackTriggerDeleted = "Slack trigger deleted"
	OutcomeSessionStarred      = "Session starred"
	OutcomeSessionUnstarred    = "Session unstarred"
	OutcomeCategorySet         = "Session category set"
	OutcomeCategories          = "Categories"
	OutcomeCategoryCreated     = "Category created"
	OutcomeCategoryUpdated     = "Category updated"
	OutcomeCategoryDeleted     = "Category deleted"
	OutcomeSpotQueued          = "Session in the spot queue"
)

// answer is a tool's result in the original's markdown shape: a "##
// <outcome>" heading, then one "- **field:** value" line per field, then
// what else it says (sentences, a list). jsonResult puts the JSON after
// it. A field is named as the JSON below names its value, so a reader maps
// one to the other.
type answer struct {
	outcome string
	fields  []answerField
	text    string
}

type answerField struct{ name, value string }

// outcome starts an answer headed o.
func outcome(o string) answer { return answer{outcome: o} }

// field adds a field; an empty value is left out.
func (a answer) field(name string, value any) answer {
	if v := fmt.Sprint(value); v != "" {
		a.fields = append(a.fields, answerField{name, v})
	}
	return a
}

// id adds a field holding a numeric id, left out when zero.
func (a answer) id(name string, id int64) answer {
	if id == 0 {
		return a
	}
	return a.field(name, id)
}

// say adds text after the fields, on its own line(s).
func (a answer) say(text string) answer {
	if text = strings.TrimSpace(text); text != "" {
		if a.text != "" {
			a.text += "\n"
		}
		a.text += text
	}
	return a
}

// markdown is the answer as the original renders it.
func (a answer) markdown() string {
	var b strings.Builder
	b.WriteString("## " + a.outcome + "\n")
	if len(a.fields) > 0 {
		b.WriteString("\n")
	}
	for _, f := range a.fields {
		fmt.Fprintf(&b, "- **%s:** %s\n", f.name, oneLine(f.value))
	}
	if a.text != "" {
		b.WriteString("\n" + a.text + "\n")
	}
	return b.String()
}
