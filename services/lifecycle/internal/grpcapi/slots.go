package grpcapi

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"google.golang.org/protobuf/types/known/timestamppb"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/app"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/wire"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// WithSlots gives the server the turn slots and the spot queue (LC-36).
func (s *Server) WithSlots(uc app.Slots) *Server {
	s.slots = &uc
	return s
}

// PauseIntoSpotQueue implements lifecyclev1.LifecycleServiceServer.
func (s *Server) PauseIntoSpotQueue(ctx context.Context, req *lifecyclev1.PauseIntoSpotQueueRequest) (*lifecyclev1.PauseIntoSpotQueueResponse, error) {
	if s.slots == nil {
		return nil, s.toStatus(ctx, fmt.Errorf("no spot scheduler is configured: %w", domain.ErrUnavailable))
	}
	sess, err := s.slots.PauseIntoSpotQueue(ctx, req.GetSessionId(), actor(ctx, req.ActingSessionId))
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	msg, err := s.sessionWithWait(ctx, sess)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	words := fmt.Sprintf("Session %d sleeps in the spot queue with no wake armed; the spot scheduler resumes it when a turn slot is free.", sess.ID)
	switch w := msg.GetSlotWait(); {
	case sess.Status != domain.StatusWaiting:
		words = fmt.Sprintf("Session %d was paused into the spot queue and a turn slot was free: the spot scheduler resumed it (%s).", sess.ID, sess.Status)
	case w != nil:
		words += fmt.Sprintf(" It is number %d in line (GET /api/v1/sessions?view=ranked).", w.GetPosition())
	}
	return &lifecyclev1.PauseIntoSpotQueueResponse{Session: msg, Message: words}, nil
}

// GetTurnSlots implements lifecyclev1.LifecycleServiceServer.
func (s *Server) GetTurnSlots(ctx context.Context, _ *lifecyclev1.GetTurnSlotsRequest) (*lifecyclev1.GetTurnSlotsResponse, error) {
	if s.slots == nil {
		return nil, s.toStatus(ctx, fmt.Errorf("no turn slots are configured: %w", domain.ErrUnavailable))
	}
	u, err := s.slots.Usage(ctx)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &lifecyclev1.GetTurnSlotsResponse{Slots: turnSlots(u)}, nil
}

// UpdateTurnSlots implements lifecyclev1.LifecycleServiceServer.
func (s *Server) UpdateTurnSlots(ctx context.Context, req *lifecyclev1.UpdateTurnSlotsRequest) (*lifecyclev1.UpdateTurnSlotsResponse, error) {
	if s.slots == nil {
		return nil, s.toStatus(ctx, fmt.Errorf("no turn slots are configured: %w", domain.ErrUnavailable))
	}
	var limit *int
	if req.Limit != nil {
		n := int(req.GetLimit())
		limit = &n
	}
	u, err := s.slots.SetLimit(ctx, limit, req.GetUseEnvironment())
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &lifecyclev1.UpdateTurnSlotsResponse{Slots: turnSlots(u)}, nil
}

// AcquireTurnSlot implements lifecyclev1.LifecycleServiceServer.
func (s *Server) AcquireTurnSlot(ctx context.Context, req *lifecyclev1.AcquireTurnSlotRequest) (*lifecyclev1.AcquireTurnSlotResponse, error) {
	if s.slots == nil {
		// No slots configured in this lifecycle: every turn runs at once.
		return &lifecyclev1.AcquireTurnSlotResponse{Granted: true}, nil
	}
	a, err := s.slots.Acquire(ctx, req.GetSessionId(), req.GetTurnId(), req.GetNode())
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	resp := &lifecyclev1.AcquireTurnSlotResponse{Granted: a.Granted}
	if !a.Granted {
		resp.Wait = slotWait(a.Wait)
	}
	return resp, nil
}

// SetNodeTurnSlots implements lifecyclev1.LifecycleServiceServer.
func (s *Server) SetNodeTurnSlots(ctx context.Context, req *lifecyclev1.SetNodeTurnSlotsRequest) (*lifecyclev1.SetNodeTurnSlotsResponse, error) {
	if s.slots == nil {
		return &lifecyclev1.SetNodeTurnSlotsResponse{}, nil
	}
	var limit *int
	if req.Limit != nil {
		n := int(req.GetLimit())
		limit = &n
	}
	if err := s.slots.SetNodeLimit(ctx, req.GetNode(), limit); err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &lifecyclev1.SetNodeTurnSlotsResponse{}, nil
}

