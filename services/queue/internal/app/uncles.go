package app

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/zimmerhq/zimmer/services/platform/alert"
	"github.com/zimmerhq/zimmer/services/platform/surface"
)

// uncleGuard records the uncle edge of an acting session around a send
// (Uncles optional: none recorded without it).
type uncleGuard struct {
	uncles Uncles
	alerts alert.Raiser
	logger *slog.Logger
}

// around records acting's uncle edge over target (when acting is set)
// before send runs, so the turn it causes already sees the edge, and
// retracts it when send sends nothing (sent false or an error): a failed
// send leaves no edge. Lineage's refusal of the edge sends nothing.
func (g uncleGuard) around(ctx context.Context, acting, target int64, action string, e *UncleEdge, send func() (bool, error)) error {
	if acting == 0 || g.uncles == nil {
		_, err := send()
		return err
	}
	entry := entryPoint(ctx, action)
	rec, err := g.uncles.Record(ctx, acting, target, entry)
	if err != nil {
		return err
	}
	*e = rec
	if rec.Refused {
		return fmt.Errorf("%w (nothing was sent): %s", ErrUncleRefused, rec.Message)
	}
	sent, err := send()
	*e = rec
	if sent || !rec.Changed {
		return err
	}
	if rerr := g.uncles.Retract(context.WithoutCancel(ctx), rec); rerr != nil {
		g.logger.ErrorContext(ctx, "retract the uncle edge of a failed delivery", "acting", acting, "target", target,
			"entry_point", entry, "error", rerr)
		alert.Raise(ctx, g.alerts, g.logger, fmt.Sprintf("queue_uncle_retraction/%d/%d", acting, target),
			fmt.Sprintf("Session %d's uncle edge over session %d stays recorded although its %s failed: the retraction failed (%v).",
				acting, target, action, rerr), map[string]any{"entry_point": entry})
	}
	return err
}

// entryPoint names the path for lineage: the surface the call entered by
// and the action ("mcp.follow_up", "rest.interrupt").
func entryPoint(ctx context.Context, action string) string {
	s := surface.Incoming(ctx)
	if s == "" {
		s = "grpc"
	}
	return s + "." + action
}
