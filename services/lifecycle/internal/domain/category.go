package domain

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// MaxCategoryNameChars bounds a category's name: rules' limit.
const MaxCategoryNameChars = rules.MaxCategoryNameChars

// Category is one of the deployment's categories: a grid on the dashboard,
// and a choice for a session's inferred category. Positions are dense and
// 1-based; a frozen (parked) category's sessions are left out of "refresh
// all" (session-lifecycle.md, "Manual refresh").
type Category struct {
	ID        int64
	Name      string
	Position  int32
	Frozen    bool
	CreatedAt time.Time
	UpdatedAt time.Time
}

// NewCategory is what a caller asks for when creating a category.
type NewCategory struct {
	Name string
	// Position: nil (or past the end) puts it last.
	Position *int32
	Frozen   bool
}

// Validate checks the request and reports every problem at once.
func (n NewCategory) Validate() error {
	var vs validation.Violations
	checkCategoryName(&vs, n.Name)
	checkPosition(&vs, n.Position)
	return vs.Err()
}

// CategoryPatch changes a category; nil keeps a field.
type CategoryPatch struct {
	Name     *string
	Position *int32
	Frozen   *bool
}

// Validate checks the patch and reports every problem at once.
func (p CategoryPatch) Validate() error {
	var vs validation.Violations
	if p.Name != nil {
		checkCategoryName(&vs, *p.Name)
	}
	checkPosition(&vs, p.Position)
	if p.Name == nil && p.Position == nil && p.Frozen == nil {
		vs.Add("body", "changes nothing; send at least one of name, position, frozen")
	}
	return vs.Err()
}

func checkCategoryName(vs *validation.Violations, name string) {
	if strings.TrimSpace(name) == "" && textProblem(name) == "" {
		vs.Add("name", "is required and not blank: the heading of the category's grid")
		return
	}
	checkText(vs, "name", name, MaxCategoryNameChars, "a category's name is a short heading")
	if strings.ContainsAny(name, "\r\n\t") {
		vs.Add("name", "must be one line, without tabs")
	}
}

func checkPosition(vs *validation.Violations, pos *int32) {
	if pos != nil && *pos < 1 {
		vs.Add("position", "is %d; positions start at 1 (past the end means last)", *pos)
	}
}

// CategoryName is a name as it is stored: without surrounding spaces.
func CategoryName(name string) string { return strings.TrimSpace(name) }

// NameTakenError refuses a name another category has: a validation
// failure (the caller picks another), so every surface answers it as one.
func NameTakenError(name string) error {
	return validation.Invalid("name", "a category named %s exists already (names are unique without regard to case); choose another name or rename that one",
		strconv.QuoteToASCII(cut(name, 80)))
}

// CategoryNotFoundError says no category has the id.
type CategoryNotFoundError struct{ ID int64 }

func (e *CategoryNotFoundError) Error() string {
	return fmt.Sprintf("category %d not found; list the categories to see their ids", e.ID)
}

func (e *CategoryNotFoundError) Unwrap() error { return ErrNotFound }

// Place returns the categories in order with the one whose id is moved put
// at position pos (1-based; past the end means last) and every position
// renumbered 1..n: the one rule for create, reorder and delete (a deleted
// category is left out before renumbering). The caller's slice is not
// changed.
func Place(ordered []Category, id int64, pos int32) []Category {
	out := slices.Clone(ordered)
	i := slices.IndexFunc(out, func(c Category) bool { return c.ID == id })
	if i >= 0 {
		moved := out[i]
		out = slices.Delete(out, i, i+1)
		at := int(pos) - 1
		if at < 0 || at > len(out) {
			at = len(out)
		}
		out = slices.Insert(out, at, moved)
	}
	return Renumber(out)
}

// Renumber gives the categories positions 1..n in their order.
func Renumber(ordered []Category) []Category {
	out := slices.Clone(ordered)
	for i := range out {
		out[i].Position = int32(i + 1)
	}
	return out
}

// InferencePending reports whether a paused session still waits for its
// inferred title or category (session-lifecycle.md, the pause hook's step
// 5): either is unset. Whether there is a category to infer is known only
// with the deployment's categories (PendingInference).
func (s Session) InferencePending() bool {
	return strings.TrimSpace(s.Title) == "" || s.CategoryID == nil
}

// PendingInference says what of s is still to be inferred, given the
// categories it may be put in: the title while it is blank, the category
// while it has none and there is one to choose.
func (s Session) PendingInference(choices []Category) (title, category bool) {
	return strings.TrimSpace(s.Title) == "", s.CategoryID == nil && len(choices) > 0
}

// InferenceChoices are the categories a session's category may be
// inferred from: the ones not frozen (parking a session is a human's
// choice).
func InferenceChoices(all []Category) []Category {
	var out []Category
	for _, c := range all {
		if !c.Frozen {
			out = append(out, c)
		}
	}
	return out
}

// Inferred is what a model inferred for a session: a title ("" for none)
// and a category (nil for none).
type Inferred struct {
	Title    string
	Category *Category
}

// Validate checks the inferred title's text.
func (in Inferred) Validate() error {
	var vs validation.Violations
	checkText(&vs, "title", in.Title, MaxTitleChars, "")
	return vs.Err()
}

// Apply sets what was inferred, each only while still unset: a title or a
// category someone set — before the model was asked, or while it thought —
// is never overwritten. It returns the session, which were set, and the
// timeline note saying so, naming the principal by (empty when nothing
// was).
func (in Inferred) Apply(s Session, now time.Time, by string) (next Session, titleSet, categorySet bool, note TimelineEntry) {
	var said []string
	if t := strings.TrimSpace(in.Title); t != "" && strings.TrimSpace(s.Title) == "" {
		s.Title, titleSet = t, true
		said = append(said, "title "+strconv.Quote(t))
	}
	if in.Category != nil && s.CategoryID == nil {
		id := in.Category.ID
		s.CategoryID, categorySet = &id, true
		said = append(said, "category "+strconv.Quote(in.Category.Name))
	}
	if titleSet || categorySet {
		s.UpdatedAt = now
		note = TimelineEntry{Kind: TimelineNote, Message: Attributed("[Inference] set the "+strings.Join(said, " and the "), by)}
	}
	return s, titleSet, categorySet, note
}
