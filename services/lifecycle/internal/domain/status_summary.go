package domain

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// StatusSummary is where a session's work stands, in a fork's words, and
// what of its transcript that covers. Lifecycle keeps it with the markers:
// nobody edits it, and it is written only by a fork's harvest.
type StatusSummary struct {
	// Text is "" while no fork has written one (Failure says why).
	Text        string
	GeneratedAt time.Time
	// TranscriptPosition is the id of the newest line of the session's
	// transcript Text covers (the runner's line ids only grow).
	TranscriptPosition int64
	ForkSessionID      int64
	// Failure is the newest fork that failed since Text was written.
	Failure *StatusSummaryFailure
}

// StatusSummaryFailure is a status-summary fork that failed.
type StatusSummaryFailure struct {
	Reason             string
	FailedAt           time.Time
	ForkSessionID      int64
	TranscriptPosition int64
}

// StatusSummaryCleanup names the system archive of a harvested fork on its
// archive line ("… by Zimmer's status-summary fork clean-up"): the spec's
// "status-summary fork cleanup", which never consults the queue's guard.
var StatusSummaryCleanup = Actor{Kind: ActorSweep, Sweep: "status-summary fork clean-up"}

// NoSummaryWritten is the failure of a fork whose turn ended without a
// summary.
const NoSummaryWritten = "the fork's turn ended without writing a summary"

// IsStatusSummaryFork reports whether s is Zimmer's own throwaway
// status-summary fork (rules.StatusSummaryForkKey).
func (s Session) IsStatusSummaryFork() bool {
	v, _ := s.CustomMetadata[StatusSummaryForkKey].(bool)
	return v
}

// StatusSummaryFork is what a fork's custom_metadata says of it: the
// session it summarises and the transcript position its prompt covers.
type StatusSummaryFork struct {
	SourceID int64
	Covers   int64
}

// ForkOf reads s's fork markers; ok is false when s is no fork or its
// markers are unreadable.
func (s Session) ForkOf() (StatusSummaryFork, bool) {
	if !s.IsStatusSummaryFork() {
		return StatusSummaryFork{}, false
	}
	source, ok1 := wholeNumber(s.CustomMetadata[rules.StatusSummarySourceKey])
	covers, ok2 := wholeNumber(s.CustomMetadata[rules.StatusSummaryCoversKey])
	if !ok1 || !ok2 || source <= 0 {
		return StatusSummaryFork{}, false
	}
	return StatusSummaryFork{SourceID: source, Covers: covers}, true
}

// wholeNumber reads a number kept in custom_metadata: an int64 as built, a
// float64 or json.Number as read back from JSON.
func wholeNumber(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case float64:
		return int64(n), float64(int64(n)) == n
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	}
	return 0, false
}

// ForkTitle is a fork's title: which session it summarises.
func ForkTitle(sourceID int64) string { return fmt.Sprintf("Status summary of session #%d", sourceID) }

// NewStatusSummaryFork is the fork of source whose one turn is prompt,
// covering source's transcript up to covers: the source's repository,
// branch, subdirectory, agent root, runtime, scheduling class and
// precedence; no goal (the spec's prepare_fork strips it, so the fork is
// never told to open its source's PR), no parent (it is nobody's child: a
// hierarchy would show it to its source's agent), only its own session's
// tools, and no push. Its markers are set after validation, which refuses
// them from every caller. A fork is never summarised.
func NewStatusSummaryFork(source Session, prompt string, covers int64) (NewSession, map[string]any, error) {
	if source.IsStatusSummaryFork() {
		return NewSession{}, nil, &PreconditionError{Reason: fmt.Sprintf(
			"session %d is itself a status-summary fork, and a fork is never summarised", source.ID)}
	}
	if source.Status == StatusArchived {
		return NewSession{}, nil, &PreconditionError{Reason: fmt.Sprintf(
			"session %d is archived; a session in the trash is not summarised", source.ID)}
	}
	var vs validation.Violations
	if validation.Blank(prompt) {
		vs.Add("prompt", "is required: what the fork is to summarise")
	}
	if covers < 0 {
		vs.Add("transcript_position", "must be the id of a transcript line (0 or more), got %d", covers)
	}
	if err := vs.Err(); err != nil {
		return NewSession{}, nil, err
	}
	push := false
	n := NewSession{
		Prompt: prompt, GitRoot: source.GitRoot, Branch: source.Branch, Subdirectory: source.Subdirectory,
		Title: ForkTitle(source.ID), AgentRoot: source.AgentRoot, AgentRuntime: source.AgentRuntime,
		SchedulingClass: source.SchedulingClass, Precedence: source.Precedence,
		MCPToolGroups: []string{rules.ToolGroupSelfSession}, PushNotifications: &push,
	}
	markers := map[string]any{
		StatusSummaryForkKey:         true,
		rules.StatusSummarySourceKey: source.ID,
		rules.StatusSummaryCoversKey: covers,
	}
	return n, markers, nil
}

// Harvest is what a fork's harvest writes on its source.
type Harvest struct {
	Source   Session
	Timeline []TimelineEntry
	// Changed is false when the source already holds this fork's outcome
	// (a harvest retried) or a newer summary: nothing is written.
	Changed bool
}

// HarvestStatusSummary records on source what fork ended with: text, its
// summary (cut to rules.MaxStatusSummaryChars), or failure, why it failed.
// A blank text is a failure (NoSummaryWritten). A summary replaces the
// source's and clears its failure; a failure keeps the summary there was
// and says why none replaced it. Each writes one timeline line on the
// source. A fork already recorded, or one covering less than the summary
// the source holds, changes nothing.
func HarvestStatusSummary(source Session, fork StatusSummaryFork, forkID int64, text, failure string, now time.Time) Harvest {
	cur := source.Markers.StatusSummary
	if cur != nil && (cur.ForkSessionID == forkID || (cur.Failure != nil && cur.Failure.ForkSessionID == forkID) ||
		(cur.Text != "" && fork.Covers < cur.TranscriptPosition)) {
		return Harvest{Source: source}
	}
	text = strings.TrimSpace(text)
	if failure == "" && text == "" {
		failure = NoSummaryWritten
	}
	next := StatusSummary{}
	if cur != nil {
		next = *cur
	}
	var line TimelineEntry
	if failure != "" {
		failure = clipRunes(strings.Join(strings.Fields(failure), " "), MaxFailureReasonChars)
		next.Failure = &StatusSummaryFailure{Reason: failure, FailedAt: now, ForkSessionID: forkID, TranscriptPosition: fork.Covers}
		kept := "no summary was written before"
		if next.Text != "" {
			kept = fmt.Sprintf("the summary of transcript line %d stands", next.TranscriptPosition)
		}
		line = TimelineEntry{Kind: TimelineWarning, Message: fmt.Sprintf(
			"[Status summary] the summary fork #%d failed, so %s: %s", forkID, kept, failure)}
	} else {
		text = clipRunes(text, rules.MaxStatusSummaryChars)
		next = StatusSummary{Text: text, GeneratedAt: now, TranscriptPosition: fork.Covers, ForkSessionID: forkID}
		line = TimelineEntry{Kind: TimelineNote, Message: fmt.Sprintf(
			"[Status summary] written by fork #%d, covering the transcript to line %d", forkID, fork.Covers)}
	}
	source.Markers.StatusSummary = &next
	return Harvest{Source: source, Timeline: []TimelineEntry{line}, Changed: true}
}
