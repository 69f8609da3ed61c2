package grpcapi

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	runnerv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/runner/v1"
	"github.com/zimmerhq/zimmer/services/platform/validation"
	"github.com/zimmerhq/zimmer/services/runner/internal/domain"
)

// CostStore keeps the cost entries (store.Costs).
type CostStore interface {
	Record(ctx context.Context, at time.Time, entries ...domain.CostEntry) error
	Report(ctx context.Context, q domain.CostQuery) (domain.CostReport, error)
}

// CostSessions resolves a session's slug to its id (lifecycle's
// GetSession): the runner keeps ids only.
type CostSessions interface {
	SessionID(ctx context.Context, ref string) (int64, error)
}

// Costs is what GetCosts and RecordMcpResponse need: the store, the clock
// that dates an entry and says which day is today, and (on a runner node)
// lifecycle, which resolves a session_id that is a slug; without it only
// numeric ids are taken.
type Costs struct {
	Store    CostStore
	Now      func() time.Time
	Sessions CostSessions
}

// WithCosts serves GetCosts and RecordMcpResponse from c.
func (s *Server) WithCosts(c Costs) *Server {
	if c.Now == nil {
		c.Now = time.Now
	}
	s.costs = c
	return s
}

// WithCostSessions lets GetCosts take a slug for session_id, resolved by
// sessions (lifecycle, on a runner node).
func (s *Server) WithCostSessions(sessions CostSessions) *Server {
	s.costs.Sessions = sessions
	return s
}

// GetCosts implements runnerv1.RunnerServiceServer. The access class
// (public, no session scope) keeps session credentials out.
func (s *Server) GetCosts(ctx context.Context, req *runnerv1.GetCostsRequest) (*runnerv1.GetCostsResponse, error) {
	if s.costs.Store == nil {
		return nil, toStatus(refuse(codes.Unimplemented, "this runner keeps no costs"))
	}
	ref := strings.TrimSpace(req.GetSessionId())
	if _, err := strconv.ParseInt(ref, 10, 64); err != nil && ref != "" && s.costs.Sessions != nil {
		// A slug, as every surface takes one: lifecycle says whose.
		id, err := s.costs.Sessions.SessionID(ctx, ref)
		switch status.Code(err) {
		case codes.OK:
			ref = strconv.FormatInt(id, 10)
		case codes.NotFound:
			return nil, toStatus(refuse(codes.NotFound, "session_id %q names no session: give a session's numeric id or slug", ref))
		case codes.InvalidArgument:
			return nil, toStatus(validation.Invalid("session_id", "must be a session's numeric id or slug, got %q", ref))
		default:
			return nil, toStatus(fmt.Errorf("resolve session %q for its costs: %w", ref, err))
		}
	}
	q, err := domain.ParseCostQuery(req.GetFrom(), req.GetTo(), ref, s.costs.Now())
	if err != nil {
		return nil, toStatus(err)
	}
	r, err := s.costs.Store.Report(ctx, q)
	if err != nil {
		return nil, toStatus(err)
	}
	resp := &runnerv1.GetCostsResponse{
		From: q.From.Format(domain.CostDateLayout), To: q.To.Format(domain.CostDateLayout), Total: costLine(r.Total),
		ByDay: costLines(r.ByDay), BySession: costLines(r.BySession), ByKind: costLines(r.ByKind), ByTool: costLines(r.ByTool),
	}
	return resp, nil
}

// RecordMcpResponse implements runnerv1.RunnerServiceServer: internal, the
// gateway's report of one MCP tool call.
func (s *Server) RecordMcpResponse(ctx context.Context, req *runnerv1.RecordMcpResponseRequest) (*runnerv1.RecordMcpResponseResponse, error) {
	if s.costs.Store == nil {
		return nil, toStatus(refuse(codes.Unimplemented, "this runner keeps no costs"))
	}
	e, err := domain.MCPResponseCost(req.GetSessionId(), req.GetTool(), req.GetBytes(), req.GetCallId())
	if err != nil {
		return nil, toStatus(err)
	}
	if err := s.costs.Store.Record(ctx, s.costs.Now(), e); err != nil {
		return nil, toStatus(err)
	}
	return &runnerv1.RecordMcpResponseResponse{}, nil
}

func costLines(ls []domain.CostLine) []*runnerv1.CostLine {
	out := make([]*runnerv1.CostLine, len(ls))
	for i, l := range ls {
		out[i] = costLine(l)
	}
	return out
}

func costLine(l domain.CostLine) *runnerv1.CostLine {
	u := l.Usage
	return &runnerv1.CostLine{
		Day: l.Day, SessionId: l.SessionID, Kind: string(l.Kind), Tool: l.Tool, Bytes: l.Bytes,
		InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.CacheReadTokens,
		CacheCreationTokens: u.CacheCreationTokens, CostUsd: u.CostUSD, Entries: l.Entries,
	}
}
