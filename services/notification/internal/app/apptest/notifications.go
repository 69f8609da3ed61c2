package apptest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/zimmerhq/zimmer/services/notification/internal/app"
	"github.com/zimmerhq/zimmer/services/notification/internal/domain"
)

// Notifications is an in-memory app.NotificationRepository; the contract
// test in package store holds it and the Postgres store to one behaviour.
type Notifications struct {
	mu      sync.Mutex
	rows    []domain.Notification // by id - 1; deleted rows have ID 0
	claimed map[string]bool
	// pushStarted is when each notification's push was recorded started.
	pushStarted map[int64]time.Time
}

var _ app.NotificationRepository = (*Notifications)(nil)

// Create implements app.NotificationRepository.
func (f *Notifications) Create(_ context.Context, n domain.Notification) (domain.Notification, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.rows {
		if r.ID == 0 {
			continue
		}
		if (n.DedupKey != "" && r.DedupKey == n.DedupKey) ||
			(n.Type == domain.TypeNeedsInput && r.Type == domain.TypeNeedsInput && r.SessionID == n.SessionID && r.Marker == n.Marker) {
			return clone(r), false, nil
		}
	}
	n.ID = int64(len(f.rows) + 1)
	n.OccurredAt = n.ReportedAt() // as the store records it
	f.rows = append(f.rows, clone(n))
	return clone(n), true, nil
}

// Delete implements app.NotificationRepository.
func (f *Notifications) Delete(_ context.Context, id int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r := f.find(id); r != nil {
		*r = domain.Notification{}
	}
	return nil
}

// List implements app.NotificationRepository.
func (f *Notifications) List(_ context.Context, flt domain.Filter) ([]domain.Notification, int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rows := []domain.Notification{}
	unread := 0
	for _, r := range slices.Backward(f.rows) {
		if r.ID == 0 || (flt.Type != "" && r.Type != flt.Type) || (flt.SessionID != 0 && r.SessionID != flt.SessionID) {
			continue
		}
		if r.ReadAt == nil && r.DismissedAt == nil {
			unread++
		}
		if (flt.Unread && r.ReadAt != nil) || (!flt.IncludeDismissed && r.DismissedAt != nil) ||
			(flt.BeforeID != 0 && r.ID >= flt.BeforeID) || len(rows) == flt.Limit {
			continue
		}
		rows = append(rows, clone(r))
	}
	return rows, unread, nil
}

// MarkRead implements app.NotificationRepository.
func (f *Notifications) MarkRead(_ context.Context, id int64, at time.Time) (domain.Notification, error) {
	return f.stamp(id, func(n *domain.Notification) { setOnce(&n.ReadAt, at) })
}

// Dismiss implements app.NotificationRepository.
func (f *Notifications) Dismiss(_ context.Context, id int64, at time.Time) (domain.Notification, error) {
	return f.stamp(id, func(n *domain.Notification) { setOnce(&n.DismissedAt, at) })
}

func (f *Notifications) stamp(id int64, set func(*domain.Notification)) (domain.Notification, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.find(id)
	if r == nil {
		return domain.Notification{}, fmt.Errorf("%w: no notification has id %d", domain.ErrNotFound, id)
	}
	set(r)
	return clone(*r), nil
}

// MarkAllRead implements app.NotificationRepository.
func (f *Notifications) MarkAllRead(_ context.Context, sessionID int64, at time.Time) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	marked := 0
	for i := range f.rows {
		r := &f.rows[i]
		if r.ID != 0 && r.ReadAt == nil && r.DismissedAt == nil && (sessionID == 0 || r.SessionID == sessionID) {
			setOnce(&r.ReadAt, at)
			marked++
		}
	}
	return marked, nil
}

// MarkPushed implements app.NotificationRepository.
func (f *Notifications) MarkPushed(_ context.Context, id int64, at time.Time) (time.Time, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r := f.find(id); r != nil && r.PushedAt == nil {
		setOnce(&r.PushedAt, at)
		return r.CreatedAt, nil
	}
	return time.Time{}, nil
}

// MarkPushStarted implements app.NotificationRepository.
func (f *Notifications) MarkPushStarted(_ context.Context, id int64, at time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.pushStarted[id]; ok || f.find(id) == nil {
		return nil
	}
	if f.pushStarted == nil {
		f.pushStarted = map[int64]time.Time{}
	}
	f.pushStarted[id] = at
	return nil
}

// PushNotStarted implements app.NotificationRepository.
func (f *Notifications) PushNotStarted(_ context.Context, createdBefore time.Time, limit int) ([]domain.Notification, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := []domain.Notification{}
	for _, r := range f.rows {
		if _, started := f.pushStarted[r.ID]; r.ID == 0 || started || r.Type == domain.TypeNeedsInput || r.PushedAt != nil ||
			!r.CreatedAt.Before(createdBefore) || len(out) == limit {
			continue
		}
		out = append(out, clone(r))
	}
	return out, nil
}

