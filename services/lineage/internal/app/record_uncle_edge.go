package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/zimmerhq/zimmer/services/lineage/internal/domain"
)

// RecordUncleEdge is the one writer of uncle edges: "acting queued or
// interrupted target". Callers record about a delivery that already
// happened, so they log a failure and carry on; nothing here gates the
// delivery.
type RecordUncleEdge struct{ edges UncleEdgeRecorder }

// NewRecordUncleEdge returns the use case over edges.
func NewRecordUncleEdge(edges UncleEdgeRecorder) RecordUncleEdge {
	return RecordUncleEdge{edges: edges}
}

// Handle applies domain.DecideUncleEdge to e under the recorder's lock. A
// refusal is an outcome, not an error; errors are invalid input and
// failures of the store.
func (uc RecordUncleEdge) Handle(ctx context.Context, e domain.UncleEdge) (domain.UncleDecision, error) {
	if err := e.Validate(); err != nil {
		return domain.UncleDecision{}, err
	}
	d, err := uc.edges.Record(ctx, func(ctx context.Context, g domain.UncleGraph) (domain.UncleDecision, error) {
		return domain.DecideUncleEdge(ctx, g, e)
	})
	if errors.Is(err, domain.ErrNotFound) {
		// A session deleted between the check and the write.
		return domain.UncleDecision{
			Outcome: domain.UncleRefusedUnknownSession,
			Message: fmt.Sprintf("session %d or %d is not known to lineage; no uncle edge recorded", e.UncleSessionID, e.SessionID),
		}, nil
	}
	if err != nil {
		return domain.UncleDecision{}, fmt.Errorf("record uncle edge %d → %d: %w", e.UncleSessionID, e.SessionID, err)
	}
	return d, nil
}
