package grpcapi

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	runnerv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/runner/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/runner/internal/domain"
)

// AccountState is one account of a login pool as ListAgentAccounts tells
// it: its use as of Now, and the sessions parked on it.
type AccountState struct {
	Use    domain.AccountUse
	Parked int
	Now    time.Time
}

// AccountLister lists the runtimes' login pools (names and state, never a
// login's secrets).
type AccountLister interface {
	List(ctx context.Context, runtimes []string, now time.Time) ([]AccountState, error)
}

// WithAccounts serves ListAgentAccounts from l.
func (s *Server) WithAccounts(l AccountLister) *Server {
	s.accounts = l
	return s
}

// ListAgentAccounts implements runnerv1.RunnerServiceServer. The access
// rule (admin) is the authorizer's, from the method's option.
func (s *Server) ListAgentAccounts(ctx context.Context, _ *runnerv1.ListAgentAccountsRequest) (*runnerv1.ListAgentAccountsResponse, error) {
	if s.accounts == nil {
		return nil, toStatus(refuse(codes.Unavailable, "this runner runs no turns (no Temporal worker), so it keeps no login pool; ask a runner node"))
	}
	states, err := s.accounts.List(ctx, rules.AgentRuntimes(), time.Now())
	if err != nil {
		return nil, toStatus(err)
	}
	resp := &runnerv1.ListAgentAccountsResponse{Accounts: make([]*runnerv1.AgentAccount, 0, len(states))}
	for _, st := range states {
		u := st.Use
		a := &runnerv1.AgentAccount{
			Runtime: u.Account.Runtime, Name: u.Account.Name, Available: u.HasCapacity(st.Now),
			WallReason: u.WallReason, RecentTurns: int32(u.Recent), ParkedSessions: int32(st.Parked),
		}
		if !a.Available {
			a.AvailableAt = timestamppb.New(u.AvailableAt(st.Now))
		}
		if u.RestsUntil.After(st.Now) {
			a.RestsUntil = timestamppb.New(u.RestsUntil)
		}
		for _, t := range u.Targets {
			a.QuotaTargets = append(a.QuotaTargets, &runnerv1.QuotaTargetUse{
				WindowSeconds: int64(t.Target.Window / time.Second), MaxTurns: int32(t.Target.MaxTurns), Turns: int32(t.Turns)})
		}
		resp.Accounts = append(resp.Accounts, a)
	}
	return resp, nil
}