// MarkStale implements app.NotificationRepository.
func (f *Notifications) MarkStale(_ context.Context, eventID string, stale domain.StaleOnResume, at time.Time) (bool, error) {
	return f.applyOnce(eventID, func(r *domain.Notification) {
		if stale.Stales(*r) {
			setOnce(&r.StaleAt, at)
		}
	}), nil
}

// DismissSession implements app.NotificationRepository.
func (f *Notifications) DismissSession(_ context.Context, eventID string, sessionID int64, createdUpTo, at time.Time) (bool, error) {
	return f.applyOnce(eventID, func(r *domain.Notification) {
		if r.SessionID == sessionID && !r.CreatedAt.After(createdUpTo) {
			setOnce(&r.DismissedAt, at)
		}
	}), nil
}

func (f *Notifications) applyOnce(eventID string, apply func(*domain.Notification)) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.claimed[eventID] {
		return false
	}
	if f.claimed == nil {
		f.claimed = map[string]bool{}
	}
	f.claimed[eventID] = true
	for i := range f.rows {
		if f.rows[i].ID != 0 {
			apply(&f.rows[i])
		}
	}
	return true
}

// All returns every stored notification, oldest first.
func (f *Notifications) All() []domain.Notification {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []domain.Notification
	for _, r := range f.rows {
		if r.ID != 0 {
			out = append(out, clone(r))
		}
	}
	return out
}

func (f *Notifications) find(id int64) *domain.Notification {
	if id < 1 || id > int64(len(f.rows)) || f.rows[id-1].ID == 0 {
		return nil
	}
	return &f.rows[id-1]
}

func setOnce(field **time.Time, at time.Time) {
	if *field == nil {
		*field = &at
	}
}

// clone copies n's time pointers, so a caller's copy does not change with
// the stored row.
func clone(n domain.Notification) domain.Notification {
	for _, p := range []**time.Time{&n.ReadAt, &n.DismissedAt, &n.StaleAt, &n.PushedAt} {
		if *p != nil {
			t := **p
			*p = &t
		}
	}
	return n
}

// Sessions is an in-memory app.Sessions: lifecycle as the test sets it.
type Sessions struct {
	mu       sync.Mutex
	sessions map[int64]domain.Session
	// Err, when set, is what every Get answers (lifecycle unreachable).
	err error
	// Now, when set, stamps each Get (a workflow test's mocked clock).
	Now   func() time.Time
	asked []time.Time
}

var _ app.Sessions = (*Sessions)(nil)

// Set makes lifecycle answer s for s.ID.
func (f *Sessions) Set(s domain.Session) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sessions == nil {
		f.sessions = map[int64]domain.Session{}
	}
	f.sessions[s.ID] = s
}

// Fail makes every Get answer err (nil: answer again).
func (f *Sessions) Fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

// Get implements app.Sessions.
func (f *Sessions) Get(_ context.Context, id int64) (domain.Session, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.Now != nil {
		f.asked = append(f.asked, f.Now())
	}
	if f.err != nil {
		return domain.Session{}, f.err
	}
	s, ok := f.sessions[id]
	if !ok {
		return domain.Session{}, fmt.Errorf("session %d: %w", id, domain.ErrSessionGone)
	}
	return s, nil
}

// Asked returns when Get was called (with Now set).
func (f *Sessions) Asked() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.asked)
}

// Pusher records the pushes it was asked to start.
type Pusher struct {
	mu     sync.Mutex
	pushed []domain.Notification
	err    error
}

var _ app.Pusher = (*Pusher)(nil)

// Fail makes every Push answer err (nil: push again).
func (p *Pusher) Fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.err = err
}

// Push implements app.Pusher.
func (p *Pusher) Push(_ context.Context, n domain.Notification) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return p.err
	}
	p.pushed = append(p.pushed, clone(n))
	return nil
}

// Pushed returns the notifications pushed, in order.
func (p *Pusher) Pushed() []domain.Notification {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.pushed)
}

// Debouncer records the pauses it was told about.
type Debouncer struct {
	mu     sync.Mutex
	paused []Pause
}

// Pause is one Paused call.
type Pause struct {
	SessionID, Marker int64
	At                time.Time
}

var _ app.Debouncer = (*Debouncer)(nil)

// Paused implements app.Debouncer.
func (d *Debouncer) Paused(_ context.Context, sessionID, marker int64, at time.Time) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.paused = append(d.paused, Pause{sessionID, marker, at})
	return nil
}

// Pauses returns the pauses told, in order.
func (d *Debouncer) Pauses() []Pause {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.paused)
}
