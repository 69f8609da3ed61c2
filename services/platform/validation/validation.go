// Package validation is the error a service returns for a request it refuses
// field by field. It uses only the standard library, so domain packages may
// depend on it; grpcstatus turns it into an InvalidArgument status.
package validation

import (
	"fmt"
	"strings"
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
