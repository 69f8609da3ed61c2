package grpcapi

import (
	"context"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/app"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/wire"
)

// WithTriggers gives the server the trigger use cases: TriggerService
// (RegisterTriggers) and RefreshSession.
func (s *Server) WithTriggers(t app.Triggers) *Server {
	s.triggers = t
	return s
}

// RegisterTriggers adds TriggerService to g.
func (s *Server) RegisterTriggers(g *grpc.Server) {
	lifecyclev1.RegisterTriggerServiceServer(g, &triggerServer{s: s})
}

// triggerServer implements lifecyclev1.TriggerServiceServer.
type triggerServer struct {
	lifecyclev1.UnimplementedTriggerServiceServer
	s *Server
}

// timeOrNil reads an optional timestamp.
func timeOrNil(ts *timestamppb.Timestamp) *time.Time {
	if ts == nil {
		return nil
	}
	t := ts.AsTime()
	return &t
}

// wakeAtText is a request's wake_at as text: wake_at_text (JSON's
// wake_at), or the deprecated Timestamp a gRPC caller may still send, as
// RFC 3339 in UTC (a Z), which the one rule reads alike.
func wakeAtText(text string, legacy *timestamppb.Timestamp) string {
	if text != "" || legacy == nil {
		return text
	}
	return legacy.AsTime().UTC().Format(time.RFC3339Nano)
}

// WakeMeUpLater implements lifecyclev1.TriggerServiceServer.
func (t *triggerServer) WakeMeUpLater(ctx context.Context, req *lifecyclev1.WakeMeUpLaterRequest) (*lifecyclev1.WakeMeUpLaterResponse, error) {
	ref, err := t.s.ownRef(ctx, req.GetSessionId())
	if err != nil {
		return nil, t.s.toStatus(ctx, err)
	}
	a, err := t.s.triggers.WakeMeUpLater(ctx, ref, domain.WakeRequest{
		WakeAt:   wakeAtText(req.GetWakeAtText(), req.GetWakeAt()), //nolint:staticcheck // the deprecated field is still read
		Timezone: req.GetTimezone(), Delay: req.GetDelay(), Prompt: req.GetPrompt(),
	}, actor(ctx, nil))
	if err != nil {
		return nil, t.s.toStatus(ctx, err)
	}
	sess, err := wire.Session(a.Session)
	if err != nil {
		return nil, t.s.toStatus(ctx, err)
	}
	return &lifecyclev1.WakeMeUpLaterResponse{Trigger: wire.Trigger(a.Trigger), Session: sess, Message: a.Message}, nil
}

// PauseUntil implements lifecyclev1.TriggerServiceServer.
func (t *triggerServer) PauseUntil(ctx context.Context, req *lifecyclev1.PauseUntilRequest) (*lifecyclev1.PauseUntilResponse, error) {
	a, err := t.s.triggers.PauseUntil(ctx, req.GetSessionId(), domain.WakeRequest{
		WakeAt:   wakeAtText(req.GetWakeAtText(), req.GetWakeAt()), //nolint:staticcheck // the deprecated field is still read
		Timezone: req.GetTimezone(), Prompt: req.GetPrompt(),
	}, actor(ctx, nil))
	if err != nil {
		return nil, t.s.toStatus(ctx, err)
	}
	sess, err := wire.Session(a.Session)
	if err != nil {
		return nil, t.s.toStatus(ctx, err)
	}
	return &lifecyclev1.PauseUntilResponse{Trigger: wire.Trigger(a.Trigger), Session: sess, Message: a.Message}, nil
}

