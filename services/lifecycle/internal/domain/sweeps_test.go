package domain_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
)

// The archive line names the sweep's age as the spec does ("untouched for
// 7 days"), and a configured age in the words that fit it.
func TestStaleSessionSweepNamesItsAge(t *testing.T) {
	t.Parallel()
	for after, want := range map[time.Duration]string{
		domain.DefaultStaleAfter: "stale-session sweep (untouched for 7 days)",
		24 * time.Hour:           "stale-session sweep (untouched for 1 day)",
		36 * time.Hour:           "stale-session sweep (untouched for 36 hours)",
		time.Hour:                "stale-session sweep (untouched for 1 hour)",
		90 * time.Minute:         "stale-session sweep (untouched for 1h30m0s)",
	} {
		a := domain.StaleSessionSweep(after)
		require.Equal(t, domain.ActorSweep, a.Kind)
		require.Equal(t, "Zimmer's "+want, a.Phrase())
	}
}