// ReleaseTurnSlot implements lifecyclev1.LifecycleServiceServer.
func (s *Server) ReleaseTurnSlot(ctx context.Context, req *lifecyclev1.ReleaseTurnSlotRequest) (*lifecyclev1.ReleaseTurnSlotResponse, error) {
	if s.slots == nil {
		return &lifecyclev1.ReleaseTurnSlotResponse{}, nil
	}
	granted, err := s.slots.Release(ctx, req.GetSessionId())
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &lifecyclev1.ReleaseTurnSlotResponse{GrantedSessionIds: granted}, nil
}

// sessionWithWait is the session on the wire with its slot wait, if any.
func (s *Server) sessionWithWait(ctx context.Context, sess domain.Session) (*lifecyclev1.Session, error) {
	msg, err := wire.Session(sess)
	if err != nil {
		return nil, err
	}
	if err := s.withWaits(ctx, []*lifecyclev1.Session{msg}); err != nil {
		return nil, err
	}
	return msg, nil
}

// withWaits sets the slot wait of each listed session in line.
func (s *Server) withWaits(ctx context.Context, msgs []*lifecyclev1.Session) error {
	if s.slots == nil || len(msgs) == 0 {
		return nil
	}
	waits, err := s.slots.Waits(ctx)
	if err != nil {
		return err
	}
	for _, m := range msgs {
		if w, ok := waits[m.GetId()]; ok {
			m.SlotWait = slotWait(w)
		}
	}
	return nil
}

// rankedPage is ListSessions' ranked view: the line in run order, paged;
// only the scheduling_class filter applies to it.
func (s *Server) rankedPage(ctx context.Context, req *lifecyclev1.ListSessionsRequest) (*lifecyclev1.ListSessionsResponse, error) {
	if len(req.GetStatus()) > 0 || req.GetQ() != "" || req.GetAgentRoot() != "" || req.GetGenesis() != "" || req.GetShowArchived() {
		return nil, validation.Invalid("view", "the ranked view lists the spot queue in run order; of the filters only scheduling_class applies to it, so leave status, q, agent_root, genesis and show_archived out")
	}
	if s.slots == nil {
		return nil, fmt.Errorf("no spot scheduler is configured: %w", domain.ErrUnavailable)
	}
	f, err := domain.ListRequest{SchedulingClass: req.GetSchedulingClass(), Page: int(req.GetPage()), PerPage: int(req.GetPerPage())}.Filter()
	if err != nil {
		return nil, err
	}
	line, err := s.slots.Ranked(ctx)
	if err != nil {
		return nil, err
	}
	waits := domain.SlotWaits(line)
	var picked []domain.SlotCandidate
	for _, c := range line {
		if f.SchedulingClass == "" || f.SchedulingClass == c.Class {
			picked = append(picked, c)
		}
	}
	page, perPage := f.Page, f.PerPage
	total := len(picked)
	from := min((page-1)*perPage, total)
	to := min(from+perPage, total)
	resp := &lifecyclev1.ListSessionsResponse{
		Sessions: make([]*lifecyclev1.Session, 0, to-from),
		Pagination: &lifecyclev1.Pagination{
			Page: int32(page), PerPage: int32(perPage), TotalCount: int64(total),
			TotalPages: int32((total + perPage - 1) / perPage),
		},
	}
	for _, c := range picked[from:to] {
		sess, err := s.sessions.Get.Handle(ctx, fmt.Sprint(c.SessionID))
		if err != nil {
			return nil, err
		}
		msg, err := wire.Session(sess.Summary())
		if err != nil {
			return nil, err
		}
		msg.SlotWait = slotWait(waits[c.SessionID])
		resp.Sessions = append(resp.Sessions, msg)
	}
	return resp, nil
}

func slotWait(w domain.SlotWait) *lifecyclev1.SlotWait {
	return &lifecyclev1.SlotWait{Reason: w.Reason, Position: int32(w.Position), Since: timestamppb.New(w.Since)}
}

func turnSlots(u app.SlotUsage) *lifecyclev1.TurnSlots {
	t := &lifecyclev1.TurnSlots{Source: u.Limit.Source, InUse: int32(u.InUse),
		WaitingTurns: int32(u.WaitingTurns), SpotSleepers: int32(u.SpotSleepers)}
	if u.Limit.Slots != nil {
		n := int32(*u.Limit.Slots)
		t.Limit = &n
	}
	for _, node := range slices.Sorted(maps.Keys(u.Nodes)) {
		ns := u.Nodes[node]
		n := &lifecyclev1.NodeTurnSlots{Node: node, InUse: int32(ns.Held)}
		if ns.Limit != nil {
			l := int32(*ns.Limit)
			n.Limit = &l
		}
		t.Nodes = append(t.Nodes, n)
	}
	return t
}
