package console

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net"
	"net/http"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
)

const (
	// CookieName is the console's sign-in cookie. It opens /console/ only:
	// its Path says so to the browser, and no other route reads it.
	CookieName = "zimmer_console"
	// flashCookieName carries what the last form did, in words, to the
	// page its answer redirects to, which shows it once and clears it.
	flashCookieName = "zimmer_console_flash"
	// flashMaxAge is long enough to follow a redirect, short enough that a
	// flash never surprises a later page; maxFlashBytes keeps the cookie
	// well under a browser's 4 KB.
	flashMaxAge   = 60
	maxFlashBytes = 2000
)

// errSignedOut is a cookie with no live sign-in: none, signed out, expired.
var errSignedOut = errors.New("signed out")

// signIn is one signed-in browser: its CSRF token is what every mutating
// form must carry back.
type signIn struct {
	csrf string
}

// signIns are lineage's ConsoleSignInService (LN-11), shared by every
// gateway replica. Server-side, not a signed cookie, so that sign-out ends
// a sign-in for good on every replica (a copied cookie dies with it).
// Lineage is handed the cookie's SHA-256, never the cookie: its tables
// hold nothing a read could replay.
type signIns struct {
	client lineagev1.ConsoleSignInServiceClient
}

func digest(cookie string) []byte {
	d := sha256.Sum256([]byte(cookie))
	return d[:]
}

// start records a new sign-in and returns its cookie value and how long
// it lasts idle.
func (s signIns) start(ctx context.Context) (cookie string, ttl time.Duration, _ error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	cookie = randomToken()
	resp, err := s.client.StartConsoleSignIn(ctx, &lineagev1.StartConsoleSignInRequest{CookieSha256: digest(cookie), Csrf: randomToken()})
	if err != nil {
		return "", 0, err
	}
	return cookie, resp.GetIdleTtl().AsDuration(), nil
}

// get returns the live sign-in of cookie (errSignedOut when there is
// none); touch counts the request as activity, which a stream's
// keep-alive must not (a stream left open must not keep a sign-in alive
// forever).
func (s signIns) get(ctx context.Context, cookie string, touch bool) (signIn, error) {
	if cookie == "" {
		return signIn{}, errSignedOut
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := s.client.GetConsoleSignIn(ctx, &lineagev1.GetConsoleSignInRequest{CookieSha256: digest(cookie), Touch: touch})
	if status.Code(err) == codes.NotFound {
		return signIn{}, errSignedOut
	}
	if err != nil {
		return signIn{}, err
	}
	return signIn{csrf: resp.GetCsrf()}, nil
}

// end ends cookie's sign-in for good.
func (s signIns) end(ctx context.Context, cookie string) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	_, err := s.client.EndConsoleSignIn(ctx, &lineagev1.EndConsoleSignInRequest{CookieSha256: digest(cookie)})
	return err
}

// attempt asks lineage whether addr may try a password now, counting the
// attempt when it may (LN-12: the limit and the count are lineage's, shared by
// every replica and counted before the password is checked); wait > 0
// says how long addr must wait instead.
func (s signIns) attempt(ctx context.Context, addr string) (wait time.Duration, _ error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := s.client.AttemptConsoleSignIn(ctx, &lineagev1.AttemptConsoleSignInRequest{Address: addr})
	if err != nil {
		return 0, err
	}
	return resp.GetRetryAfter().AsDuration(), nil
}

// clearAttempts forgets addr's attempts: its password was right.
func (s signIns) clearAttempts(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	_, err := s.client.ClearConsoleSignInAttempts(ctx, &lineagev1.ClearConsoleSignInAttemptsRequest{Address: addr})
	return err
}

// setFlash shows msg on the next page this browser loads. A cookie, not
// the sign-in: it lives one redirect, so any replica may serve the page,
// and Strict keeps another site's navigation from carrying it.
func (h *Handler) setFlash(w http.ResponseWriter, r *http.Request, msg string) {
	if len(msg) > maxFlashBytes {
		msg = strings.ToValidUTF8(msg[:maxFlashBytes], "") + "…"
	}
	c := h.cookie(r, flashCookieName, base64.RawURLEncoding.EncodeToString([]byte(msg)), flashMaxAge)
	c.SameSite = http.SameSiteStrictMode
	http.SetCookie(w, c)
}

// takeFlash returns the flash the request carries and clears it.
func (h *Handler) takeFlash(w http.ResponseWriter, r *http.Request) string {
	c, err := r.Cookie(flashCookieName)
	if err != nil {
		return ""
	}
	gone := h.cookie(r, flashCookieName, "", -1)
	gone.SameSite = http.SameSiteStrictMode
	http.SetCookie(w, gone)
	msg, err := base64.RawURLEncoding.DecodeString(c.Value)
	if err != nil {
		return ""
	}
	return strings.ToValidUTF8(string(msg), "")
}

// clientAddr is the address password attempts are counted by: the peer's host. A
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