// WatchSession implements lifecyclev1.TriggerServiceServer.
func (t *triggerServer) WatchSession(ctx context.Context, req *lifecyclev1.WatchSessionRequest) (*lifecyclev1.WatchSessionResponse, error) {
	ref, err := t.s.ownRef(ctx, req.GetSessionId())
	if err != nil {
		return nil, t.s.toStatus(ctx, err)
	}
	a, err := t.s.triggers.Watch(ctx, ref, domain.WatchRequest{
		WatchedSessionID: req.GetWatchedSessionId(), States: req.GetStates(), Prompt: req.GetPrompt(),
	}, actor(ctx, nil))
	if err != nil {
		return nil, t.s.toStatus(ctx, err)
	}
	tr := a.Trigger
	m := wire.Trigger(tr)
	sleeps := "is asleep"
	if a.Session.Status == domain.StatusRunning {
		sleeps = "goes to sleep when its turn ends"
	}
	sess, err := wire.Session(a.Session)
	if err != nil {
		return nil, t.s.toStatus(ctx, err)
	}
	return &lifecyclev1.WatchSessionResponse{Trigger: m, Session: sess, Message: fmt.Sprintf(
		"Watcher #%d armed: session %d %s, and gets its next turn when session %d is next %s.",
		tr.ID, tr.SessionID, sleeps, tr.WatchedSessionID, strings.Join(m.GetStates(), " or "))}, nil
}

// ListTriggers implements lifecyclev1.TriggerServiceServer.
func (t *triggerServer) ListTriggers(ctx context.Context, req *lifecyclev1.ListTriggersRequest) (*lifecyclev1.ListTriggersResponse, error) {
	ref, err := t.s.readableRef(ctx, req.GetSessionId())
	if err != nil {
		return nil, t.s.toStatus(ctx, err)
	}
	ts, err := t.s.triggers.List(ctx, ref)
	if err != nil {
		return nil, t.s.toStatus(ctx, err)
	}
	return &lifecyclev1.ListTriggersResponse{Triggers: triggersOut(ts)}, nil
}

// SearchTriggers implements lifecyclev1.TriggerServiceServer.
func (t *triggerServer) SearchTriggers(ctx context.Context, req *lifecyclev1.SearchTriggersRequest) (*lifecyclev1.SearchTriggersResponse, error) {
	ts, err := t.s.triggers.Search(ctx, app.TriggerFilter{
		SessionID: req.GetSessionId(), WatchedSessionID: req.GetWatchedSessionId(),
		Kind: domain.TriggerKind(req.GetKind()), Limit: int(req.GetPageSize()),
	})
	if err != nil {
		return nil, t.s.toStatus(ctx, err)
	}
	return &lifecyclev1.SearchTriggersResponse{Triggers: triggersOut(ts)}, nil
}

// CancelTrigger implements lifecyclev1.TriggerServiceServer.
func (t *triggerServer) CancelTrigger(ctx context.Context, req *lifecyclev1.CancelTriggerRequest) (*lifecyclev1.CancelTriggerResponse, error) {
	ref, err := t.s.ownRef(ctx, req.GetSessionId())
	if err != nil {
		return nil, t.s.toStatus(ctx, err)
	}
	tr, err := t.s.triggers.Cancel(ctx, ref, req.GetTriggerId(), auditBy(ctx))
	if err != nil {
		return nil, t.s.toStatus(ctx, err)
	}
	return &lifecyclev1.CancelTriggerResponse{Trigger: wire.Trigger(tr)}, nil
}

// AwaitingScheduledWake implements lifecyclev1.TriggerServiceServer.
func (t *triggerServer) AwaitingScheduledWake(ctx context.Context, req *lifecyclev1.AwaitingScheduledWakeRequest) (*lifecyclev1.AwaitingScheduledWakeResponse, error) {
	ids, err := t.s.triggers.AwaitingScheduledWake(ctx, req.GetSessionIds())
	if err != nil {
		return nil, t.s.toStatus(ctx, err)
	}
	return &lifecyclev1.AwaitingScheduledWakeResponse{AsleepSessionIds: ids}, nil
}

// RefreshSession implements lifecyclev1.LifecycleServiceServer.
func (s *Server) RefreshSession(ctx context.Context, req *lifecyclev1.RefreshSessionRequest) (*lifecyclev1.RefreshSessionResponse, error) {
	who := actor(ctx, nil)
	who.Bulk = req.GetBulk()
	r, err := s.triggers.Refresh(ctx, req.GetSessionId(), who)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	sess, err := wire.Session(r.Session)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &lifecyclev1.RefreshSessionResponse{Session: sess, Refreshed: r.Refreshed, Message: r.Message}, nil
}

func triggersOut(ts []domain.Trigger) []*lifecyclev1.Trigger {
	out := make([]*lifecyclev1.Trigger, len(ts))
	for i, t := range ts {
		out[i] = wire.Trigger(t)
	}
	return out
}
