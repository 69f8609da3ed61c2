package clients

import (
	"context"
	"fmt"

	"google.golang.org/grpc"

	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
	"github.com/zimmerhq/zimmer/services/queue/internal/app"
)

// Lineage records and retracts uncle edges through lineage, as the queue
// service.
type Lineage struct {
	client lineagev1.LineageServiceClient
}

var _ app.Uncles = (*Lineage)(nil)

// NewLineage returns the adapter over a connection to lineage.
func NewLineage(conn grpc.ClientConnInterface) *Lineage {
	return &Lineage{client: lineagev1.NewLineageServiceClient(conn)}
}

// Record implements app.Uncles. Lineage's refusals (senior, unknown
// session, budget) come back as Refused with lineage's words.
func (l *Lineage) Record(ctx context.Context, acting, target int64, entryPoint string) (app.UncleEdge, error) {
	resp, err := l.client.RecordUncleEdge(ctx, &lineagev1.RecordUncleEdgeRequest{
		ActingSessionId: acting, TargetSessionId: target, EntryPoint: entryPoint,
	})
	if err != nil {
		return app.UncleEdge{}, fmt.Errorf("lineage RecordUncleEdge %d → %d: %w", acting, target, err)
	}
	e := app.UncleEdge{Acting: acting, Target: target, EntryPoint: entryPoint,
		Outcome: int32(resp.GetOutcome()), Message: resp.GetMessage()}
	switch resp.GetOutcome() {
	case lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_WRITTEN, lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_INVERTED:
		e.Changed = true
	case lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_REFUSED_SENIOR,
		lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_REFUSED_UNKNOWN_SESSION,
		lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_REFUSED_BUDGET_EXHAUSTED:
		e.Refused = true
	}
	return e, nil
}

// Retract implements app.Uncles.
func (l *Lineage) Retract(ctx context.Context, e app.UncleEdge) error {
	_, err := l.client.RetractUncleEdge(ctx, &lineagev1.RetractUncleEdgeRequest{
		ActingSessionId: e.Acting, TargetSessionId: e.Target,
		Recorded: lineagev1.UncleEdgeOutcome(e.Outcome), EntryPoint: e.EntryPoint,
	})
	if err != nil {
		return fmt.Errorf("lineage RetractUncleEdge %d → %d: %w", e.Acting, e.Target, err)
	}
	return nil
}
