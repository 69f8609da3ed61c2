package store

import (
	"maps"
	"sync"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
)

// decided is what a transition decides from: the session and its armed
// wake-ups, as of the session's version.
type decided struct {
	session domain.Session
	wakes   domain.Wakes
}

// stateCache remembers the last state this process committed or read for
// each session, so a transition can decide without a round trip. It is a
// hint, never the truth: every write is conditional on the version it
// decided from, so a stale entry (another replica wrote, a wake-up was
// armed) costs one re-read, never a wrong write.
type stateCache struct {
	mu     sync.Mutex
	max    int
	byID   map[int64]decided
	bySlug map[string]int64
}

func newStateCache(max int) *stateCache {
	return &stateCache{max: max, byID: map[int64]decided{}, bySlug: map[string]int64{}}
}

// id resolves a reference through the cache.
func (c *stateCache) id(ref domain.SessionRef) (int64, bool) {
	if ref.Slug == "" {
		return ref.ID, true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	id, ok := c.bySlug[ref.Slug]
	return id, ok
}

func (c *stateCache) get(id int64) (decided, bool) {
	c.mu.Lock()
	d, ok := c.byID[id]
	c.mu.Unlock()
	// The caller decides on a copy: a decision that mutated the cached map
	// and then failed to commit must not leave its change behind.
	d.session.CustomMetadata = maps.Clone(d.session.CustomMetadata)
	return d, ok
}

func (c *stateCache) put(d decided) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.byID[d.session.ID]; ok && old.session.Version > d.session.Version {
		return // a newer state got here first
	}
	if len(c.byID) >= c.max {
		// Forget an arbitrary half: a miss costs one read, so recency
		// bookkeeping would cost more than it saves.
		for id := range c.byID {
			if len(c.byID) < c.max/2 {
				break
			}
			c.forgetLocked(id)
		}
	}
	c.forgetLocked(d.session.ID)
	c.byID[d.session.ID] = d
	if d.session.Slug != "" {
		c.bySlug[d.session.Slug] = d.session.ID
	}
}

func (c *stateCache) forget(id int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.forgetLocked(id)
}

func (c *stateCache) forgetLocked(id int64) {
	if d, ok := c.byID[id]; ok && d.session.Slug != "" && c.bySlug[d.session.Slug] == id {
		delete(c.bySlug, d.session.Slug)
	}
	delete(c.byID, id)
}

// sessionLocks serializes this process's transitions of one session, so
// they queue instead of racing each other's version checks; sessions never
// wait on one another.
type sessionLocks struct {
	mu    sync.Mutex
	locks map[int64]*sessionLock
}

type sessionLock struct {
	sync.Mutex
	holders int // holding or waiting; the entry goes when it drops to 0
}

func (l *sessionLocks) lock(id int64) (unlock func()) {
	l.mu.Lock()
	if l.locks == nil {
		l.locks = map[int64]*sessionLock{}
	}
	sl := l.locks[id]
	if sl == nil {
		sl = &sessionLock{}
		l.locks[id] = sl
	}
	sl.holders++
	l.mu.Unlock()
	sl.Lock()
	return func() {
		sl.Unlock()
		l.mu.Lock()
		if sl.holders--; sl.holders == 0 {
			delete(l.locks, id)
		}
		l.mu.Unlock()
	}
}
