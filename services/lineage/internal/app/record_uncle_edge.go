package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/zimmerhq/zimmer/services/lineage/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/clock"
)

// RecordUncleEdge is the one writer of uncle edges: "acting queued or
// interrupted target". Callers record before the delivery the edge
// explains, so that the delivered turn already sees it, and retract it
// (RetractUncleEdge) when that delivery fails.
type RecordUncleEdge struct {
	edges UncleEdgeRecorder
	clock clock.Clock
}

// NewRecordUncleEdge returns the use case over edges; clk dates the
// announcements.
func NewRecordUncleEdge(edges UncleEdgeRecorder, clk clock.Clock) RecordUncleEdge {
	return RecordUncleEdge{edges: edges, clock: clk}
}

// Handle reads what the rules need to know about e's two sessions, lets
// domain.DecideUncleEdge decide, and makes the decision's writes, all under
// the recorder's lock. A decision that changed the graph (an edge written
// or inverted) is announced in the same transaction, so both sessions'
// timelines say so. A refusal is an outcome, not an error; errors are
// invalid input and failures of the store.
func (uc RecordUncleEdge) Handle(ctx context.Context, e domain.UncleEdge) (domain.UncleDecision, error) {
	if err := e.Validate(); err != nil {
		return domain.UncleDecision{}, err
	}
	var d domain.UncleDecision
	err := uc.edges.Record(ctx, func(ctx context.Context, g UncleGraph) error {
		facts, err := readUncleFacts(ctx, g, e.UncleSessionID, e.SessionID)
		if err != nil {
			return err
		}
		d = domain.DecideUncleEdge(e, facts)
		switch {
		case d.DeleteInverse && d.Insert:
			// One write, so the new edge keeps the one it replaced for
			// RetractUncleEdge to put back.
			if err := g.InvertUncleEdge(ctx, e); err != nil {
				return err
			}
		case d.DeleteInverse:
			if err := g.DeleteUncleEdge(ctx, e.SessionID, e.UncleSessionID); err != nil {
				return err
			}
		case d.Insert:
			if err := g.InsertUncleEdge(ctx, e); err != nil {
				return err
			}
		}
		if c, changed := d.Changed(e, uc.clock.Now()); changed {
			return g.Announce(ctx, c)
		}
		return nil
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

// readUncleFacts reads every fact the rules decide from, for acting a and
// target b. It reads them all rather than stopping at the first rule that
// applies: the rules stay in one place, and the price, at most three
// budgeted searches on a path taken a handful of times a minute, is small.
func readUncleFacts(ctx context.Context, g UncleGraph, a, b int64) (domain.UncleFacts, error) {
	var (
		f   domain.UncleFacts
		err error
	)
	if f.Missing, err = g.Missing(ctx, a, b); err != nil {
		return f, err
	}
	if f.ActingReachesTarget, err = g.Reaches(ctx, a, b, domain.ReachabilityBudget); err != nil {
		return f, err
	}
	if f.TargetSpawnedActing, err = g.SpawnAncestor(ctx, b, a, domain.ReachabilityBudget); err != nil {
		return f, err
	}
	if f.TargetIsUncle, err = g.HasUncleEdge(ctx, b, a); err != nil {
		return f, err
	}
	if f.TargetReachesActing, err = g.ReachesIndirectly(ctx, b, a, domain.ReachabilityBudget); err != nil {
		return f, err
	}
	return f, nil
}
