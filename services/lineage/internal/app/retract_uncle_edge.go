package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/zimmerhq/zimmer/services/lineage/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/clock"
)

// RetractUncleEdge is RecordUncleEdge's compensation: it undoes what
// recording an edge did when the delivery it was recorded for failed.
type RetractUncleEdge struct {
	edges UncleEdgeRecorder
	clock clock.Clock
}

// NewRetractUncleEdge returns the use case over edges; clk dates the
// announcements.
func NewRetractUncleEdge(edges UncleEdgeRecorder, clk clock.Clock) RetractUncleEdge {
	return RetractUncleEdge{edges: edges, clock: clk}
}

// Handle reads what the retraction rules need to know about r's two
// sessions, lets domain.DecideUncleRetraction decide, and makes the
// decision's writes, under the same lock as every recording, so a restored
// edge is checked against a graph holding every edge committed before it.
// A retraction that undid something is announced in the same transaction,
// so both sessions' timelines say the edge was withdrawn. Retracting what
// is no longer there, or twice, changes nothing; errors are invalid input
// and failures of the store.
func (uc RetractUncleEdge) Handle(ctx context.Context, r domain.UncleRetraction) (domain.RetractionDecision, error) {
	if err := r.Validate(); err != nil {
		return domain.RetractionDecision{}, err
	}
	a, b := r.Edge.UncleSessionID, r.Edge.SessionID
	var d domain.RetractionDecision
	err := uc.edges.Record(ctx, func(ctx context.Context, g UncleGraph) error {
		facts, err := readRetractionFacts(ctx, g, a, b)
		if err != nil {
			return err
		}
		d = domain.DecideUncleRetraction(r, facts)
		switch {
		case d.Restore:
			if err := g.RestoreReplaced(ctx, a, b); err != nil {
				return err
			}
		case d.Delete:
			if err := g.DeleteUncleEdge(ctx, a, b); err != nil {
				return err
			}
		}
		if c, changed := d.Changed(r, uc.clock.Now()); changed {
			return g.Announce(ctx, c)
		}
		return nil
	})
	if errors.Is(err, domain.ErrNotFound) {
		// A session deleted between the reads and the restore: its uncle
		// edges went with it, the one to retract included.
		return domain.RetractionDecision{
			Outcome: domain.RetractNothingThere,
			Message: fmt.Sprintf("session %d or %d is no longer known to lineage; its uncle edges went with it", a, b),
		}, nil
	}
	if err != nil {
		return domain.RetractionDecision{}, fmt.Errorf("retract uncle edge %d → %d: %w", a, b, err)
	}
	return d, nil
}

// readRetractionFacts reads every fact the retraction rules decide from,
// for acting a and target b, whatever the recorded outcome: the rules stay
// in one place, and a retraction follows only a failed delivery.
func readRetractionFacts(ctx context.Context, g UncleGraph, a, b int64) (domain.RetractionFacts, error) {
	var (
		f   domain.RetractionFacts
		err error
	)
	if f.Present, err = g.HasUncleEdge(ctx, a, b); err != nil {
		return f, err
	}
	if f.ReplacedInverse, err = g.ReplacedInverse(ctx, a, b); err != nil {
		return f, err
	}
	if f.ActingReachesTargetOtherwise, err = g.ReachesIndirectly(ctx, a, b, domain.ReachabilityBudget); err != nil {
		return f, err
	}
	return f, nil
}
