// Package validation is the error a service returns for a request it refuses
// field by field. It uses only the standard library, so domain packages may
// depend on it; grpcstatus turns it into an InvalidArgument status.
package validation

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// FieldViolation is one problem with one request field.
type FieldViolation struct {
	Field  string
	Reason string // what was wrong and what to do
}

// Error lists every problem found in a request, so a caller fixes them in
// one round trip.
type Error struct {
	Violations []FieldViolation
}

// Error joins the violations as "field: reason; field: reason".
func (e *Error) Error() string {
	parts := make([]string, len(e.Violations))
	for i, v := range e.Violations {
		parts[i] = v.Field + ": " + v.Reason
	}
	return strings.Join(parts, "; ")
}

// Invalid is the Error for a request refused on one field, for checks that
// stop at the first problem; the reason is fmt.Sprintf(format, args...).
func Invalid(field, format string, args ...any) *Error {
	return &Error{Violations: []FieldViolation{{Field: field, Reason: fmt.Sprintf(format, args...)}}}
}

// Nested returns e with every field moved under parent: a check of one part
// of a request names its fields from that part ("id"), and the caller that
// checked the whole request says where the part sits ("event.created.session"
// gives "event.created.session.id").
func (e *Error) Nested(parent string) *Error {
	out := &Error{Violations: make([]FieldViolation, len(e.Violations))}
	for i, v := range e.Violations {
		out.Violations[i] = FieldViolation{Field: parent + "." + v.Field, Reason: v.Reason}
	}
	return out
}

// Violations accumulates FieldViolations while a request is checked.
type Violations []FieldViolation

// Add records that field is wrong; the reason is fmt.Sprintf(format, args...).
func (vs *Violations) Add(field, format string, args ...any) {
	*vs = append(*vs, FieldViolation{Field: field, Reason: fmt.Sprintf(format, args...)})
}

// Err is nil when nothing was added, else an *Error listing every violation.
func (vs Violations) Err() error {
	if len(vs) == 0 {
		return nil
	}
	return &Error{Violations: vs}
}

// TextProblem says what makes v unstorable text, or "": it must be valid
// UTF-8 (the wire and the database speak it) and hold no NUL, which
// Postgres cannot store in text or JSON.
func TextProblem(v string) string {
	switch {
	case !utf8.ValidString(v):
		return "is not valid UTF-8; send text"
	case strings.IndexByte(v, 0) >= 0:
		return `contains a NUL character (\u0000), which cannot be stored; remove it`
	}
	return ""
}

// Blank says whether v carries no content: it is empty or holds nothing
// but white space (Unicode White_Space: spaces, tabs, line breaks, no-break
// spaces). This is the one rule for "blank after trimming": a field that
// must carry content (a turn's prompt, a queued message) refuses blank text
// through Content, and whatever meets stored blank text asks Blank.
func Blank(v string) bool { return strings.TrimSpace(v) == "" }

// Content records what is wrong with a field that must carry content when
// it is given: blank text (Blank) is refused, then Text's problems. When
// required, "" is refused too ("is required"); otherwise "" means the field
// was left out. why, when set, says what the content is for ("it is the
// turn's prompt"), and hint what to do about a too long one (as in Text).
func (vs *Violations) Content(field, v string, limit int, required bool, why, hint string) {
	if TextProblem(v) != "" || !Blank(v) {
		vs.Text(field, v, limit, hint)
		return
	}
	if why != "" {
		why = ": " + why
	}
	switch {
	case v == "" && required:
		vs.Add(field, "is required%s", why)
	case v == "":
	case required:
		vs.Add(field, "is blank (only white space)%s; send text", why)
	default:
		vs.Add(field, "is blank (only white space)%s; send text, or leave it out", why)
	}
}

// Text records what is wrong with a string field: unstorable text
// (TextProblem), or more than limit characters (hint, when set, says what
// to do then). Every context checks its text fields with it, so the rule
// and its words are the same everywhere.
func (vs *Violations) Text(field, v string, limit int, hint string) {
	if p := TextProblem(v); p != "" {
		vs.Add(field, "%s", p)
		return
	}
	if len(v) <= limit || utf8.RuneCountInString(v) <= limit { // a rune is at least a byte
		return
	}
	reason := fmt.Sprintf("is longer than %d characters", limit)
	if hint != "" {
		reason += "; " + hint
	}
	vs.Add(field, "%s", reason)
}
