package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zimmerhq/zimmer/services/notification/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/clock"
	"github.com/zimmerhq/zimmer/services/platform/principal"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// NotificationRepository stores the operator's notifications.
type NotificationRepository interface {
	// Create stores n unless a notification with its identity exists (a
	// needs_input one of the same session and marker, or one with n's
	// DedupKey), which it returns with created false.
	Create(ctx context.Context, n domain.Notification) (stored domain.Notification, created bool, err error)
	// Delete removes notification id (one whose push could not start, so
	// its sender's retry does not find a twin). No such notification is
	// not an error.
	Delete(ctx context.Context, id int64) error
	// List returns up to f.Limit notifications newest first, and the
	// unread, undismissed ones f's type and session select.
	List(ctx context.Context, f domain.Filter) (rows []domain.Notification, unread int, err error)
	// MarkRead sets id's read_at to at unless it is read already;
	// domain.ErrNotFound when there is no such notification.
	MarkRead(ctx context.Context, id int64, at time.Time) (domain.Notification, error)
	// Dismiss sets id's dismissed_at to at unless it is dismissed already;
	// domain.ErrNotFound when there is no such notification.
	Dismiss(ctx context.Context, id int64, at time.Time) (domain.Notification, error)
	// MarkAllRead marks read at at every unread, undismissed notification
	// (of sessionID when it is not 0) and says how many.
	MarkAllRead(ctx context.Context, sessionID int64, at time.Time) (int, error)
	// MarkPushed records that id's push reached a sink at at (the first
	// time only).
	MarkPushed(ctx context.Context, id int64, at time.Time) (createdAt time.Time, err error)
	// MarkStale applies lifecycle's event eventID once: the notifications
	// r selects (domain.StaleOnResume) become stale at at. applied is false
	// when eventID was applied before.
	MarkStale(ctx context.Context, eventID string, r domain.StaleOnResume, at time.Time) (applied bool, err error)
	// DismissSession applies lifecycle's event eventID once: sessionID's
	// notifications created up to createdUpTo are dismissed at at. applied
	// is false when eventID was applied before.
	DismissSession(ctx context.Context, eventID string, sessionID int64, createdUpTo, at time.Time) (applied bool, err error)
	// MarkPushStarted records that id's push (its own, push/<id>) was
	// started, at at (the first time only).
	MarkPushStarted(ctx context.Context, id int64, at time.Time) error
	// PushNotStarted returns up to limit notifications created before
	// createdBefore that are pushed on their own (every type but
	// needs_input, which its debounce delivers), whose push was never
	// recorded started and never reached a sink, oldest first.
	PushNotStarted(ctx context.Context, createdBefore time.Time, limit int) ([]domain.Notification, error)
}

// Sessions reads sessions from lifecycle, as the notification service.
type Sessions interface {
	// Get returns session id as it is now; domain.ErrSessionGone when
	// lifecycle no longer knows it.
	Get(ctx context.Context, id int64) (domain.Session, error)
}

// Pusher pushes a stored notification to every sink of the push route,
// each retried until it delivers or gives up. It only starts the push, so
// a slow sink holds up no caller, and starting it twice pushes once.
type Pusher interface {
	Push(ctx context.Context, n domain.Notification) error
}

// ErrNotStarted: a push or a debounce could not be started now (Temporal
// did not take it). Retrying shortly may succeed, so the call or the
// effect is answered unavailable; a stored notification's push is also
// started by the re-drive.
var ErrNotStarted = errors.New("could not start it on Temporal")

// StartPush starts a stored notification's own push (not a needs_input
// one's: its debounce delivers it) and records it started, so the re-drive
// leaves it alone.
type StartPush struct {
	Repo   NotificationRepository
	Pusher Pusher
	Clock  clock.Clock
}

// Handle starts n's push. started says whether it did, whatever err says:
// a push started but not recorded started (the record failed) is found
// started by the re-drive, which records it then.
func (uc StartPush) Handle(ctx context.Context, n domain.Notification) (started bool, err error) {
	if err := uc.Pusher.Push(ctx, n); err != nil {
		return false, err
	}
	return true, uc.Repo.MarkPushStarted(ctx, n.ID, uc.Clock.Now())
}

