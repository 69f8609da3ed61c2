package domain

import "fmt"

// Lineage's words where the spec quotes them (hierarchy-and-human-messages.md),
// each written once: the prompt blocks, get_session's and
// get_session_provenance's sections and the REST labels all read these,
// and so do the tests.

// TruncationReason is the sentence every surface shows when a walk hit
// MaxDepth or MaxNodes (the spec's amber note).
var TruncationReason = fmt.Sprintf("Showing at most %d sessions, %d levels from the highest ancestor reached. This tree is larger.",
	MaxNodes, MaxDepth)

// CurrentMarker ends the line of the session the hierarchy was asked about.
const CurrentMarker = " ← this session"

// The headings of the sections get_session and get_session_provenance
// return ("### Session Hierarchy", "### Human Messages", "### People").
const (
	SectionHierarchy     = "### Session Hierarchy"
	SectionHumanMessages = "### Human Messages"
	SectionPeople        = "### People"
)

// The counts every reading states, both always: here, then elsewhere (a
// floor after a truncated walk).
const (
	CountsLine      = "Authored in this session: %d. Elsewhere in the hierarchy: %d."
	CountsFloorLine = "Authored in this session: %d. Elsewhere in the hierarchy: at least %d " +
		"(the hierarchy walk was truncated, so this is a floor, not a total)."
)

// A human message's channel as a reader sees it (its channel_label).
const (
	LabelWebUI = "Zimmer web UI"
	LabelSlack = "Slack"
)
