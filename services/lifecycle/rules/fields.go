package rules

// Limits on what a caller may send. Lengths are in characters (runes),
// custom_metadata in bytes of its JSON encoding.
const (
	MaxPromptChars   = 500_000
	MaxGoalChars     = 50_000
	MaxNotesChars    = 50_000
	MaxTitleChars    = 500
	MaxSlugChars     = 100
	MaxMetadataBytes = 256 << 10
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

// Page sizes for lists; pages are 1-based.
const (
	DefaultPerPage = 25
	MaxPerPage     = 100
)

// Scheduling classes; a session created without one is priority.
const (
	SchedulingPriority = "priority"
	SchedulingSpot     = "spot"
)

// SchedulingClasses are the scheduling classes, the default first.
func SchedulingClasses() []string { return []string{SchedulingPriority, SchedulingSpot} }
