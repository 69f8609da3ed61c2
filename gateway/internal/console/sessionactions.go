package console

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"
)

// sessionRoutes are the session page's actions beyond its status header's
// pause, archive and restore, and its transcript's live stream. Each is a
// thin call of the service that owns what it changes; a refusal comes
// back on the page in that service's words.
func (h *Handler) sessionRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /console/sessions/{id}/restart", h.mutating(h.act("lifecycle", h.restart, nil)))
	mux.HandleFunc("POST /console/sessions/{id}/pause-until", h.mutating(h.act("lifecycle", h.pauseUntil, keepWakeDraft)))
	mux.HandleFunc("POST /console/sessions/{id}/title", h.mutating(h.act("lifecycle", h.updateTitle, keepTitleDraft)))
	mux.HandleFunc("POST /console/sessions/{id}/notes", h.mutating(h.act("lifecycle", h.updateNotes, keepNotesDraft)))
	mux.HandleFunc("POST /console/sessions/{id}/triggers/{tid}/cancel", h.mutating(h.act("lifecycle", h.cancelTrigger, nil)))
	mux.HandleFunc("POST /console/sessions/{id}/queue/{mid}/send-now", h.mutating(h.act("queue", h.sendNow, nil)))
	mux.HandleFunc("POST /console/sessions/{id}/queue/{mid}/interrupt", h.mutating(h.act("queue", h.interrupt, nil)))
	mux.HandleFunc("POST /console/sessions/{id}/queue/{mid}/move", h.mutating(h.act("queue", h.move, nil)))
	mux.HandleFunc("POST /console/sessions/{id}/queue/{mid}/delete", h.mutating(h.act("queue", h.deleteMessage, nil)))
	mux.HandleFunc("GET /console/sessions/{id}/transcript/stream", h.signedIn(h.transcriptStream))
	// Signed in or not, like the dashboard's: a stream whose sign-in ended
	// says so in the page (relayChanges).
	mux.HandleFunc("GET /console/sessions/{id}/live", h.sessionLive)
}

// restart is the deliberate resume: a failed session restarts, an idle
// one (needs_input, or asleep in waiting) gets its next turn now. The
// form's key (one per rendered page) is lifecycle's idempotency key, so a
// resubmitted form restarts once, even across a gateway restart.
func (h *Handler) restart(ctx context.Context, r *http.Request) (string, error) {
	resp, err := h.clients.Lifecycle.RestartSession(ctx, &lifecyclev1.RestartSessionRequest{
		SessionId: r.PathValue("id"), IdempotencyKey: r.PostForm.Get("idempotency_key"),
	})
	if err != nil {
		return "", err
	}
	if resp.GetAlreadyApplied() {
		return AlreadyDone, nil
	}
	if m := resp.GetMessage(); m != "" {
		return m, nil
	}
	return fmt.Sprintf("Session #%d resumed.", resp.GetSession().GetId()), nil
}

// pauseUntil is the operator's Pause Until: wake_at as the browser's
// date-time picker sends it (naive, to the minute) read in timezone (the
// browser's zone, which the page's script fills in; UTC without it).
// Lifecycle reads both, by the one rule wake_me_up_later uses too.
func (h *Handler) pauseUntil(ctx context.Context, r *http.Request) (string, error) {
	resp, err := h.clients.Triggers.PauseUntil(ctx, &lifecyclev1.PauseUntilRequest{
		SessionId: r.PathValue("id"), WakeAtText: r.PostForm.Get("wake_at"),
		Timezone: strings.TrimSpace(r.PostForm.Get("timezone")), Prompt: r.PostForm.Get("prompt"),
	})
	if err != nil {
		return "", err
	}
	if m := resp.GetMessage(); m != "" {
		return m, nil
	}
	t := resp.GetTrigger()
	return fmt.Sprintf("Session #%d is paused until %s.", resp.GetSession().GetId(), inZone(t.GetFireAt(), t.GetTimezone())), nil
}

func keepWakeDraft(d *sessionData, r *http.Request) {
	d.WakeAtDraft, d.TimezoneDraft, d.WakePromptDraft = r.PostForm.Get("wake_at"), r.PostForm.Get("timezone"), r.PostForm.Get("prompt")
}

func (h *Handler) updateTitle(ctx context.Context, r *http.Request) (string, error) {
	title := r.PostForm.Get("title")
	if _, err := h.clients.Lifecycle.UpdateSession(ctx, &lifecyclev1.UpdateSessionRequest{SessionId: r.PathValue("id"), Title: &title}); err != nil {
		return "", err
	}
	return "Title saved.", nil
}

