// Package clients holds the queue's adapters to other Zimmer services.
package clients

import (
	"context"
	"fmt"
	"strconv"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/platform/validation"
	"github.com/zimmerhq/zimmer/services/queue/internal/app"
)

// Lifecycle resolves sessions through lifecycle's GetSession, called as the
// queue service (the connection's identity), never as the queue's caller:
// the queue checks the caller itself (app).
type Lifecycle struct {
	client lifecyclev1.LifecycleServiceClient
}

var (
	_ app.Sessions = (*Lifecycle)(nil)
	_ app.Pauser   = (*Lifecycle)(nil)
	_ app.Timeline = (*Lifecycle)(nil)
)

// NewLifecycle returns the adapter over conn.
func NewLifecycle(conn grpc.ClientConnInterface) *Lifecycle {
	return &Lifecycle{client: lifecyclev1.NewLifecycleServiceClient(conn)}
}

// Get implements app.Sessions. Lifecycle's words are kept: its NotFound
// names the ref, its InvalidArgument says what a ref looks like.
func (l *Lifecycle) Get(ctx context.Context, ref string) (app.Session, error) {
	resp, err := l.client.GetSession(ctx, &lifecyclev1.GetSessionRequest{SessionId: ref})
	if err != nil {
		st, _ := status.FromError(err)
		switch st.Code() {
		case codes.NotFound:
			return app.Session{}, fmt.Errorf("%w: %s", app.ErrSessionNotFound, st.Message())
		case codes.InvalidArgument:
			return app.Session{}, validation.Invalid("session_id", "%s", st.Message())
		}
		return app.Session{}, fmt.Errorf("lifecycle GetSession %q: %w", ref, err)
	}
	return app.Session{ID: resp.GetSession().GetId(), Status: resp.GetSession().GetStatus(),
		RunningJobID: resp.GetSession().GetRunningJobId()}, nil
}

// Note implements app.Timeline: lifecycle's RecordTimelineNote, whose
// note id makes a retried line harmless.
func (l *Lifecycle) Note(ctx context.Context, sessionID int64, noteID, message string) error {
	_, err := l.client.RecordTimelineNote(ctx, &lifecyclev1.RecordTimelineNoteRequest{
		SessionId: sessionID, NoteId: noteID, Message: message,
	})
	if err != nil {
		return fmt.Errorf("note on session %d's timeline: %w", sessionID, err)
	}
	return nil
}

// Pause implements app.Pauser: lifecycle's pause, as the queue service
// (TransitionSession is an admin method a service may call for itself). A
// session that is no longer running has nothing to pause.
func (l *Lifecycle) Pause(ctx context.Context, sessionID int64, pausedBy string) error {
	_, err := l.client.TransitionSession(ctx, &lifecyclev1.TransitionSessionRequest{
		SessionId: strconv.FormatInt(sessionID, 10), Event: "pause", PausedBy: pausedBy,
	})
	if status.Code(err) == codes.FailedPrecondition {
		return nil
	}
	if err != nil {
		return fmt.Errorf("lifecycle pause of session %d: %w", sessionID, err)
	}
	return nil
}
