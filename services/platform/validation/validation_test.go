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

func TestInvalid(t *testing.T) {
	t.Parallel()
	err := validation.Invalid("entry_point", "longer than %d bytes", 100)
	if len(err.Violations) != 1 || err.Violations[0] != (validation.FieldViolation{Field: "entry_point", Reason: "longer than 100 bytes"}) {
		t.Fatalf("violations = %v, want one for entry_point", err.Violations)
	}
	if got, want := err.Error(), "entry_point: longer than 100 bytes"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestNested(t *testing.T) {
	t.Parallel()
	var vs validation.Violations
	vs.Add("id", "must be a positive session id")
	vs.Add("updated_at", "missing")
	var verr *validation.Error
	if !errors.As(vs.Err(), &verr) {
		t.Fatalf("Err() = %T, want *validation.Error", vs.Err())
	}
	nested := verr.Nested("event.created.session")
	if got, want := nested.Error(), "event.created.session.id: must be a positive session id; event.created.session.updated_at: missing"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if verr.Violations[0].Field != "id" {
		t.Errorf("Nested changed the original: %v", verr.Violations)
	}
}

func TestTextRefusesUnstorableAndLongText(t *testing.T) {
	t.Parallel()
	var vs validation.Violations
	vs.Text("ok", "héllo", 5, "")
	vs.Text("bad_utf8", "a\xffb", 10, "")
	vs.Text("nul", "a\x00b", 10, "")
	vs.Text("long", "héllo!", 5, "shorten it")
	vs.Text("bytes_not_chars", "ééééé", 5, "") // 10 bytes, 5 characters: fine
	err := vs.Err()
	if err == nil {
		t.Fatal("want violations")
	}
	want := `bad_utf8: is not valid UTF-8; send text; nul: contains a NUL character (\u0000), which cannot be stored; remove it; long: is longer than 5 characters; shorten it`
	if got := err.Error(); got != want {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}

func TestBlank(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"", " ", " \n\t", "\n\r\t", "\u00a0", "\u2003\u3000", "\v\f"} {
		if !validation.Blank(v) {
			t.Errorf("Blank(%q) = false, want true", v)
		}
	}
	for _, v := range []string{"a", " a ", "\x00", "\xff", "\u200b"} {
		if validation.Blank(v) {
			t.Errorf("Blank(%q) = true, want false", v)
		}
	}
}

func TestContent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		v        string
		required bool
		want     string // "" when accepted
	}{
		{"required, given", "do it", true, ""},
		{"required, empty", "", true, "prompt: is required: it is the turn's prompt"},
		{"required, blank", " \n\t", true, "prompt: is blank (only white space): it is the turn's prompt; send text"},
		{"optional, left out", "", false, ""},
		{"optional, blank", "\u00a0", false, "prompt: is blank (only white space): it is the turn's prompt; send text, or leave it out"},
		{"too long", "abcdefghijk", true, "prompt: is longer than 10 characters; shorten it"},
		{"unstorable before blank", "\x00", true, `prompt: contains a NUL character (\u0000), which cannot be stored; remove it`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var vs validation.Violations
			vs.Content("prompt", tt.v, 10, tt.required, "it is the turn's prompt", "shorten it")
			got := ""
			if err := vs.Err(); err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Fatalf("Content(%q) = %q, want %q", tt.v, got, tt.want)
			}
		})
	}
}
