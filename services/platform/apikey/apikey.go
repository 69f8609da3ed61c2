// Package apikey checks the fleet API keys shared by REST, MCP and gRPC.
package apikey

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
)

// Set is an immutable set of accepted keys. The zero Set accepts nothing and
// reports itself disabled.
type Set struct {
	// Keys are kept as SHA-256 digests so every comparison is over equal
	// lengths and constant time whatever the presented key's length.
	digests [][sha256.Size]byte
}

// Parse reads a comma-separated list of keys (ZIMMER_API_KEYS); blanks are
// ignored.
func Parse(csv string) Set {
	var s Set
	for _, k := range strings.Split(csv, ",") {
		if k = strings.TrimSpace(k); k != "" {
			s.digests = append(s.digests, sha256.Sum256([]byte(k)))
		}
	}
	return s
}

// Enabled reports whether any key is configured.
func (s Set) Enabled() bool { return len(s.digests) > 0 }

// Valid reports whether key is one of the set, in time independent of which
// key (if any) matched.
func (s Set) Valid(key string) bool {
	if key == "" {
		return false
	}
	d := sha256.Sum256([]byte(key))
	ok := 0
	for i := range s.digests {
		ok |= subtle.ConstantTimeCompare(d[:], s.digests[i][:])
	}
	return ok == 1
}

// FromRequest returns the key an HTTP request presents: the X-API-Key header,
// else an "Authorization: Bearer" token.
func FromRequest(r *http.Request) string {
	if k := r.Header.Get("X-API-Key"); k != "" {
		return k
	}
	return BearerToken(r.Header.Get("Authorization"))
}

// BearerToken extracts the token of an "Authorization: Bearer <token>" value.
func BearerToken(authorization string) string {
	const prefix = "bearer "
	if len(authorization) > len(prefix) && strings.EqualFold(authorization[:len(prefix)], prefix) {
		return strings.TrimSpace(authorization[len(prefix):])
	}
	return ""
}
