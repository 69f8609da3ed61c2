package rules

// Limits on what a caller may send. Lengths are in characters (runes);
// custom_metadata is measured in bytes of its JSON encoding and in levels of
// nesting. Every string a caller sends must also be valid UTF-8 without NUL
// characters (U+0000), which Postgres cannot store. Every string field has a
// limit, so that no session is too large to read back or to list.
const (
	MaxPromptChars        = 500_000
	MaxGoalChars          = 50_000
	MaxNotesChars         = 50_000
	MaxTitleChars         = 500
	MaxSlugChars          = 100
	MaxGitRootChars       = 2_048 // a URL or a path
	MaxBranchChars        = 255
	MaxSubdirectoryChars  = 1_024
	MaxAgentRootChars     = 1_024
	MaxAgentRuntimeChars  = 100
	MaxFailureReasonChars = 10_000
	MaxPausedByChars      = 100
	// MaxAuthOutageReasonChars bounds auth_outage_reason: a sentence naming
	// the login pool, the wall and its reset.
	MaxAuthOutageReasonChars = 1_000
	MaxRunningJobIDChars     = 255
	// A delivery's id ("queue/message/<id>") and what the timeline calls
	// what it delivered ("queued message #12"): DeliverTurn, internal.
	MaxDeliveryIDChars   = 255
	MaxDeliveryWhatChars = 200
	// A transition's idempotency key (TransitionSession, internal): the
	// runner's name one step of one workflow run.
	MaxIdempotencyKeyChars = 255
	MaxMetadataBytes       = 256 << 10
	// MaxMetadataDepth bounds how deeply custom_metadata nests: the object
	// itself is level 1, and each object or array inside another adds one.
	// Deeper values are refused whole, as are bigger ones: one row must
	// never be too deep for a reader (a protobuf decoder stops at 10,000
	// message levels, and each JSON level costs about three).
	MaxMetadataDepth = 32
)

// Limits on a list request's filters, which are matched against the fields
// above.
const (
	MaxQueryChars   = 1_000
	MaxGenesisChars = 100
)

// ListPreviewChars is how much of each long free-text field (prompt, goal,
// notes, failure_reason) a listed session carries; a longer one is cut and
// ends in PreviewEllipsis. A list never carries custom_metadata. Reading the
// session by its id gives everything whole. This keeps a page of the largest
// valid sessions small: whole, one page of 100 could be hundreds of
// megabytes.
const (
	ListPreviewChars = 200
	PreviewEllipsis  = "…"
)

// SlugPattern is a slug's shape. A slug is also never all digits, so that a
// reference reads unambiguously as an id or a slug.
const SlugPattern = `^[a-z0-9][a-z0-9-]*$`

// SlugShape says what SlugPattern and the all-digits rule allow, in words.
const SlugShape = "lowercase letters, digits and dashes, not all digits"

// Heartbeat interval bounds and the interval a new session gets, in
// seconds.
const (
	MinHeartbeatSeconds     = 30
	MaxHeartbeatSeconds     = 86_400
	DefaultHeartbeatSeconds = 60
)

// MaxCategoryNameChars bounds a category's name: a grid's heading.
const MaxCategoryNameChars = 80

// InferredTitleChars is the longest title inference gives a session (a
// card's heading; a human's title may be longer, up to MaxTitleChars).
const InferredTitleChars = 80

// DefaultPushNotifications is a new session's needs-input push opt-in when
// its creator says nothing: off, as in the original — an operator opts a
// session in (the failure push ignores it either way).
const DefaultPushNotifications = false

// MCPFailureMetadataKeys are the custom_metadata keys the MCP-failure check
// leaves on a session (the original's): stale once the session resumes, so
// a resume (and the unarchive's restoration) removes them, and no other key.
func MCPFailureMetadataKeys() []string {
	return []string{"should_fail_session", "mcp_connection_checked", "mcp_failed_servers", "mcp_failure_reason", "mcp_servers_status"}
}

// Page sizes for lists; pages are 1-based.
const (
	DefaultPerPage = 25
	MaxPerPage     = 100
)

// PerPage is the page size a list answers for the one requested: the
// default when none is given (0), otherwise the request clamped to
// 1..MaxPerPage, as the original system did, rather than refused.
func PerPage(requested int) int {
	if requested == 0 {
		return DefaultPerPage
	}
	return min(max(requested, 1), MaxPerPage)
}

// TotalPages is how many pages of perPage a list of total spans (0 for no
// page size).
func TotalPages(total int64, perPage int) int {
	if perPage <= 0 {
		return 0
	}
	return int((total + int64(perPage) - 1) / int64(perPage))
}

// Scheduling classes; a session created without one inherits its parent's,
// and one without a parent is priority.
const (
	SchedulingPriority = "priority"
	SchedulingSpot     = "spot"
)

// SchedulingClasses are the scheduling classes, the default first.
func SchedulingClasses() []string { return []string{SchedulingPriority, SchedulingSpot} }

// StatusSummaryForkKey marks, in custom_metadata, Zimmer's own throwaway
// status-summary fork: its pause or failure is harvested, not announced,
// and its prompt carries no inherited goal (the runner's prompt builder).
const StatusSummaryForkKey = "status_summary_fork"

// A fork's custom_metadata also names the session it summarises and the
// position of that session's transcript its prompt covers. Lifecycle alone
// writes the three keys, when it creates the fork.
const (
	StatusSummarySourceKey = "status_summary_source_id"
	StatusSummaryCoversKey = "status_summary_transcript_position"
)

// StatusSummaryKeyPrefix starts every custom_metadata key Zimmer reserves
// for its status-summary forks: a caller's custom_metadata may not use it,
// so no caller can pass a session off as a fork (whose harvest writes on
// the session it names) or strip a fork of its marker.
const StatusSummaryKeyPrefix = "status_summary_"

// MaxStatusSummaryChars bounds a status summary's text: what a fork wrote
// beyond it is cut, and the cut says so.
const MaxStatusSummaryChars = 4000
