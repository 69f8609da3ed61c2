package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zimmerhq/zimmer/services/platform/clock"
)

// RedriveAfter is how long a page or a push may stay unstarted after its
// row committed before the re-drive starts it: far longer than a raise or
// a send waits for its start (seconds), so the re-drive does not race a
// start in progress, and short enough that a lost one goes out within
// about two minutes (the re-drive runs as often).
const RedriveAfter = time.Minute

// RedriveBatch bounds how many pages, and how many pushes, one run of the
// re-drive starts; the next run takes the rest.
const RedriveBatch = 100

// RedriveStarts starts what was committed but never started: the page of
// an alert whose start failed or was lost (the process died between the
// raise's commit and the start), and the push of a failure or an agent's
// message likewise. Starting is idempotent (the workflow ids alert/<id>
// and push/<id>), so one started but not recorded is found started and
// recorded. Needs-input pushes are not its: a pause's effect is answered
// only once its debounce took the signal, so lifecycle redelivers one that
// did not.
type RedriveStarts struct {
	Page StartPage
	Push StartPush
}

// NewRedrive wires the re-drive: pager starts pages (without the raise's
// fallback to the log, which paged already), pusher starts pushes.
func NewRedrive(alerts AlertRepository, notifications NotificationRepository, pager Pager, pusher Pusher, clk clock.Clock) RedriveStarts {
	return RedriveStarts{
		Page: StartPage{Repo: alerts, Pager: pager, Clock: clk},
		Push: StartPush{Repo: notifications, Pusher: pusher, Clock: clk},
	}
}

// Handle starts the pages of alerts opened before cutoff and the pushes of
// notifications created before cutoff that were never started, up to
// RedriveBatch of each, and says how many it started. One that cannot start
// now is left to the next run; the error names each.
func (uc RedriveStarts) Handle(ctx context.Context, cutoff time.Time) (int64, error) {
	var (
		started int64
		errs    []error
	)
	alerts, err := uc.Page.Repo.PagingNotStarted(ctx, cutoff, RedriveBatch)
	if err != nil {
		errs = append(errs, err)
	}
	for _, a := range alerts {
		ok, err := uc.Page.Handle(ctx, a)
		if ok {
			started++
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("re-drive the page of alert %d: %w", a.ID, err))
		}
	}
	pushes, err := uc.Push.Repo.PushNotStarted(ctx, cutoff, RedriveBatch)
	if err != nil {
		errs = append(errs, err)
	}
	for _, n := range pushes {
		ok, err := uc.Push.Handle(ctx, n)
		if ok {
			started++
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("re-drive the push of notification %d: %w", n.ID, err))
		}
	}
	return started, errors.Join(errs...)
}