// Debouncer schedules a session's needs-input push: the push for the
// latest pause goes out once no other pause followed for the debounce,
// counted from when the pause happened (at), if the session is then still
// waiting from it (RecordNeedsInput).
type Debouncer interface {
	Paused(ctx context.Context, sessionID, marker int64, at time.Time) error
}

// ErrNoDebounce: this service runs no debounce (it has no Temporal), so a
// pause's push cannot be scheduled; the effect is refused as unavailable
// and lifecycle keeps it until a service with Temporal takes it.
var ErrNoDebounce = errors.New("this notification service runs no needs-input debounce (no Temporal)")

// ListNotifications lists one page of the inbox.
type ListNotifications struct{ Repo NotificationRepository }

// Handle lists the page f selects.
func (uc ListNotifications) Handle(ctx context.Context, f domain.Filter) (domain.Page, error) {
	asked := f
	asked.Limit++ // one more says another page follows
	rows, unread, err := uc.Repo.List(ctx, asked)
	if err != nil {
		return domain.Page{}, err
	}
	return domain.NewPage(f, rows, unread), nil
}

// MarkNotificationRead marks one notification read.
type MarkNotificationRead struct {
	Repo  NotificationRepository
	Clock clock.Clock
}

// Handle marks id read; reading it again changes nothing.
func (uc MarkNotificationRead) Handle(ctx context.Context, id int64) (domain.Notification, error) {
	if err := checkID(id); err != nil {
		return domain.Notification{}, err
	}
	return uc.Repo.MarkRead(ctx, id, uc.Clock.Now())
}

// DismissNotification dismisses one notification.
type DismissNotification struct {
	Repo  NotificationRepository
	Clock clock.Clock
}

// Handle dismisses id; dismissing it again changes nothing.
func (uc DismissNotification) Handle(ctx context.Context, id int64) (domain.Notification, error) {
	if err := checkID(id); err != nil {
		return domain.Notification{}, err
	}
	return uc.Repo.Dismiss(ctx, id, uc.Clock.Now())
}

// MarkAllNotificationsRead marks the inbox read.
type MarkAllNotificationsRead struct {
	Repo  NotificationRepository
	Clock clock.Clock
}

// Handle marks every unread, undismissed notification read (of sessionID
// when it is not 0).
func (uc MarkAllNotificationsRead) Handle(ctx context.Context, sessionID int64) (int, error) {
	if sessionID < 0 {
		return 0, validation.Invalid("session_id", "is %d; use the session's id, or 0 for every session", sessionID)
	}
	return uc.Repo.MarkAllRead(ctx, sessionID, uc.Clock.Now())
}

// SendPushNotification stores an agent's message and pushes it at once.
type SendPushNotification struct {
	Repo   NotificationRepository
	Pusher Pusher
	Clock  clock.Clock
}

// Handle attributes m to the calling session (a session credential sends
// as its own session, whatever m says; a key or a service sends as the
// session it names), stores it and starts its push. When the push cannot
// start the notification is removed again and the error returned, so the
// sender's retry neither loses the push nor doubles the inbox entry. One
// stored but never started (the process died in between) is the
// re-drive's.
func (uc SendPushNotification) Handle(ctx context.Context, m domain.AgentMessage) (domain.Notification, error) {
	if p, ok := principal.FromContext(ctx); ok && p.Kind == principal.Session {
		m.SessionID = p.SessionID
	}
	if err := m.Validate(); err != nil {
		return domain.Notification{}, err
	}
	n, _, err := uc.Repo.Create(ctx, m.Notification(uc.Clock.Now()))
	if err != nil {
		return domain.Notification{}, err
	}
	if started, err := StartPush(uc).Handle(ctx, n); !started {
		if derr := uc.Repo.Delete(context.WithoutCancel(ctx), n.ID); derr != nil {
			return domain.Notification{}, errors.Join(err, fmt.Errorf("remove the unpushed notification %d: %w", n.ID, derr))
		}
		return domain.Notification{}, err
	}
	return n, nil
}