func keepTitleDraft(d *sessionData, r *http.Request) {
	title := r.PostForm.Get("title")
	d.TitleDraft = &title
}

func (h *Handler) updateNotes(ctx context.Context, r *http.Request) (string, error) {
	notes := r.PostForm.Get("notes")
	if _, err := h.clients.Lifecycle.UpdateSession(ctx, &lifecyclev1.UpdateSessionRequest{SessionId: r.PathValue("id"), Notes: &notes}); err != nil {
		return "", err
	}
	return "Notes saved.", nil
}

func keepNotesDraft(d *sessionData, r *http.Request) {
	notes := r.PostForm.Get("notes")
	d.NotesDraft = &notes
}

func (h *Handler) cancelTrigger(ctx context.Context, r *http.Request) (string, error) {
	tid, err := positiveNumber("trigger", r.PathValue("tid"), 64)
	if err != nil {
		return "", err
	}
	if _, err := h.clients.Triggers.CancelTrigger(ctx, &lifecyclev1.CancelTriggerRequest{SessionId: r.PathValue("id"), TriggerId: tid}); err != nil {
		return "", err
	}
	return fmt.Sprintf("Trigger %d cancelled: it will not wake the session.", tid), nil
}

func (h *Handler) sendNow(ctx context.Context, r *http.Request) (string, error) {
	mid, err := positiveNumber("message", r.PathValue("mid"), 64)
	if err != nil {
		return "", err
	}
	resp, err := h.clients.Queue.SendEnqueuedMessageNow(ctx, &queuev1.SendEnqueuedMessageNowRequest{SessionId: r.PathValue("id"), MessageId: mid})
	if err != nil {
		return "", err
	}
	return orWords(resp.GetMessage(), "Message %d sent.", mid), nil
}

func (h *Handler) interrupt(ctx context.Context, r *http.Request) (string, error) {
	mid, err := positiveNumber("message", r.PathValue("mid"), 64)
	if err != nil {
		return "", err
	}
	resp, err := h.clients.Queue.InterruptWithEnqueuedMessage(ctx, &queuev1.InterruptWithEnqueuedMessageRequest{SessionId: r.PathValue("id"), MessageId: mid})
	if err != nil {
		return "", err
	}
	return orWords(resp.GetMessage(), "Message %d delivered.", mid), nil
}

// move reorders a queued message: position 1 is delivered first. The
// queue refuses a position past the queue's end.
func (h *Handler) move(ctx context.Context, r *http.Request) (string, error) {
	mid, err := positiveNumber("message", r.PathValue("mid"), 64)
	if err != nil {
		return "", err
	}
	pos, err := positiveNumber("position", r.PostForm.Get("position"), 32)
	if err != nil {
		return "", err
	}
	resp, err := h.clients.Queue.UpdateEnqueuedMessage(ctx, &queuev1.UpdateEnqueuedMessageRequest{
		SessionId: r.PathValue("id"), MessageId: mid, Position: int32(pos),
	})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("Message %d is now number %d in the queue.", mid, resp.GetEnqueuedMessage().GetPosition()), nil
}

func (h *Handler) deleteMessage(ctx context.Context, r *http.Request) (string, error) {
	mid, err := positiveNumber("message", r.PathValue("mid"), 64)
	if err != nil {
		return "", err
	}
	if _, err := h.clients.Queue.DeleteEnqueuedMessage(ctx, &queuev1.DeleteEnqueuedMessageRequest{SessionId: r.PathValue("id"), MessageId: mid}); err != nil {
		return "", err
	}
	return fmt.Sprintf("Queued message %d deleted: it will not be delivered.", mid), nil
}

func orWords(msg, format string, args ...any) string {
	if msg != "" {
		return msg
	}
	return fmt.Sprintf(format, args...)
}

// formError is a form (or path) the console could not read: a 400 that
// reaches no service.
type formError struct{ msg string }

func (e formError) Error() string { return e.msg }

// positiveNumber reads a form's or path's number (an id, a queue
// position), naming the field when it is not one.
func positiveNumber(field, text string, bits int) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(text), 10, bits)
	if err != nil || n < 1 {
		return 0, formError{fmt.Sprintf("%s: %q is not a positive whole number", field, text)}
	}
	return n, nil
}

// AlreadyDone is the flash of a once-only form submitted again.
const AlreadyDone = "That form was already submitted, so it was not acted on again."
