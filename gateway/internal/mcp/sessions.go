package mcp

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Defaults for Options.SessionTTL and Options.MaxSessions.
const (
	DefaultSessionTTL  = time.Hour
	DefaultMaxSessions = 1000
)

// sessions is the registry of open MCP sessions, mcp-go's SessionIdManager:
// mcp-go keeps state for every session it handed an id to (about 10 KB,
// the session's channels), and frees it only when the session ends. A
// client that never sends DELETE, or one that initializes in a loop, would
// otherwise grow the gateway without bound. So a session ends after ttl
// without a request (mcp-go's idle sweeper, WithSessionIdleTTL, frees its
// state and calls Terminate), and opening one more than max ends the one
// idle longest (release frees mcp-go's state). Either way the client's
// next request is refused with a message telling it to initialize again.
//
// The gateway runs as several replicas behind one address, and a client's
// requests land on any of them; so a session id is signed (signer) and
// names the replica run that opened it: id = random.run.mac. A replica
// knows every session its run opened, and refuses those it ended; a
// session opened by another replica, or by an earlier run of this one
// (since killed), is accepted on its signature and tracked from then on.
// Nothing but the id is needed to serve it: with streaming off, mcp-go
// serves a session it holds no state for as a fresh, initialized one.
type sessions struct {
	ttl time.Duration
	max int
	now func() time.Time
	// run names this process's sessions; signer signs every replica's.
	run    string
	signer []byte
	// release frees mcp-go's state of a session ended to stay under max;
	// called without mu held.
	release func(id string)

	mu       sync.Mutex
	lastSeen map[string]time.Time // open session → its last request
	evicted  int                  // sessions ended to stay under max, ever
}

var (
	errUnknownSession = errors.New("unknown MCP session")
	errExpiredSession = errors.New("expired MCP session")
)

func newSessions(ttl time.Duration, maxOpen int, key []byte, release func(id string)) *sessions {
	return &sessions{ttl: ttl, max: maxOpen, now: time.Now, release: release, lastSeen: map[string]time.Time{},
		run: rand.Text()[:10], signer: key}
}

// SessionKey derives the key that signs MCP session ids from the
// deployment's internal token, which every gateway replica holds: the
// replicas then accept each other's sessions with nothing more to
// configure. The id is not a credential (every request is authenticated
// on its own); the signature only keeps a replica from taking up ids no
// replica opened. Without a token (a single open gateway in tests) the
// key is random, so only this process's sessions are accepted.
func SessionKey(internalToken string) []byte {
	if internalToken == "" {
		return []byte(rand.Text())
	}
	key, err := hkdf.Key(sha256.New, []byte(internalToken), nil, "zimmer gateway MCP session id v1", 32)
	if err != nil {
		panic(fmt.Sprintf("derive the MCP session key: %v", err)) // only for a length sha256 cannot give
	}
	return key
}

func (s *sessions) mac(body string) string {
	m := hmac.New(sha256.New, s.signer)
	m.Write([]byte(body))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:18])
}

// Generate opens a session (initialize), first ending the sessions idle
// longest while max are open.
func (s *sessions) Generate() string {
	body := rand.Text() + "." + s.run
	id := body + "." + s.mac(body)
	s.mu.Lock()
	ended := s.makeRoomLocked()
	s.lastSeen[id] = s.now()
	s.mu.Unlock()
	for _, e := range ended {
		s.release(e)
	}
	return id
}

// makeRoomLocked ends the sessions idle longest while max are open and
// returns them, for release once mu is let go.
func (s *sessions) makeRoomLocked() []string {
	var ended []string
	for len(s.lastSeen) >= s.max {
		oldest, at := "", time.Time{}
		for k, seen := range s.lastSeen {
			if oldest == "" || seen.Before(at) {
				oldest, at = k, seen
			}
		}
		delete(s.lastSeen, oldest)
		ended = append(ended, oldest)
	}
	s.evicted += len(ended)
	return ended
}

// Validate accepts an open session's request and records it as the
// session's latest.
func (s *sessions) Validate(id string) (isTerminated bool, err error) {
	ended, err := s.admit(id)
	for _, e := range ended {
		s.release(e)
	}
	return false, err
}

// admit accepts id's request: an open session's, or one another replica
// opened, which it takes up (ending the idlest to stay under max, which
// it returns for release).
func (s *sessions) admit(id string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.checkLocked(id)
	if err == nil {
		s.lastSeen[id] = s.now()
		return nil, nil
	}
	if !errors.Is(err, errUnknownSession) || !s.foreign(id) {
		return nil, err
	}
	ended := s.makeRoomLocked()
	s.lastSeen[id] = s.now()
	return ended, nil
}

// foreign reports whether id is a session another replica run opened: a
// valid signature and a run not this one. An id of this run that it does
// not hold is one it ended.
func (s *sessions) foreign(id string) bool {
	i := strings.LastIndexByte(id, '.')
	if i < 0 {
		return false
	}
	body, sig := id[:i], id[i+1:]
	_, run, ok := strings.Cut(body, ".")
	return ok && run != s.run && hmac.Equal([]byte(sig), []byte(s.mac(body)))
}

// Terminate ends a session: the client's DELETE, or mcp-go's idle sweeper.
func (s *sessions) Terminate(id string) (isNotAllowed bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.lastSeen, id)
	return false, nil
}

// check reports why id is not a session this replica serves, nil when it
// is (open here, or opened by another replica: admit takes it up).
func (s *sessions) check(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.checkLocked(id)
	if errors.Is(err, errUnknownSession) && s.foreign(id) {
		return nil
	}
	return err
}

func (s *sessions) checkLocked(id string) error {
	seen, ok := s.lastSeen[id]
	switch {
	case !ok:
		return errUnknownSession
	case s.now().Sub(seen) > s.ttl:
		// The sweeper frees its state on its next round.
		delete(s.lastSeen, id)
		return errExpiredSession
	}
	return nil
}

// evictedTotal is how many sessions were ended to stay under max.
func (s *sessions) evictedTotal() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.evicted
}

// goneMessage tells a client whose session is not open what happened and
// what to do.
func (s *sessions) goneMessage() string {
	return fmt.Sprintf("MCP session not found: sessions end after %s without a request, the idlest is closed when %d are open, "+
		"and a gateway's key (ZIMMER_INTERNAL_TOKEN) changing ends them all; send initialize again, without an Mcp-Session-Id header, to start a new session",
		s.ttl, s.max)
}
