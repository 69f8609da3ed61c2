package domain

import (
	"fmt"
	"strings"
)

// FieldViolation is one problem with one request field.
type FieldViolation struct {
	Field  string
	Reason string // what was wrong and what to do
}

// ValidationError lists every problem found in a request, so a caller fixes
// them in one round trip.
type ValidationError struct {
	Violations []FieldViolation
}

func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Violations))
	for i, v := range e.Violations {
		parts[i] = v.Field + ": " + v.Reason
	}
	return strings.Join(parts, "; ")
}

// violations accumulates FieldViolations.
type violations []FieldViolation

func (vs *violations) add(field, format string, args ...any) {
	*vs = append(*vs, FieldViolation{Field: field, Reason: fmt.Sprintf(format, args...)})
}

func (vs violations) err() error {
	if len(vs) == 0 {
		return nil
	}
	return &ValidationError{Violations: vs}
}
