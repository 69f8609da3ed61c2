package domain_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
)

// per_page outside 1..100 is clamped, as the original system did, not
// refused; none asked for is the default.
func TestListRequestClampsPerPage(t *testing.T) {
	t.Parallel()

	for _, tt := range []struct{ asked, want int }{
		{0, domain.DefaultPerPage},
		{1, 1},
		{40, 40},
		{domain.MaxPerPage, domain.MaxPerPage},
		{domain.MaxPerPage + 1, domain.MaxPerPage},
		{1_000_000, domain.MaxPerPage},
		{-1, 1},
		{-500, 1},
	} {
		f, err := domain.ListRequest{PerPage: tt.asked}.Filter()
		require.NoError(t, err, "per_page %d", tt.asked)
		require.Equal(t, tt.want, f.PerPage, "per_page %d", tt.asked)
	}
}
