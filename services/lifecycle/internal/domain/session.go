// Package domain holds the lifecycle context's rules: sessions, their states
// and what a valid request looks like. It imports only the standard library,
// the platform's validation error and the published rules its machine and
// limits are built from (services/lifecycle/rules).
package domain

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// Genesis values. A session inherits its parent's genesis; a session with no
// parent started through the API has GenesisAPI, one a Slack message
// started GenesisSlack.
const (
	GenesisAPI   = "api"
	GenesisSlack = "slack"
)

// Scheduling classes: rules' classes.
const (
	SchedulingPriority = rules.SchedulingPriority
	SchedulingSpot     = rules.SchedulingSpot
)

// Session is the lifecycle aggregate.
type Session struct {
	ID              int64
	Slug            string
	Status          Status
	Title           string
	Prompt          string
	Goal            string
	Notes           string // free-form, the agent's <session-notes>; edited, never set at creation
	AgentRoot       string
	AgentRuntime    string
	GitRoot         string
	Branch          string
	Subdirectory    string
	ParentSessionID *int64
	Genesis         string
	SchedulingClass string
	Precedence      int32
	CustomMetadata  map[string]any
	CreatedAt       time.Time
	UpdatedAt       time.Time

	// Lifecycle bookkeeping.
	Markers      Markers
	ElapsedSince *time.Time // the elapsed-time clock, reset by start and resume
	ArchivedAt   *time.Time
	ArchivedFrom *Status    // the state archive left, for an undo (a restore always lands in needs_input)
	TrashAfter   *time.Time // restorable until then
	// Version increases with every committed change, so a reader can tell
	// whether the session it holds is still current.
	Version int64

	HeartbeatEnabled         bool
	HeartbeatIntervalSeconds int32

	// MCPToolGroups are the MCP tool groups the session was created with:
	// they decide the scopes of its credentials (rules.ToolGroupScopes).
	// Fixed at creation.
	MCPToolGroups []string

	// PushNotifications is the operator's needs-input push opt-in: whether
	// a pause is pushed (debounced) to the notification sinks. The failure
	// push ignores it.
	PushNotifications bool

	// CategoryID is the category the session is filed under; nil:
	// uncategorized. Starred puts it in the dashboard's Starred group.
	CategoryID *int64
	Starred    bool
	// PullRequests are the GitHub pull requests the session's agent opened,
	// oldest first (LC-33): the spec's github_pull_request_urls. Read
	// with the session; written only by RecordPullRequest and the watcher.
	PullRequests []PullRequest
}

// FirstTurnPending reports whether the session was created with a prompt
// whose first turn has not started: its next turn is that one (the start
// transition), and nothing may take its place.
func (s Session) FirstTurnPending() bool {
	return s.Status == StatusWaiting && s.ElapsedSince == nil && !validation.Blank(s.Prompt)
}

// NewSession is what a caller asks for when creating a session.
type NewSession struct {
	Prompt          string
	GitRoot         string
	Branch          string
	Subdirectory    string
	Title           string
	Slug            string
	Goal            string
	AgentRoot       string
	AgentRuntime    string
	ParentSessionID *int64
	SchedulingClass string
	Precedence      int32
	CustomMetadata  map[string]any
	// MCPToolGroups: none means rules.DefaultToolGroups.
	MCPToolGroups []string
	// PushNotifications: nil means rules.DefaultPushNotifications (not
	// pushed: an operator opts a session in).
	PushNotifications *bool
	// BoundaryGenesis is the genesis a verified human boundary gives a
	// session with no parent (GenesisSlack); never a request field, so no
	// caller can claim one. "" means GenesisAPI.
	BoundaryGenesis string
}

var slugPattern = regexp.MustCompile(rules.SlugPattern)

// Validate checks everything that can be checked without storage and
// reports every problem at once. prompt is optional: a session can be
// created to clone its repository and wait for its first message.
func (n NewSession) Validate() error {
	var vs validation.Violations
	checkPrompt(&vs, "prompt", n.Prompt, false)
	if textProblem(n.GitRoot) == "" && strings.TrimSpace(n.GitRoot) == "" {
		vs.Add("git_root", "is required and not blank: the repository the session's clone is made from")
	} else {
		checkSource(&vs, "git_root", n.GitRoot, MaxGitRootChars, rules.GitRootProblem)
	}
	checkSource(&vs, "branch", n.Branch, MaxBranchChars, rules.BranchProblem)
	checkSource(&vs, "subdirectory", n.Subdirectory, MaxSubdirectoryChars, rules.SubdirectoryProblem)
	checkText(&vs, "title", n.Title, MaxTitleChars, "")
	if n.Slug != "" {
		if err := ValidateSlug(n.Slug); err != nil {
			vs.Add("slug", "%s", err)
		}
	}
	checkText(&vs, "goal", n.Goal, MaxGoalChars, "")
	checkText(&vs, "agent_root", n.AgentRoot, MaxAgentRootChars, "")
	checkSource(&vs, "agent_runtime", n.AgentRuntime, MaxAgentRuntimeChars, rules.AgentRuntimeProblem)
	if n.ParentSessionID != nil && *n.ParentSessionID <= 0 {
		vs.Add("parent_session_id", "must be the positive id of an existing session, or omitted")
	}
	checkSchedulingClass(&vs, n.SchedulingClass, true)
	checkMetadata(&vs, n.CustomMetadata)
	ValidateToolGroups(&vs, n.MCPToolGroups)
	return vs.Err()
}

