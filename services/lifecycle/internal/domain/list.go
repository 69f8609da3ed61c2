package domain

import (
	"slices"
	"strings"
	"unicode"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// Page sizes for lists: rules' sizes.
const (
	DefaultPerPage = rules.DefaultPerPage
	MaxPerPage     = rules.MaxPerPage
	// MaxTranscriptQueryChars bounds the transcript search's words (the
	// runner's SearchTranscripts takes no more).
	MaxTranscriptQueryChars = 200
	// MaxTranscriptMatches is how many matching sessions, the most recently
	// matching first, the transcript search narrows to: a bound on one
	// search's work, said in the API.
	MaxTranscriptMatches = 1000
)

// ListFilter selects sessions. No statuses means every status.
type ListFilter struct {
	Statuses        []Status
	Query           string // free text over title, prompt, slug and notes
	AgentRoot       string
	Genesis         string
	SchedulingClass string
	// Starred keeps only starred (true) or unstarred (false) sessions.
	Starred *bool
	// CategoryID keeps one category's sessions; 0 the uncategorized.
	CategoryID *int64
	// SkipFrozenCategories leaves out the sessions in frozen categories.
	SkipFrozenCategories bool
	// Transcript keeps the sessions whose transcript holds these words as
	// a phrase; the use case asks the runner and narrows to SessionIDs.
	Transcript string
	// SessionIDs, when not nil, keeps only these sessions (the transcript
	// search's answer; empty keeps none).
	SessionIDs []int64
	Page       int // 1-based
	PerPage    int
}

// ListRequest is a list request as a caller sends it.
type ListRequest struct {
	Statuses             []string
	Query                string
	AgentRoot            string
	Genesis              string
	SchedulingClass      string
	Starred              *bool
	CategoryID           *int64
	SkipFrozenCategories bool
	Transcript           string
	Page                 int
	PerPage              int
	// ShowArchived lists the trash too when no status is named; without it
	// (and without archived among Statuses) archived sessions are left out,
	// as the original's list leaves them out.
	ShowArchived bool
}

// Filter validates the request and applies defaults.
func (r ListRequest) Filter() (ListFilter, error) {
	var vs validation.Violations
	f := ListFilter{
		Query:           r.Query,
		AgentRoot:       r.AgentRoot,
		Genesis:         r.Genesis,
		SchedulingClass: r.SchedulingClass,
		Starred:         r.Starred,
		CategoryID:      r.CategoryID,
		Page:            r.Page,
		PerPage:         r.PerPage,

		SkipFrozenCategories: r.SkipFrozenCategories,
		Transcript:           strings.TrimSpace(r.Transcript),
	}
	if c := r.CategoryID; c != nil && *c < 0 {
		vs.Add("category_id", "is %d; use a category's id, or 0 for the uncategorized sessions", *c)
	}
	seen := map[Status]bool{}
	for _, w := range r.Statuses {
		s, err := ParseStatus(w)
		if err != nil {
			vs.Add("status", "%s", err)
			continue
		}
		if !seen[s] {
			seen[s] = true
			f.Statuses = append(f.Statuses, s)
		}
	}
	switch {
	case f.Page == 0:
		f.Page = 1
	case f.Page < 0:
		vs.Add("page", "must be 1 or more")
	}
	f.PerPage = rules.PerPage(f.PerPage)
	if len(f.Statuses) == 0 && !r.ShowArchived {
		f.Statuses = slices.DeleteFunc(slices.Clone(Statuses), func(s Status) bool { return s == StatusArchived })
	}
	checkSchedulingClass(&vs, f.SchedulingClass, true)
	checkText(&vs, "q", f.Query, MaxQueryChars, "")
	checkText(&vs, "agent_root", f.AgentRoot, MaxAgentRootChars, "")
	checkText(&vs, "genesis", f.Genesis, MaxGenesisChars, "")
	checkText(&vs, "transcript", f.Transcript, MaxTranscriptQueryChars, "")
	if f.Transcript != "" && strings.IndexFunc(f.Transcript, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) < 0 {
		vs.Add("transcript", "holds no word to search the transcripts for; give at least one, or leave it out")
	}
	return f, vs.Err()
}

// Summary is s as a list shows it: its long free text (prompt, goal, notes,
// failure_reason) cut to previews and no custom_metadata, so that a page of
// the largest valid sessions stays a few megabytes. Reading the session by
// id gives everything whole.
func (s Session) Summary() Session {
	s.Prompt, s.Goal, s.Notes = Preview(s.Prompt), Preview(s.Goal), Preview(s.Notes)
	s.Markers.FailureReason = Preview(s.Markers.FailureReason)
	s.CustomMetadata = nil
	return s
}

// Page is one page of sessions and the size of the whole result.
type Page struct {
	Sessions   []Session
	Page       int
	PerPage    int
	TotalCount int64
}

// TotalPages is how many pages the whole result spans.
func (p Page) TotalPages() int { return rules.TotalPages(p.TotalCount, p.PerPage) }
