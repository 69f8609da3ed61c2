package domain

import (
	"slices"
	"strings"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// Statuses are every status a message can have, in the order a message
// moves through them.
var Statuses = []Status{StatusPending, StatusProcessing, StatusSent, StatusUndelivered}

// ListRequest is a request for a page of a session's queue, as a caller
// sends it. The page sizes are the sessions list's (rules.PerPage).
type ListRequest struct {
	Statuses []string
	Page     int
	PerPage  int
}

// ListFilter is a validated ListRequest; no statuses means every status.
type ListFilter struct {
	Statuses []Status
	Page     int // 1-based
	PerPage  int
}

// Filter validates r and applies the defaults: page 1, rules' page size.
func (r ListRequest) Filter() (ListFilter, error) {
	var vs validation.Violations
	f := ListFilter{Page: r.Page, PerPage: rules.PerPage(r.PerPage)}
	for _, w := range r.Statuses {
		s := Status(w)
		if !slices.Contains(Statuses, s) {
			words := make([]string, len(Statuses))
			for i, s := range Statuses {
				words[i] = string(s)
			}
			vs.Add("status", "unknown status %q; use one of %s", w, strings.Join(words, ", "))
			continue
		}
		if !slices.Contains(f.Statuses, s) {
			f.Statuses = append(f.Statuses, s)
		}
	}
	switch {
	case f.Page == 0:
		f.Page = 1
	case f.Page < 0:
		vs.Add("page", "must be 1 or more")
	}
	return f, vs.Err()
}

// Offset is how many messages come before the filter's page.
func (f ListFilter) Offset() int { return (f.Page - 1) * f.PerPage }

// Page is one page of a session's queue and the size of the whole result.
type Page struct {
	Messages   []Message
	Page       int
	PerPage    int
	TotalCount int64
}

// TotalPages is how many pages the whole result spans.
func (p Page) TotalPages() int { return rules.TotalPages(p.TotalCount, p.PerPage) }

// CheckUpdate refuses an update that changes nothing (no content, no goal
// and position 0, which is what an absent position reads as: proto3 cannot
// tell them apart) or names a position no queue has. A position past the
// queue's end is the store's to refuse (Reorder), which knows the length.
func CheckUpdate(e Edit, position int) error {
	var vs validation.Violations
	switch {
	case position < 0:
		vs.Add("position", "must be 1 or more (1 is delivered first)")
	case position == 0 && e.Content == nil && e.Goal == nil:
		vs.Add("position", "must be 1 or more (1 is delivered first) when neither content nor goal is changed; the update changes nothing")
	}
	return vs.Err()
}
