package grpcstatus_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
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

func TestCommon(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		err     error
		ok      bool
		code    codes.Code
		message string
	}{
		{"validation, wrapped", fmt.Errorf("apply: %w", validation.Invalid("f", "r")), true, codes.InvalidArgument, "f: r"},
		{"canceled", fmt.Errorf("query: %w", context.Canceled), true, codes.Canceled, "request canceled"},
		{"deadline", fmt.Errorf("query: %w", context.DeadlineExceeded), true, codes.DeadlineExceeded, "deadline exceeded"},
		{"database unreachable", fmt.Errorf("read session: %w", &pgconn.ConnectError{}), true, codes.Unavailable, "the database is unavailable; retry shortly"},
		{"database shutting down", fmt.Errorf("read session: %w", &pgconn.PgError{Code: "57P01"}), true, codes.Unavailable, "the database is unavailable; retry shortly"},
		{"anything else is the service's", errors.New("relation x does not exist"), false, codes.OK, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err, ok := grpcstatus.Common(tt.err)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v", ok, tt.ok)
			}
			if !ok {
				if err != nil {
					t.Fatalf("status = %v, want nil when not ok", err)
				}
				return
			}
			st := status.Convert(err)
			if st.Code() != tt.code || st.Message() != tt.message {
				t.Fatalf("status = %v %q, want %v %q", st.Code(), st.Message(), tt.code, tt.message)
			}
		})
	}
	err, _ := grpcstatus.Common(validation.Invalid("f", "r"))
	if got := fieldViolations(t, status.Convert(err)); len(got) != 1 || got["f"] != "r" {
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

// A callee's refusal comes out of its caller with the same code and the
// callee's own words and details, never as the caller's Internal.
func TestRefusalOfACallee(t *testing.T) {
	t.Parallel()
	invalid := grpcstatus.InvalidArgument(validation.Invalid("acting_session_id", "must be a positive session id"))
	tests := []struct {
		name    string
		err     error
		ok      bool
		code    codes.Code
		message string
	}{
		{"InvalidArgument, wrapped", fmt.Errorf("lineage RecordUncleEdge -1 → 7: %w", invalid), true, codes.InvalidArgument,
			"acting_session_id: must be a positive session id"},
		{"FailedPrecondition, wrapped twice", fmt.Errorf("deliver: %w", fmt.Errorf("lifecycle DeliverTurn: %w",
			status.Error(codes.FailedPrecondition, "session 7 is archived"))), true, codes.FailedPrecondition, "session 7 is archived"},
		{"NotFound", fmt.Errorf("lifecycle RecordDrainAttempt: %w", status.Error(codes.NotFound, "no session 7")), true, codes.NotFound, "no session 7"},
		{"Unavailable is the caller's to judge", fmt.Errorf("x: %w", status.Error(codes.Unavailable, "down")), false, codes.OK, ""},
		{"Internal is the caller's to judge", fmt.Errorf("x: %w", status.Error(codes.Internal, "boom")), false, codes.OK, ""},
		{"no status", errors.New("plain"), false, codes.OK, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, mapping := range []func(error) (error, bool){grpcstatus.Refusal, grpcstatus.Common} {
				err, ok := mapping(tt.err)
				if ok != tt.ok {
					t.Fatalf("ok = %v, want %v (%v)", ok, tt.ok, err)
				}
				if !ok {
					continue
				}
				st := status.Convert(err)
				if st.Code() != tt.code || st.Message() != tt.message {
					t.Fatalf("status = %v %q, want %v %q", st.Code(), st.Message(), tt.code, tt.message)
				}
			}
		})
	}
	err, _ := grpcstatus.Common(fmt.Errorf("lineage: %w", invalid))
	if got := fieldViolations(t, status.Convert(err)); got["acting_session_id"] != "must be a positive session id" {
		t.Fatalf("field violations = %v, want the callee's", got)
	}
}
