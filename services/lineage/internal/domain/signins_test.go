package domain_test

import (
	"crypto/sha256"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lineage/internal/domain"
)

func TestSignInValidation(t *testing.T) {
	t.Parallel()
	d := sha256.Sum256([]byte("cookie"))
	require.NoError(t, domain.ValidateSignIn(d[:], "token"))
	for name, c := range map[string]struct {
		digest []byte
		csrf   string
		want   string
	}{
		"the cookie, not its digest": {[]byte("cookie"), "token", "cookie_sha256: must be the cookie's SHA-256 (32 bytes), got 6 bytes"},
		"no digest":                  {nil, "token", "got 0 bytes"},
		"no token":                   {d[:], "", "csrf: required"},
		"a long token":               {d[:], strings.Repeat("x", domain.MaxCSRFLength+1), "csrf: at most 128 bytes"},
		"not UTF-8":                  {d[:], "\xff", "csrf: at most 128 bytes of UTF-8"},
	} {
		err := domain.ValidateSignIn(c.digest, c.csrf)
		require.ErrorContains(t, err, c.want, name)
	}
	require.Equal(t, time.Date(2026, 12, 1, 21, 0, 0, 0, time.UTC),
		domain.SignInExpiredBefore(time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)), "12 hours idle")
}

func TestSignInRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	ago := func(d ...time.Duration) []time.Time {
		var ts []time.Time
		for _, x := range d {
			ts = append(ts, now.Add(-x))
		}
		return ts
	}
	require.Zero(t, domain.SignInRetryAfter(nil, now))
	require.Zero(t, domain.SignInRetryAfter(ago(4*time.Minute, 3*time.Minute, 2*time.Minute, time.Minute), now), "a attempt left")
	require.Equal(t, 11*time.Minute, domain.SignInRetryAfter(ago(4*time.Minute, 3*time.Minute, 2*time.Minute, time.Minute, 0), now),
		"until the oldest of the five is 15 minutes old")
	require.Equal(t, time.Second, domain.SignInRetryAfter(ago(15*time.Minute, 3*time.Minute, 2*time.Minute, time.Minute, 0), now),
		"never zero while locked: a caller told to wait waits")
}

func TestSignInAddressValidation(t *testing.T) {
	t.Parallel()
	require.NoError(t, domain.ValidateSignInAddress("2001:db8::1"))
	require.ErrorContains(t, domain.ValidateSignInAddress(""), "address: required")
	require.ErrorContains(t, domain.ValidateSignInAddress(strings.Repeat("1", 101)), "address: at most 100 bytes")
	require.ErrorContains(t, domain.ValidateSignInAddress("\xff"), "of UTF-8")
}
