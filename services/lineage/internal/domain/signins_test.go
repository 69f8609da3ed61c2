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
