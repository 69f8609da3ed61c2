package domain_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/notification/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

var t0 = time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC)

func TestRaiseValidate(t *testing.T) {
	t.Parallel()
	long := func(n int) string { return strings.Repeat("x", n) }
	for _, tc := range []struct {
		name       string
		raise      domain.Raise
		wantFields []string
	}{
		{"valid", domain.Raise{DedupKey: "k", Summary: "s"}, nil},
		{"at the limits", domain.Raise{DedupKey: long(domain.MaxDedupKeyChars), Summary: long(domain.MaxSummaryChars), DetailsBytes: domain.MaxDetailsBytes}, nil},
		{"no key", domain.Raise{Summary: "s"}, []string{"dedup_key"}},
		{"no summary", domain.Raise{DedupKey: "k"}, []string{"summary"}},
		{"nothing", domain.Raise{}, []string{"dedup_key", "summary"}},
		{"long key", domain.Raise{DedupKey: long(domain.MaxDedupKeyChars + 1), Summary: "s"}, []string{"dedup_key"}},
		{"long summary", domain.Raise{DedupKey: "k", Summary: long(domain.MaxSummaryChars + 1)}, []string{"summary"}},
		{"large details", domain.Raise{DedupKey: "k", Summary: "s", DetailsBytes: domain.MaxDetailsBytes + 1}, []string{"details"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.raise.Validate()
			if tc.wantFields == nil {
				require.NoError(t, err)
				return
			}
			var verr *validation.Error
			require.True(t, errors.As(err, &verr), "got %v", err)
			var fields []string
			for _, v := range verr.Violations {
				fields = append(fields, v.Field)
			}
			require.Equal(t, tc.wantFields, fields)
		})
	}
}

func TestDedup(t *testing.T) {
	t.Parallel()
	const w = 15 * time.Minute
	raise := domain.Raise{DedupKey: "k", Summary: "s"}
	open := raise.Open(t0, w)
	open.ID = 1
	other := domain.Raise{DedupKey: "other", Summary: "s"}.Open(t0, w)
	other.ID = 2
	later := raise.Open(t0.Add(w), w)
	later.ID = 3

	for _, tc := range []struct {
		name       string
		recorded   []domain.Alert
		at         time.Time
		wantOpened bool
		wantID     int64
	}{
		{"nothing recorded", nil, t0, true, 0},
		{"at the opening instant", []domain.Alert{open}, t0, false, 1},
		{"inside the window", []domain.Alert{open}, t0.Add(w - time.Microsecond), false, 1},
		{"at the window's end", []domain.Alert{open}, t0.Add(w), true, 0},
		{"another key's window", []domain.Alert{other}, t0.Add(time.Minute), true, 0},
		{"opened by a clock ahead", []domain.Alert{open}, t0.Add(-time.Second), false, 1},
		{"the earliest of two overlapping", []domain.Alert{later, open}, t0.Add(w - time.Second), false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fresh := raise.Open(tc.at, w)
			got, opened := domain.Dedup(tc.recorded, fresh)
			require.Equal(t, tc.wantOpened, opened)
			if opened {
				require.Equal(t, fresh, got)
				return
			}
			require.Equal(t, tc.wantID, got.ID)
			require.EqualValues(t, 2, got.Occurrences)
			require.Equal(t, t0, got.FirstSeenAt)
			require.False(t, got.LastSeenAt.Before(t0), "last_seen_at never moves back")
		})
	}
}

func TestOpen(t *testing.T) {
	t.Parallel()
	a := domain.Raise{DedupKey: "k", Summary: "s"}.Open(t0, time.Minute)
	require.Equal(t, domain.Alert{
		DedupKey: "k", Summary: "s", Details: map[string]any{}, Occurrences: 1,
		FirstSeenAt: t0, LastSeenAt: t0, DedupUntil: t0.Add(time.Minute),
	}, a)
}

func TestPageSize(t *testing.T) {
	t.Parallel()
	for in, want := range map[int]int{0: domain.DefaultPageSize, 1: 1, domain.MaxPageSize: domain.MaxPageSize} {
		got, err := domain.PageSize(in)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	for _, in := range []int{-1, domain.MaxPageSize + 1} {
		_, err := domain.PageSize(in)
		var verr *validation.Error
		require.True(t, errors.As(err, &verr), "page size %d", in)
		require.Equal(t, "page_size", verr.Violations[0].Field)
	}
}
