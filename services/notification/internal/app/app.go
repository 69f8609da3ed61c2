// Package app holds the notification use cases and the ports they declare.
// Each is a small type depending only on those ports, so it runs the same
// against Postgres or a fake.
package app

import (
	"context"
	"time"

	"github.com/zimmerhq/zimmer/services/notification/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/clock"
)

// AlertRepository stores operational alerts.
type AlertRepository interface {
	// Raise records fresh as a new alert (opened is true) unless a recorded
	// alert absorbs it (domain.Alert.Absorbs), in which case it counts the
	// repeat on that alert (domain.Alert.Repeat at fresh.FirstSeenAt) and
	// returns it. Concurrent raises of one key open at most one alert.
	Raise(ctx context.Context, fresh domain.Alert) (alert domain.Alert, opened bool, err error)
	// List returns up to limit alerts, the most recently opened first.
	List(ctx context.Context, limit int) ([]domain.Alert, error)
	// MarkPagingStarted records that alert id's page was started, at at
	// (the first time only).
	MarkPagingStarted(ctx context.Context, id int64, at time.Time) error
	// PagingNotStarted returns up to limit alerts opened before
	// openedBefore whose page was never recorded started, oldest first.
	PagingNotStarted(ctx context.Context, openedBefore time.Time, limit int) ([]domain.Alert, error)
}

// Pager tells an operator about a newly opened alert. It is called after
// the alert is committed and cannot fail the raise (a retried raise would
// be counted as a repeat and never page): it only starts the page, durably
// (a workflow), and a page it could not start is the re-drive's
// (RedriveStarts). Page returns nil once the page started, or was found
// running (one alert's page is one workflow, joined by a second start).
type Pager interface {
	Page(ctx context.Context, a domain.Alert) error
}

// StartPage starts an opened alert's page and records it started, so the
// re-drive leaves it alone.
type StartPage struct {
	Repo  AlertRepository
	Pager Pager
	Clock clock.Clock
}

// Handle starts a's page. started says whether it did, whatever err says:
// a page started but not recorded started (the record failed) is found
// started by the re-drive, which records it then.
func (uc StartPage) Handle(ctx context.Context, a domain.Alert) (started bool, err error) {
	if err := uc.Pager.Page(ctx, a); err != nil {
		return false, err
	}
	return true, uc.Repo.MarkPagingStarted(ctx, a.ID, uc.Clock.Now())
}

// RaiseAlert opens and pages an alert, or counts a repeat on the open one.
type RaiseAlert struct {
	Repo  AlertRepository
	Pager Pager
	Clock clock.Clock
	// Window is how long an opened alert absorbs repeats of its key.
	Window time.Duration
}

// Handle validates r and raises it; paged says whether it opened an alert.
func (uc RaiseAlert) Handle(ctx context.Context, r domain.Raise) (alert domain.Alert, paged bool, err error) {
	if err := r.Validate(); err != nil {
		return domain.Alert{}, false, err
	}
	alert, paged, err = uc.Repo.Raise(ctx, r.Open(uc.Clock.Now(), uc.Window))
	if err != nil {
		return domain.Alert{}, false, err
	}
	if paged {
		// The alert is committed and the raise answers paged whatever
		// happens here: a page that could not start (the pager says why)
		// or was not recorded started is the re-drive's. The caller
		// hanging up does not stop it.
		_, _ = StartPage{Repo: uc.Repo, Pager: uc.Pager, Clock: uc.Clock}.Handle(context.WithoutCancel(ctx), alert)
	}
	return alert, paged, nil
}

// ListAlerts lists alerts for operators, newest first.
type ListAlerts struct{ Repo AlertRepository }

// Handle validates the page size and lists one page.
func (uc ListAlerts) Handle(ctx context.Context, pageSize int) ([]domain.Alert, error) {
	limit, err := domain.PageSize(pageSize)
	if err != nil {
		return nil, err
	}
	return uc.Repo.List(ctx, limit)
}

// Alerts bundles the alert use cases the transport adapters call.
type Alerts struct {
	Raise RaiseAlert
	List  ListAlerts
}

// NewAlerts wires the alert use cases. A window of zero or less means
// domain.DefaultDedupWindow.
func NewAlerts(repo AlertRepository, pager Pager, clk clock.Clock, window time.Duration) Alerts {
	if window <= 0 {
		window = domain.DefaultDedupWindow
	}
	return Alerts{
		Raise: RaiseAlert{Repo: repo, Pager: pager, Clock: clk, Window: window},
		List:  ListAlerts{Repo: repo},
	}
}
