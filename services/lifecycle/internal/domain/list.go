package domain

import (
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// Page sizes for lists: rules' sizes.
const (
	DefaultPerPage = rules.DefaultPerPage
	MaxPerPage     = rules.MaxPerPage
)

// ListFilter selects sessions. No statuses means every status.
type ListFilter struct {
	Statuses        []Status
	Query           string // free text over title and prompt
	AgentRoot       string
	Genesis         string
	SchedulingClass string
	Page            int // 1-based
	PerPage         int
}

// ListRequest is a list request as a caller sends it.
type ListRequest struct {
	Statuses        []string
	Query           string
	AgentRoot       string
	Genesis         string
	SchedulingClass string
	Page            int
	PerPage         int
}

// Filter validates the request and applies defaults.
func (r ListRequest) Filter() (ListFilter, error) {
	var vs validation.Violations
	f := ListFilter{
		Query:           r.Query,
		AgentRoot:       r.AgentRoot,
		Genesis:         r.Genesis,
		SchedulingClass: r.SchedulingClass,
		Page:            r.Page,
		PerPage:         r.PerPage,
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
	switch {
	case f.PerPage == 0:
		f.PerPage = DefaultPerPage
	case f.PerPage < 0 || f.PerPage > MaxPerPage:
		vs.Add("per_page", "must be between 1 and %d", MaxPerPage)
	}
	switch f.SchedulingClass {
	case "", SchedulingPriority, SchedulingSpot:
	default:
		vs.Add("scheduling_class", "%q is not a scheduling class; use %q or %q", f.SchedulingClass, SchedulingPriority, SchedulingSpot)
	}
	return f, vs.Err()
}

// Page is one page of sessions and the size of the whole result.
type Page struct {
	Sessions   []Session
	Page       int
	PerPage    int
	TotalCount int64
}

// TotalPages is how many pages the whole result spans.
func (p Page) TotalPages() int {
	if p.PerPage == 0 {
		return 0
	}
	return int((p.TotalCount + int64(p.PerPage) - 1) / int64(p.PerPage))
}
