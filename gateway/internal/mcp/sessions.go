package mcp

import (
	"crypto/rand"
	"errors"
	"fmt"
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
type sessions struct {
	ttl time.Duration
	max int
	now func() time.Time
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

func newSessions(ttl time.Duration, maxOpen int, release func(id string)) *sessions {
	return &sessions{ttl: ttl, max: maxOpen, now: time.Now, release: release, lastSeen: map[string]time.Time{}}
}

// Generate opens a session (initialize), first ending the sessions idle
// longest while max are open.
func (s *sessions) Generate() string {
	id := rand.Text()
	s.mu.Lock()
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
	s.lastSeen[id] = s.now()
	s.mu.Unlock()
	for _, e := range ended {
		s.release(e)
	}
	return id
}

// Validate accepts an open session's request and records it as the
// session's latest.
func (s *sessions) Validate(id string) (isTerminated bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkLocked(id); err != nil {
		return false, err
	}
	s.lastSeen[id] = s.now()
	return false, nil
}

// Terminate ends a session: the client's DELETE, or mcp-go's idle sweeper.
func (s *sessions) Terminate(id string) (isNotAllowed bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.lastSeen, id)
	return false, nil
}

// check reports why id is not an open session, nil when it is.
func (s *sessions) check(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.checkLocked(id)
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
		"and a gateway restart ends them all; send initialize again, without an Mcp-Session-Id header, to start a new session",
		s.ttl, s.max)
}
