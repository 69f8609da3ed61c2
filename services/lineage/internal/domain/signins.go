package domain

import (
	"crypto/sha256"
	"time"
	"unicode/utf8"

	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// The console's sign-ins (LN-11): kept here so that every gateway replica
// shares them and a sign-out is final everywhere.
const (
	// SignInIdleTTL is how long a console sign-in lasts without activity.
	SignInIdleTTL = 12 * time.Hour
	// SignInTouchEvery bounds how often activity is written: a page view
	// reads its sign-in in one statement and writes only when the last
	// write is older than this, so a sign-in may expire up to this much
	// sooner than SignInIdleTTL after its last request.
	SignInTouchEvery = time.Minute
	// MaxSignIns bounds the store: one human signs in, so more than this
	// means abuse or leaks, and signing in once more ends the sign-in idle
	// longest.
	MaxSignIns = 1000
	// MaxCSRFLength bounds the token the console stores with a sign-in.
	MaxCSRFLength = 128
)

// SignInExpiredBefore is the instant a sign-in last seen earlier has expired
// by, at now.
func SignInExpiredBefore(now time.Time) time.Time { return now.Add(-SignInIdleTTL) }

// ValidateSignInDigest refuses a key that is not a cookie's SHA-256.
func ValidateSignInDigest(digest []byte) error {
	if len(digest) != sha256.Size {
		return validation.Invalid("cookie_sha256", "must be the cookie's SHA-256 (%d bytes), got %d bytes", sha256.Size, len(digest))
	}
	return nil
}

// ValidateSignIn refuses a sign-in that cannot be stored.
func ValidateSignIn(digest []byte, csrf string) error {
	if err := ValidateSignInDigest(digest); err != nil {
		return err
	}
	switch {
	case csrf == "":
		return validation.Invalid("csrf", "required")
	case len(csrf) > MaxCSRFLength || !utf8.ValidString(csrf):
		return validation.Invalid("csrf", "at most %d bytes of UTF-8", MaxCSRFLength)
	}
	return nil
}
