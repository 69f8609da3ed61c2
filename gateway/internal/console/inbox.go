package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	notificationv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/notification/v1"
)

const (
	// InboxPageSize is how many notifications the inbox shows a page.
	InboxPageSize = 50
	// AlertsShown is how many of the newest alerts the alerts page lists.
	AlertsShown = 100
)

// inboxRoutes are the notifications inbox and the alerts page, thin calls
// of the notification service.
func (h *Handler) inboxRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /console/notifications", h.signedIn(h.inbox))
	mux.HandleFunc("POST /console/notifications/{nid}/read", h.mutating(h.notificationAction(h.markRead)))
	mux.HandleFunc("POST /console/notifications/{nid}/dismiss", h.mutating(h.notificationAction(h.dismiss)))
	mux.HandleFunc("POST /console/notifications/read-all", h.mutating(h.notificationAction(h.markAllRead)))
	mux.HandleFunc("GET /console/alerts", h.signedIn(h.alerts))
	mux.HandleFunc("GET /console/costs", h.signedIn(h.costs))
}

type inboxData struct {
	Notifications []*notificationv1.Notification
	Unread        int32
	// All: dismissed ones are shown too.
	All bool
	// Older continues the list (the next page's URL), "" at its end.
	Older string
}

func (h *Handler) inbox(w http.ResponseWriter, r *http.Request, cookie string, in signIn) {
	ctx, cancel := context.WithTimeout(r.Context(), callTimeout)
	defer cancel()
	q := r.URL.Query()
	all := q.Get("all") != ""
	resp, err := h.clients.Notifications.ListNotifications(ctx, &notificationv1.ListNotificationsRequest{
		IncludeDismissed: all, PageSize: InboxPageSize, PageToken: q.Get("page_token"),
	})
	if err != nil {
		h.failed(w, r, "notification", err)
		return
	}
	data := inboxData{Notifications: resp.GetNotifications(), Unread: resp.GetUnreadCount(), All: all}
	if next := resp.GetNextPageToken(); next != "" {
		older := url.Values{"page_token": {next}}
		if all {
			older.Set("all", "1")
		}
		data.Older = "/console/notifications?" + older.Encode()
	}
	h.render(w, r, http.StatusOK, "inbox", h.signedInPage(ctx, w, r, in, "Inbox", data))
}

// notificationAction runs one inbox action and comes back to the inbox
// with what it did; a refusal (an unknown notification) is the
// notification service's words on a problem page.
func (h *Handler) notificationAction(call func(ctx context.Context, r *http.Request) (string, error)) func(http.ResponseWriter, *http.Request, string, signIn) {
	return func(w http.ResponseWriter, r *http.Request, cookie string, _ signIn) {
		ctx, cancel := context.WithTimeout(r.Context(), callTimeout)
		defer cancel()
		msg, err := call(ctx, r)
		var bad formError
		switch {
		case errors.As(err, &bad):
			h.problem(w, r, http.StatusBadRequest, bad.Error())
			return
		case err != nil:
			h.failed(w, r, "notification", err)
			return
		}
		h.setFlash(w, r, msg)
		back := "/console/notifications"
		if r.PostForm.Get("all") != "" {
			back += "?all=1"
		}
		http.Redirect(w, r, back, http.StatusSeeOther)
	}
}

func (h *Handler) markRead(ctx context.Context, r *http.Request) (string, error) {
	nid, err := positiveNumber("notification", r.PathValue("nid"), 64)
	if err != nil {
		return "", err
	}
	if _, err := h.clients.Notifications.MarkNotificationRead(ctx, &notificationv1.MarkNotificationReadRequest{NotificationId: nid}); err != nil {
		return "", err
	}
	return "Marked read.", nil
}

func (h *Handler) dismiss(ctx context.Context, r *http.Request) (string, error) {
	nid, err := positiveNumber("notification", r.PathValue("nid"), 64)
	if err != nil {
		return "", err
	}
	if _, err := h.clients.Notifications.DismissNotification(ctx, &notificationv1.DismissNotificationRequest{NotificationId: nid}); err != nil {
		return "", err
	}
	return "Dismissed: it left the inbox (Show dismissed lists it).", nil
}

func (h *Handler) markAllRead(ctx context.Context, _ *http.Request) (string, error) {
	resp, err := h.clients.Notifications.MarkAllNotificationsRead(ctx, &notificationv1.MarkAllNotificationsReadRequest{})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("Marked %d read.", resp.GetMarked()), nil
}

func (h *Handler) alerts(w http.ResponseWriter, r *http.Request, cookie string, in signIn) {
	ctx, cancel := context.WithTimeout(r.Context(), callTimeout)
	defer cancel()
	resp, err := h.clients.Notifications.ListAlerts(ctx, &notificationv1.ListAlertsRequest{PageSize: AlertsShown})
	if err != nil {
		h.failed(w, r, "notification", err)
		return
	}
	h.render(w, r, http.StatusOK, "alerts", h.signedInPage(ctx, w, r, in, "Alerts", resp.GetAlerts()))
}
