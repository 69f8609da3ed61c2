package service

import (
	"context"
	"fmt"
	"slices"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/zimmerhq/zimmer/services/runner/internal/agent"
	"github.com/zimmerhq/zimmer/services/runner/internal/config"
	"github.com/zimmerhq/zimmer/services/runner/internal/domain"
	"github.com/zimmerhq/zimmer/services/runner/internal/grpcapi"
	"github.com/zimmerhq/zimmer/services/runner/internal/store"
	rw "github.com/zimmerhq/zimmer/services/runner/internal/workflow"
)

// accountPool is the login pools as this node knows them: the configured
// accounts (their secrets stay here) over the state every node shares
// (store.Accounts). A runtime with no account configured has its ambient
// login as its one account.
type accountPool struct {
	store      *store.Accounts
	configured []config.Account
}

func newAccountPool(s *store.Accounts, configured []config.Account) *accountPool {
	return &accountPool{store: s, configured: configured}
}

// accounts is runtime's pool, as the pool decides on it.
func (p *accountPool) accounts(runtime string) []domain.Account {
	var out []domain.Account
	for _, a := range p.configured {
		if a.Login.Runtime == runtime {
			out = append(out, a.Domain())
		}
	}
	if len(out) == 0 {
		out = []domain.Account{{Runtime: runtime, Name: domain.AmbientAccount}}
	}
	return out
}

// Choose implements workflow.AccountPool.
func (p *accountPool) Choose(ctx context.Context, req rw.ChooseAccountRequest, now time.Time) (domain.Choice, error) {
	return p.store.Choose(ctx, store.ChooseRequest{Runtime: req.Runtime, SessionID: req.SessionID, TurnID: req.TurnID,
		Sticky: req.Sticky, Accounts: p.accounts(req.Runtime), Now: now})
}

// AvailableAt implements workflow.AccountPool.
func (p *accountPool) AvailableAt(ctx context.Context, runtime, account string, now time.Time) (time.Time, error) {
	pool := slices.DeleteFunc(p.accounts(runtime), func(a domain.Account) bool { return a.Name != account })
	if len(pool) == 0 {
		return now, nil // gone from the pool: its sessions choose anew
	}
	use, err := p.store.Use(ctx, pool, now)
	if err != nil {
		return time.Time{}, err
	}
	return use[0].AvailableAt(now), nil
}

// RecordWall implements workflow.AccountPool.
func (p *accountPool) RecordWall(ctx context.Context, runtime, account string, until time.Time, reason string, now time.Time) error {
	return p.store.RecordWall(ctx, runtime, account, until, reason, now)
}

// Park implements workflow.AccountPool.
func (p *accountPool) Park(ctx context.Context, park domain.PoolPark) error {
	return p.store.Park(ctx, park)
}

// Unpark implements workflow.AccountPool.
func (p *accountPool) Unpark(ctx context.Context, sessionID int64) error {
	return p.store.Unpark(ctx, sessionID)
}

// ParkedOn implements workflow.AccountPool.
func (p *accountPool) ParkedOn(ctx context.Context, runtime, account string) ([]domain.PoolPark, error) {
	return p.store.ParkedOn(ctx, runtime, account)
}

// Login implements workflow.AccountPool.
func (p *accountPool) Login(runtime, account string) (agent.Login, bool) {
	for _, a := range p.configured {
		if a.Login.Runtime == runtime && a.Login.Name == account {
			return a.Login, true
		}
	}
	return agent.Login{}, false
}

// List implements grpcapi.AccountLister: every runtime's pool (the
// configured runtimes, and the ambient login of any that hit a wall or
// ran a turn), names and state only.
func (p *accountPool) List(ctx context.Context, runtimes []string, now time.Time) ([]grpcapi.AccountState, error) {
	parked, err := p.store.ParkedCounts(ctx)
	if err != nil {
		return nil, err
	}
	var out []grpcapi.AccountState
	for _, rt := range runtimes {
		use, err := p.store.Use(ctx, p.accounts(rt), now)
		if err != nil {
			return nil, err
		}
		for _, u := range use {
			out = append(out, grpcapi.AccountState{Use: u, Parked: parked[[2]string{rt, u.Account.Name}], Now: now})
		}
	}
	return out, nil
}

// refillStarter starts an account's refill workflow on the shared task
// queue, joining the one already running.
type refillStarter struct{ client client.Client }

// StartRefill implements workflow.RefillStarter.
func (r refillStarter) StartRefill(ctx context.Context, req rw.RefillRequest) error {
	_, err := r.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       rw.RefillID(req.Runtime, req.Account),
		TaskQueue:                rw.TaskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		Memo:                     map[string]any{"runtime": req.Runtime, "account": req.Account},
	}, rw.RefillWorkflowName, req)
	if err != nil {
		return fmt.Errorf("start %s: %w", rw.RefillID(req.Runtime, req.Account), err)
	}
	return nil
}