// checkSource records a text problem of one of the fields a session's clone
// and agent are made from, else a break of its shape rule (rules'): refused
// at create, before anything runs, rather than failing the session later.
func checkSource(vs *validation.Violations, field, v string, limit int, problem func(string) string) {
	if textProblem(v) != "" || utf8.RuneCountInString(v) > limit {
		checkText(vs, field, v, limit, "")
		return
	}
	if p := problem(v); p != "" {
		vs.Add(field, "%s", p)
	}
}

// checkSchedulingClass records a scheduling class that is not one; empty is
// one when optional.
func checkSchedulingClass(vs *validation.Violations, class string, optional bool) {
	switch class {
	case SchedulingPriority, SchedulingSpot:
	case "":
		if optional {
			return
		}
		fallthrough
	default:
		vs.Add("scheduling_class", "%s is not a scheduling class; use %q or %q", strconv.QuoteToASCII(cut(class, 40)), SchedulingPriority, SchedulingSpot)
	}
}

// ValidateSlug checks a slug's shape. A slug is never all digits, so a
// reference is unambiguously an id or a slug.
func ValidateSlug(s string) error {
	switch {
	case len(s) > MaxSlugChars:
		return fmt.Errorf("is longer than %d characters", MaxSlugChars)
	case !slugPattern.MatchString(s):
		return fmt.Errorf("%s must be lowercase letters, digits and dashes, starting with a letter or digit", strconv.QuoteToASCII(s))
	case isDigits(s):
		return fmt.Errorf("%q is all digits and would read as an id; add a letter", s)
	}
	return nil
}

// Build makes the session to insert from a validated request, its parent
// (nil when it has none) and the current time. Genesis is never the
// caller's: it is inherited down the spawn edge, else "api". A scheduling
// class not given is inherited the same way, else priority.
func (n NewSession) Build(parent *Session, now time.Time) (Session, error) {
	if n.ParentSessionID != nil && (parent == nil || parent.ID != *n.ParentSessionID) {
		return Session{}, &validation.Error{Violations: []validation.FieldViolation{{
			Field:  "parent_session_id",
			Reason: fmt.Sprintf("no session %d exists; pass the id of an existing session or omit it", *n.ParentSessionID),
		}}}
	}
	genesis, class := GenesisAPI, SchedulingPriority
	if n.BoundaryGenesis != "" {
		genesis = n.BoundaryGenesis
	}
	if parent != nil {
		genesis, class = parent.Genesis, parent.SchedulingClass
	}
	if n.SchedulingClass != "" {
		class = n.SchedulingClass
	}
	md := n.CustomMetadata
	if md == nil {
		md = map[string]any{}
	}
	return Session{
		Slug:            n.Slug,
		Status:          StatusWaiting,
		Title:           n.Title,
		Prompt:          n.Prompt,
		Goal:            n.Goal,
		AgentRoot:       n.AgentRoot,
		AgentRuntime:    n.AgentRuntime,
		GitRoot:         n.GitRoot,
		Branch:          n.Branch,
		Subdirectory:    n.Subdirectory,
		ParentSessionID: n.ParentSessionID,
		Genesis:         genesis,
		SchedulingClass: class,
		Precedence:      n.Precedence,
		CustomMetadata:  md,
		CreatedAt:       now,
		UpdatedAt:       now,
		Version:         1,

		HeartbeatIntervalSeconds: DefaultHeartbeatSeconds,
		MCPToolGroups:            NormalizeToolGroups(n.MCPToolGroups),
		PushNotifications:        n.pushNotifications(),
	}, nil
}

// pushNotifications is the opt-in the creator asked for, else the default.
func (n NewSession) pushNotifications() bool {
	if n.PushNotifications == nil {
		return rules.DefaultPushNotifications
	}
	return *n.PushNotifications
}

// SessionRef addresses a session by numeric id or by slug.
type SessionRef struct {
	ID   int64
	Slug string
}

// ParseSessionRef reads "123" as an id and anything else as a slug.
func ParseSessionRef(s string) (SessionRef, error) {
	if s == "" {
		return SessionRef{}, &validation.Error{Violations: []validation.FieldViolation{{Field: "session_id", Reason: "is required: a numeric id or a slug"}}}
	}
	if p := textProblem(s); p != "" {
		return SessionRef{}, validation.Invalid("session_id", "%s: give a numeric id or a slug", p)
	}
	if isDigits(s) {
		id, err := strconv.ParseInt(s, 10, 64)
		if err != nil || id <= 0 {
			return SessionRef{}, &validation.Error{Violations: []validation.FieldViolation{{Field: "session_id", Reason: fmt.Sprintf("%q is not a valid id", s)}}}
		}
		return SessionRef{ID: id}, nil
	}
	return SessionRef{Slug: s}, nil
}

func (r SessionRef) String() string {
	if r.Slug != "" {
		return strconv.Quote(r.Slug)
	}
	return "#" + strconv.FormatInt(r.ID, 10)
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}
