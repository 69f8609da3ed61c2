package clone

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
)

// Lifecycle reads sessions from the lifecycle service as the runner.
type Lifecycle struct {
	client lifecyclev1.LifecycleServiceClient
}

var _ Sessions = (*Lifecycle)(nil)

// NewLifecycle returns the reader over conn.
func NewLifecycle(conn grpc.ClientConnInterface) *Lifecycle {
	return &Lifecycle{client: lifecyclev1.NewLifecycleServiceClient(conn)}
}

// State implements Sessions; a session lifecycle does not know is
// "deleted".
func (l *Lifecycle) State(ctx context.Context, id int64) (SessionState, error) {
	got, err := l.client.GetSession(ctx, &lifecyclev1.GetSessionRequest{SessionId: strconv.FormatInt(id, 10)})
	if status.Code(err) == codes.NotFound {
		return SessionState{Status: "deleted"}, nil
	}
	if err != nil {
		return SessionState{}, fmt.Errorf("read session %d: %w", id, err)
	}
	s := got.GetSession()
	return SessionState{Status: s.GetStatus(), ArchivedAt: timeOf(s.GetArchivedAt()), TrashAfter: timeOf(s.GetTrashAfter())}, nil
}

// Note implements Sessions.
func (l *Lifecycle) Note(ctx context.Context, id int64, noteID, message string, warning bool) error {
	_, err := l.client.RecordTimelineNote(ctx, &lifecyclev1.RecordTimelineNoteRequest{
		SessionId: id, NoteId: noteID, Message: message, Warning: warning,
	})
	if err != nil {
		return fmt.Errorf("note on session %d's timeline: %w", id, err)
	}
	return nil
}

func timeOf(ts *timestamppb.Timestamp) *time.Time {
	if ts == nil {
		return nil
	}
	t := ts.AsTime().UTC()
	return &t
}