// NeedsInputPaused is lifecycle's enqueue_debounced_needs_input_push_notification:
// a session paused, and its push waits out the debounce.
type NeedsInputPaused struct{ Debouncer Debouncer }

// Handle schedules the push of s's pause marker, which happened at at —
// only where a push could be sent: s is the session as the pause left it,
// and a pause that earns no push by then (domain.NeedsInputRefusal: opted
// out, or gone straight to sleep) starts no debounce, which would wait a
// minute to find the same. skipped says why, or "". It only signals: the
// transition that paused the session waits for nothing.
func (uc NeedsInputPaused) Handle(ctx context.Context, s domain.Session, marker int64, at time.Time) (skipped string, err error) {
	if why := domain.NeedsInputRefusal(s, marker); why != "" {
		return why, nil
	}
	if uc.Debouncer == nil {
		return "", ErrNoDebounce
	}
	return "", uc.Debouncer.Paused(ctx, s.ID, marker, at)
}

// NeedsInputOutcome is what the end of a pause's debounce found.
type NeedsInputOutcome struct {
	// Notification is the pause's notification, when it earned one.
	Notification domain.Notification
	// Deliver: it has not reached a sink yet, so the debounce delivers it.
	Deliver bool
	// Skipped says why the pause earns no push, or "".
	Skipped string
}

// RecordNeedsInput ends a pause's debounce: it asks lifecycle how the
// session is now and, when the pause still earns a push
// (domain.NeedsInputRefusal), creates its notification, which the debounce
// then delivers. Run again for the same pause it creates nothing more, and
// asks for no delivery once one reached a sink.
type RecordNeedsInput struct {
	Repo     NotificationRepository
	Sessions Sessions
	Clock    clock.Clock
}

// Handle ends the debounce of sessionID's pause marker.
func (uc RecordNeedsInput) Handle(ctx context.Context, sessionID, marker int64) (NeedsInputOutcome, error) {
	s, err := uc.Sessions.Get(ctx, sessionID)
	if errors.Is(err, domain.ErrSessionGone) {
		return NeedsInputOutcome{Skipped: fmt.Sprintf("session %d no longer exists", sessionID)}, nil
	}
	if err != nil {
		return NeedsInputOutcome{}, err
	}
	if why := domain.NeedsInputRefusal(s, marker); why != "" {
		return NeedsInputOutcome{Skipped: why}, nil
	}
	n, _, err := uc.Repo.Create(ctx, domain.NeedsInput(s, marker, uc.Clock.Now()))
	if err != nil {
		return NeedsInputOutcome{}, err
	}
	return NeedsInputOutcome{Notification: n, Deliver: n.PushedAt == nil}, nil
}

// PushFailure is lifecycle's enqueue_failure_push_notification: immediate
// and unconditional (a failure is final, so it ignores push_notifications).
type PushFailure struct {
	Repo   NotificationRepository
	Pusher Pusher
	Clock  clock.Clock
}

// Handle creates the failure notification of lifecycle's event eventID,
// which occurred at occurredAt, about s and starts its push. A redelivered event finds its notification
// and starts the push only if it has not reached a sink yet; created says
// whether this delivery created it. A push that cannot start fails the
// effect, so lifecycle redelivers it; the re-drive starts it meanwhile.
func (uc PushFailure) Handle(ctx context.Context, eventID string, occurredAt time.Time, s domain.Session, reason string) (created bool, err error) {
	n := domain.Failure(s, reason, eventID, uc.Clock.Now())
	n.OccurredAt = occurredAt
	n, created, err = uc.Repo.Create(ctx, n)
	if err != nil {
		return false, err
	}
	if n.PushedAt != nil {
		return created, nil
	}
	if started, err := StartPush(uc).Handle(ctx, n); !started {
		return false, err
	}
	return created, nil
}

