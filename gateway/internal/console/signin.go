package console

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net"
	"net/http"
	"sync"
	"time"
)

const (
	// CookieName is the console's sign-in cookie. It opens /console/ only:
	// its Path says so to the browser, and no other route reads it.
	CookieName = "zimmer_console"
	// SignInTTL is how long a sign-in lasts without a request.
	SignInTTL = 12 * time.Hour
	// MaxFailures wrong passwords from one address within FailureWindow
	// lock that address out of signing in until the oldest of them is
	// FailureWindow old.
	MaxFailures   = 5
	FailureWindow = 15 * time.Minute
	// maxSignIns bounds the store: signing in once more ends the sign-in
	// idle longest.
	maxSignIns = 1000
)

// signIn is one signed-in browser: the cookie's digest keys it, and its
// CSRF token is what every mutating form must carry back.
type signIn struct {
	csrf     string
	lastSeen time.Time
	// flash is what the last form did, in words, shown once by the page
	// the form's answer redirects to.
	flash string
}

// signIns is the server-side store of sign-ins. Server-side, not a signed
// cookie, so that sign-out ends a sign-in for good (a copied cookie dies
// with it) and a gateway restart signs everyone out; there is one human,
// so the store stays tiny. Keys are the cookie's SHA-256: the store never
// holds a cookie a memory read could replay.
type signIns struct {
	mu  sync.Mutex
	now func() time.Time
	m   map[[sha256.Size]byte]*signIn
}

func newSignIns(now func() time.Time) *signIns {
	return &signIns{now: now, m: map[[sha256.Size]byte]*signIn{}}
}

// start records a new sign-in and returns its cookie value.
func (s *signIns) start() (cookie string, _ *signIn) {
	cookie = randomToken()
	in := &signIn{csrf: randomToken(), lastSeen: s.now()}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweepLocked()
	if len(s.m) >= maxSignIns {
		var oldest [sha256.Size]byte
		var oldestSeen time.Time
		for k, v := range s.m {
			if oldestSeen.IsZero() || v.lastSeen.Before(oldestSeen) {
				oldest, oldestSeen = k, v.lastSeen
			}
		}
		delete(s.m, oldest)
	}
	s.m[sha256.Sum256([]byte(cookie))] = in
	return cookie, in
}

// get returns the live sign-in of cookie and marks it seen.
func (s *signIns) get(cookie string) (signIn, bool) {
	if cookie == "" {
		return signIn{}, false
	}
	key := sha256.Sum256([]byte(cookie))
	s.mu.Lock()
	defer s.mu.Unlock()
	in, ok := s.m[key]
	if !ok {
		return signIn{}, false
	}
	if s.now().Sub(in.lastSeen) > SignInTTL {
		delete(s.m, key)
		return signIn{}, false
	}
	in.lastSeen = s.now()
	return *in, true
}

// alive reports whether cookie's sign-in is live, without counting the
// question as activity (a stream left open must not keep a sign-in alive
// forever).
func (s *signIns) alive(cookie string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	in, ok := s.m[sha256.Sum256([]byte(cookie))]
	return ok && s.now().Sub(in.lastSeen) <= SignInTTL
}

// setFlash keeps msg for the next page cookie's browser loads.
func (s *signIns) setFlash(cookie, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if in, ok := s.m[sha256.Sum256([]byte(cookie))]; ok {
		in.flash = msg
	}
}

// takeFlash returns and forgets cookie's flash.
func (s *signIns) takeFlash(cookie string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	in, ok := s.m[sha256.Sum256([]byte(cookie))]
	if !ok {
		return ""
	}
	msg := in.flash
	in.flash = ""
	return msg
}

// end forgets cookie's sign-in.
func (s *signIns) end(cookie string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, sha256.Sum256([]byte(cookie)))
}

func (s *signIns) sweepLocked() {
	for k, v := range s.m {
		if s.now().Sub(v.lastSeen) > SignInTTL {
			delete(s.m, k)
		}
	}
}

// throttle counts wrong passwords per client address.
type throttle struct {
	mu       sync.Mutex
	now      func() time.Time
	failures map[string][]time.Time
}

func newThrottle(now func() time.Time) *throttle {
	return &throttle{now: now, failures: map[string][]time.Time{}}
}

// lockedFor reports how long addr must still wait before trying again (0:
// it may try now).
func (t *throttle) lockedFor(addr string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	recent := t.recentLocked(addr)
	if len(recent) < MaxFailures {
		return 0
	}
	return recent[len(recent)-MaxFailures].Add(FailureWindow).Sub(t.now())
}

func (t *throttle) fail(addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.failures[addr] = append(t.recentLocked(addr), t.now())
}

func (t *throttle) succeed(addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.failures, addr)
}

// recentLocked drops addr's failures older than the window.
func (t *throttle) recentLocked(addr string) []time.Time {
	all := t.failures[addr]
	cut := 0
	for cut < len(all) && t.now().Sub(all[cut]) >= FailureWindow {
		cut++
	}
	if cut == len(all) {
		delete(t.failures, addr)
		return nil
	}
	t.failures[addr] = all[cut:]
	return all[cut:]
}

// clientAddr is the address throttling counts by: the peer's host. A
// proxy in front makes every client one address, which only makes the
// lock stricter, never looser; X-Forwarded-For is not believed, since any
// client could set it to dodge the count.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go ≥ 1.24)
	return base64.RawURLEncoding.EncodeToString(b)
}

// equal compares two secrets in constant time, over digests so that not
// even their lengths leak.
func equal(a, b string) bool {
	da, db := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(da[:], db[:]) == 1
}
