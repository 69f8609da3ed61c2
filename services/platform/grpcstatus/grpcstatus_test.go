package grpcstatus_test

import (
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zimmerhq/zimmer/services/platform/grpcstatus"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

func TestInvalidArgument(t *testing.T) {
	err := grpcstatus.InvalidArgument(&validation.Error{Violations: []validation.FieldViolation{
		{Field: "prompt", Reason: "is required"},
		{Field: "page", Reason: "must be 1 or more"},
	}})
	st, ok := status.FromError(err)
	if !ok {
		t.Fatalf("%v is not a status", err)
	}
	if st.Code() != codes.InvalidArgument {
		t.Errorf("code = %v, want InvalidArgument", st.Code())
	}
	if got, want := st.Message(), "prompt: is required; page: must be 1 or more"; got != want {
		t.Errorf("message = %q, want %q", got, want)
	}
	got := fieldViolations(t, st)
	want := map[string]string{"prompt": "is required", "page": "must be 1 or more"}
	if len(got) != len(want) {
		t.Fatalf("field violations = %v, want %v", got, want)
	}
	for f, d := range want {
		if got[f] != d {
			t.Errorf("violation %q = %q, want %q", f, got[f], d)
		}
	}
}

func TestBadRequestKeepsMessage(t *testing.T) {
	st := status.Convert(grpcstatus.BadRequest("invalid f: r", validation.FieldViolation{Field: "f", Reason: "r"}))
	if st.Code() != codes.InvalidArgument || st.Message() != "invalid f: r" {
		t.Fatalf("status = %v %q, want InvalidArgument %q", st.Code(), st.Message(), "invalid f: r")
	}
	if got := fieldViolations(t, st); len(got) != 1 || got["f"] != "r" {
		t.Fatalf("field violations = %v, want f: r", got)
	}
}

func fieldViolations(t *testing.T, st *status.Status) map[string]string {
	t.Helper()
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			out := map[string]string{}
			for _, v := range br.GetFieldViolations() {
				out[v.GetField()] = v.GetDescription()
			}
			return out
		}
	}
	t.Fatalf("no BadRequest detail in %v", st.Details())
	return nil
}