// MarkNotificationsStale is lifecycle's mark_notifications_stale: the
// session resumed, so what its notifications said about it — a wait, a
// failure, an agent's word — is over.
type MarkNotificationsStale struct {
	Repo  NotificationRepository
	Clock clock.Clock
}

// Handle applies event eventID, a resume of sessionID at resumedAt: every
// active notification of the session about what happened before it becomes
// stale (domain.StaleOnResume) — failures included, never another
// session's.
func (uc MarkNotificationsStale) Handle(ctx context.Context, eventID string, sessionID, needsInputCount int64, resumedAt time.Time) (bool, error) {
	return uc.Repo.MarkStale(ctx, eventID, domain.StaleOnResume{SessionID: sessionID, NeedsInputCount: needsInputCount, ResumedAt: resumedAt}, uc.Clock.Now())
}

// DismissSessionNotifications is lifecycle's dismiss_notifications: the
// session was archived.
type DismissSessionNotifications struct {
	Repo  NotificationRepository
	Clock clock.Clock
}

// Handle applies event eventID, which occurred at occurredAt: the session's
// notifications created until then are dismissed (one created after, by an
// unarchived session, is not the archive's to dismiss).
func (uc DismissSessionNotifications) Handle(ctx context.Context, eventID string, sessionID int64, occurredAt time.Time) (bool, error) {
	return uc.Repo.DismissSession(ctx, eventID, sessionID, occurredAt, uc.Clock.Now())
}

// MarkPushed records that a notification's push reached a sink.
type MarkPushed struct {
	Repo  NotificationRepository
	Clock clock.Clock
}

// Handle marks id pushed now. The first time, it returns how long the
// push took from the notification's creation (when Zimmer decided to
// push: the debounce's end, or at once) to the first sink having it;
// first is false when id was already marked.
func (uc MarkPushed) Handle(ctx context.Context, id int64) (took time.Duration, first bool, err error) {
	now := uc.Clock.Now()
	created, err := uc.Repo.MarkPushed(ctx, id, now)
	if err != nil || created.IsZero() {
		return 0, false, err
	}
	return now.Sub(created), true, nil
}

// Notifications bundles the notification use cases the adapters call.
type Notifications struct {
	List        ListNotifications
	MarkRead    MarkNotificationRead
	Dismiss     DismissNotification
	MarkAllRead MarkAllNotificationsRead
	Send        SendPushNotification

	Paused     NeedsInputPaused
	NeedsInput RecordNeedsInput
	Failure    PushFailure
	Stale      MarkNotificationsStale
	Archived   DismissSessionNotifications
	Pushed     MarkPushed
}

// NewNotifications wires the notification use cases. debouncer may be nil
// (no Temporal): a pause's push is then refused with ErrNoDebounce.
func NewNotifications(repo NotificationRepository, sessions Sessions, pusher Pusher, debouncer Debouncer, clk clock.Clock) Notifications {
	return Notifications{
		List:        ListNotifications{Repo: repo},
		MarkRead:    MarkNotificationRead{Repo: repo, Clock: clk},
		Dismiss:     DismissNotification{Repo: repo, Clock: clk},
		MarkAllRead: MarkAllNotificationsRead{Repo: repo, Clock: clk},
		Send:        SendPushNotification{Repo: repo, Pusher: pusher, Clock: clk},
		Paused:      NeedsInputPaused{Debouncer: debouncer},
		NeedsInput:  RecordNeedsInput{Repo: repo, Sessions: sessions, Clock: clk},
		Failure:     PushFailure{Repo: repo, Pusher: pusher, Clock: clk},
		Stale:       MarkNotificationsStale{Repo: repo, Clock: clk},
		Archived:    DismissSessionNotifications{Repo: repo, Clock: clk},
		Pushed:      MarkPushed{Repo: repo, Clock: clk},
	}
}

func checkID(id int64) error {
	if id <= 0 {
		return validation.Invalid("notification_id", "is %d; use the id ListNotifications returned", id)
	}
	return nil
}
