// Package apptest holds in-memory fakes of the app ports, for tests of the
// use cases and for the repository contract test that holds the Postgres
// store to the same behaviour.
package apptest

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/zimmerhq/zimmer/services/notification/internal/app"
	"github.com/zimmerhq/zimmer/services/notification/internal/domain"
)

// Alerts is an in-memory app.AlertRepository. One mutex stands in for the
// database's exclusion constraint; the decision is domain.Dedup.
type Alerts struct {
	mu     sync.Mutex
	alerts []domain.Alert
	// pagingStarted is when each alert's page was recorded started.
	pagingStarted map[int64]time.Time
}

var _ app.AlertRepository = (*Alerts)(nil)

// Raise implements app.AlertRepository.
func (f *Alerts) Raise(_ context.Context, fresh domain.Alert) (domain.Alert, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a, opened := domain.Dedup(f.alerts, fresh)
	if opened {
		a.ID = int64(len(f.alerts) + 1)
		f.alerts = append(f.alerts, a)
		return a, true, nil
	}
	f.alerts[a.ID-1] = a
	return a, false, nil
}

// List implements app.AlertRepository.
func (f *Alerts) List(_ context.Context, limit int) ([]domain.Alert, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := slices.Clone(f.alerts)
	slices.SortStableFunc(out, func(a, b domain.Alert) int {
		if c := b.FirstSeenAt.Compare(a.FirstSeenAt); c != 0 {
			return c
		}
		return int(b.ID - a.ID)
	})
	return out[:min(limit, len(out))], nil
}

// MarkPagingStarted implements app.AlertRepository.
func (f *Alerts) MarkPagingStarted(_ context.Context, id int64, at time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.pagingStarted[id]; ok || id < 1 || id > int64(len(f.alerts)) {
		return nil
	}
	if f.pagingStarted == nil {
		f.pagingStarted = map[int64]time.Time{}
	}
	f.pagingStarted[id] = at
	return nil
}

// PagingNotStarted implements app.AlertRepository.
func (f *Alerts) PagingNotStarted(_ context.Context, openedBefore time.Time, limit int) ([]domain.Alert, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := []domain.Alert{}
	for _, a := range f.alerts {
		if _, ok := f.pagingStarted[a.ID]; !ok && a.FirstSeenAt.Before(openedBefore) && len(out) < limit {
			out = append(out, a)
		}
	}
	return out, nil
}

// Pager records the alerts it was asked to page.
type Pager struct {
	mu    sync.Mutex
	pages []domain.Alert
	err   error
}

var _ app.Pager = (*Pager)(nil)

// Fail makes every Page answer err, paging nothing (nil: page again).
func (p *Pager) Fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.err = err
}

// Page implements app.Pager.
func (p *Pager) Page(_ context.Context, a domain.Alert) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return p.err
	}
	p.pages = append(p.pages, a)
	return nil
}

// Pages returns what was paged, in order.
func (p *Pager) Pages() []domain.Alert {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.pages)
}
