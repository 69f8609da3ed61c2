package validation_test

import (
	"errors"
	"testing"

	"github.com/zimmerhq/zimmer/services/platform/validation"
)

func TestViolations(t *testing.T) {
	var vs validation.Violations
	if err := vs.Err(); err != nil {
		t.Fatalf("Err() with no violations = %v, want nil", err)
	}
	vs.Add("prompt", "is required")
	vs.Add("title", "is %d characters; the limit is %d", 300, 200)

	var verr *validation.Error
	if !errors.As(vs.Err(), &verr) {
		t.Fatalf("Err() = %T, want *validation.Error", vs.Err())
	}
	want := []validation.FieldViolation{
		{Field: "prompt", Reason: "is required"},
		{Field: "title", Reason: "is 300 characters; the limit is 200"},
	}
	if len(verr.Violations) != len(want) {
		t.Fatalf("violations = %v, want %v", verr.Violations, want)
	}
	for i := range want {
		if verr.Violations[i] != want[i] {
			t.Errorf("violation %d = %v, want %v", i, verr.Violations[i], want[i])
		}
	}
	if got, want := verr.Error(), "prompt: is required; title: is 300 characters; the limit is 200"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}
