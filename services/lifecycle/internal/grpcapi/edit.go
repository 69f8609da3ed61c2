package grpcapi

import (
	"context"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/wire"
)

// UpdateSession implements lifecyclev1.LifecycleServiceServer.
func (s *Server) UpdateSession(ctx context.Context, req *lifecyclev1.UpdateSessionRequest) (*lifecyclev1.UpdateSessionResponse, error) {
	p := domain.Patch{
		Title:                    req.Title,
		Slug:                     req.Slug,
		Goal:                     req.Goal,
		Notes:                    req.Notes,
		SchedulingClass:          req.SchedulingClass,
		Precedence:               req.Precedence,
		HeartbeatEnabled:         req.HeartbeatEnabled,
		HeartbeatIntervalSeconds: req.HeartbeatIntervalSeconds,
		PushNotifications:        req.PushNotifications,
		CategoryID:               req.CategoryId,
	}
	if md := req.GetCustomMetadata(); md != nil {
		p.CustomMetadata = md.AsMap()
	}
	sess, err := s.update(ctx, req.GetSessionId(), p)
	if err != nil {
		return nil, err
	}
	if (p.SchedulingClass != nil || p.Precedence != nil) && s.slots != nil {
		// The line's order changed: a session made priority leaves the
		// spot queue now rather than at the schedule's next pass.
		if _, err := s.slots.RunPass(ctx); err != nil {
			s.logger.WarnContext(ctx, "spot scheduler pass after an edit failed; its schedule runs it again", "session_id", sess.GetId(), "error", err)
		}
	}
	return &lifecyclev1.UpdateSessionResponse{Session: sess}, nil
}

// SetSessionHeartbeat implements lifecyclev1.LifecycleServiceServer.
func (s *Server) SetSessionHeartbeat(ctx context.Context, req *lifecyclev1.SetSessionHeartbeatRequest) (*lifecyclev1.SetSessionHeartbeatResponse, error) {
	sess, err := s.update(ctx, req.GetSessionId(), domain.Patch{HeartbeatEnabled: req.Enabled, HeartbeatIntervalSeconds: req.IntervalSeconds})
	if err != nil {
		return nil, err
	}
	return &lifecyclev1.SetSessionHeartbeatResponse{Session: sess}, nil
}

func (s *Server) update(ctx context.Context, ref string, p domain.Patch) (*lifecyclev1.Session, error) {
	ref, err := s.ownRef(ctx, ref)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	if caller, ok := sessionCaller(ctx); ok {
		if err := p.SelfEditable(caller.SessionID); err != nil {
			return nil, s.toStatus(ctx, err)
		}
	}
	sess, err := s.sessions.Update.Handle(ctx, ref, p, auditBy(ctx))
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	msg, err := wire.Session(sess)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return msg, nil
}

// DeleteSession implements lifecyclev1.LifecycleServiceServer.
func (s *Server) DeleteSession(ctx context.Context, req *lifecyclev1.DeleteSessionRequest) (*lifecyclev1.DeleteSessionResponse, error) {
	if err := s.sessions.Delete.Handle(ctx, req.GetSessionId()); err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &lifecyclev1.DeleteSessionResponse{}, nil
}

// GetSettings implements lifecyclev1.LifecycleServiceServer.
func (s *Server) GetSettings(ctx context.Context, _ *lifecyclev1.GetSettingsRequest) (*lifecyclev1.GetSettingsResponse, error) {
	st, err := s.settings.Get(ctx)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &lifecyclev1.GetSettingsResponse{Settings: settingsMsg(st)}, nil
}

// UpdateSettings implements lifecyclev1.LifecycleServiceServer.
func (s *Server) UpdateSettings(ctx context.Context, req *lifecyclev1.UpdateSettingsRequest) (*lifecyclev1.UpdateSettingsResponse, error) {
	st, err := s.settings.Update(ctx, req.ProvenanceViaMcpEnabled)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &lifecyclev1.UpdateSettingsResponse{Settings: settingsMsg(st)}, nil
}

func settingsMsg(st domain.Settings) *lifecyclev1.Settings {
	return &lifecyclev1.Settings{ProvenanceViaMcpEnabled: st.ProvenanceViaMCPEnabled}
}
