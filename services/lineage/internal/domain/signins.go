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

// The console's password attempts (LN-12), counted per client address for
// every gateway replica at once.
const (
	// MaxSignInAttempts attempts from one address within
	// SignInAttemptWindow lock it out until the oldest of them is
	// SignInAttemptWindow old. An attempt counts from the moment it is let
	// through until its password proves right.
	MaxSignInAttempts   = 5
	SignInAttemptWindow = 15 * time.Minute
	// MaxAddressLength bounds the client address attempts are counted by
	// (an IPv6 address with a zone fits).
	MaxAddressLength = 100
)

// SignInAttemptsSince is the instant an attempt made earlier no longer
// counts by, at now.
func SignInAttemptsSince(now time.Time) time.Time { return now.Add(-SignInAttemptWindow) }

// SignInRetryAfter is how long an address must wait at now before it may
// attempt again, given the times of its attempts that still count (oldest
// first): 0 while it has attempts left, never less than a second when not.
func SignInRetryAfter(attempts []time.Time, now time.Time) time.Duration {
	if len(attempts) < MaxSignInAttempts {
		return 0
	}
	return max(attempts[len(attempts)-MaxSignInAttempts].Add(SignInAttemptWindow).Sub(now), time.Second)
}

// ValidateSignInAddress refuses an address no attempt can be counted by.
func ValidateSignInAddress(address string) error {
	switch {
	case address == "":
		return validation.Invalid("address", "required: the client's address")
	case len(address) > MaxAddressLength || !utf8.ValidString(address):
		return validation.Invalid("address", "at most %d bytes of UTF-8", MaxAddressLength)
	}
	return nil
}
