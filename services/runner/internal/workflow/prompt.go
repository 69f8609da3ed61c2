package workflow

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/zimmerhq/zimmer/services/runner/internal/agent"
	"github.com/zimmerhq/zimmer/services/runner/internal/domain"
	"github.com/zimmerhq/zimmer/services/runner/internal/prompt"
)

// PromptSession is what a turn's prompt needs of its session (lifecycle).
type PromptSession struct {
	Goal  string
	Notes string
	// StatusSummaryFork: Zimmer's own status-summary fork, whose prompt
	// strips its inherited goal.
	StatusSummaryFork bool
	// ProvenanceViaMCP is the Provenance context on demand setting: the
	// blocks carry counts and a pointer when on, the full record when off.
	ProvenanceViaMCP bool
}

// PromptSources are where RunTurn gathers a prompt's input: the session from
// lifecycle, the rendered blocks from lineage. Either answering an error
// that may pass (transient) is asked again while the turn waits.
type PromptSources interface {
	PromptSession(ctx context.Context, sessionID int64) (PromptSession, error)
	// PromptBlocks renders the session's notes and its provenance blocks
	// (lineage's GetPromptBlocks, through its one sanitiser).
	PromptBlocks(ctx context.Context, sessionID int64, notes string, viaMCP bool) (prompt.Blocks, error)
}

// How long a turn waits for its prompt's sources. Nothing has started, so
// waiting is safe; a turn must not be sent without its provenance, whose
// absence would read as "no human spoke". A recovery nudge carries no new
// instruction and exists to get a stuck session moving, so it waits
// briefly for lineage and then goes with ProvenanceUnavailable instead.
const (
	promptPatience         = 10 * time.Minute
	recoveryBlocksPatience = 20 * time.Second
)

// TranscriptTypePrompt is the transcript line type of a turn's prompt: the
// turn's first line, its raw exactly what the agent received, its text the
// size and each part's bytes (prompt.Prompt.Summary).
const TranscriptTypePrompt = "zimmer/prompt"

// composePrompt builds the turn's prompt (prompt.Compose) from its sources.
// Without sources (a test rig) the prompt is the turn's text alone.
// fork says the session is a status-summary fork, whose costs are
// status_summary's.
func (a *Activities) composePrompt(ctx context.Context, req RunTurnRequest) (_ prompt.Prompt, fork bool, _ error) {
	turn := prompt.Turn{Text: req.Prompt}
	if a.Prompts != nil {
		var s PromptSession
		err := a.patiently(ctx, req.TurnID, promptPatience, "lifecycle did not answer the turn's session", func() (err error) {
			s, err = a.Prompts.PromptSession(ctx, req.Session.ID)
			return err
		})
		if err != nil {
			return prompt.Prompt{}, false, fmt.Errorf("read session %d for its prompt: %w", req.Session.ID, err)
		}
		turn.Goal, turn.StatusSummaryFork = s.Goal, s.StatusSummaryFork
		patience := promptPatience
		recovery := domain.IsSystemRecovery(req.Prompt)
		if recovery {
			patience = recoveryBlocksPatience
		}
		err = a.patiently(ctx, req.TurnID, patience, "lineage did not answer the turn's prompt blocks", func() (err error) {
			turn.Blocks, err = a.Prompts.PromptBlocks(ctx, req.Session.ID, s.Notes, s.ProvenanceViaMCP)
			return err
		})
		switch {
		case err != nil && recovery && ctx.Err() == nil:
			a.logger().Warn("recovery nudge sent without its provenance blocks", "turn", req.TurnID, "error", err)
			// The notes are lineage's to render too: none without it.
			turn.Blocks, turn.BlocksUnavailable = prompt.Blocks{}, true
		case err != nil:
			return prompt.Prompt{}, false, fmt.Errorf("read the prompt blocks of session %d: %w", req.Session.ID, err)
		}
	}
	return prompt.Compose(turn), turn.StatusSummaryFork, nil
}

// CostRecorder records cost entries (store.Costs), each key once.
type CostRecorder interface {
	Record(ctx context.Context, at time.Time, entries ...domain.CostEntry) error
}

// promptCosts are the entries of a turn's prompt: its parts' bytes.
func promptCosts(req RunTurnRequest, p prompt.Prompt, fork bool) []domain.CostEntry {
	parts := make(map[string]int, len(p.Bytes))
	for part, n := range p.Bytes {
		parts[string(part)] = n
	}
	return domain.PromptCosts(req.Session.ID, req.TurnID, parts, fork)
}

// recordCosts records a turn's cost entries. Costs are an account of the
// turn, not part of it: one that cannot be recorded is logged, and the
// turn goes on.
func (a *Activities) recordCosts(ctx context.Context, turnID string, entries ...domain.CostEntry) {
	if a.Costs == nil || len(entries) == 0 {
		return
	}
	if err := a.Costs.Record(ctx, time.Now(), entries...); err != nil {
		a.logger().Warn("record the turn's costs", "turn", turnID, "error", err)
	}
}

// usage is what the runtime last reported the turn used, nil for nothing.
func (f *lineFollower) usage() *domain.Usage {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lastUsage
}

// recordPrompt records the prompt as the turn's first transcript line, just
// before its process starts: a turn StopTurn forbade keeps no transcript.
func (a *Activities) recordPrompt(ctx context.Context, req RunTurnRequest, p prompt.Prompt) {
	a.mu.Lock()
	_, stopped := a.stopped[req.TurnID]
	a.mu.Unlock()
	if stopped {
		return
	}
	line := agent.Event{Kind: agent.KindUser, Type: TranscriptTypePrompt, Text: p.Summary(), Raw: p.Text}
	if err := a.transcripts().Append(ctx, req.Session.ID, req.TurnID, line); err != nil {
		a.logger().Warn("record the turn's prompt in its transcript", "turn", req.TurnID, "error", err)
	}
}

// patiently calls fn until it succeeds, answers an error another attempt
// would meet again, or patience runs out, heartbeating meanwhile.
func (a *Activities) patiently(ctx context.Context, turnID string, patience time.Duration, what string, fn func() error) error {
	wait, giveUp := 200*time.Millisecond, time.Now().Add(patience)
	for {
		err := fn()
		if err == nil || !transient(err) || time.Now().After(giveUp) {
			return err
		}
		a.logger().Warn(what+"; asking again", "turn", turnID, "error", err)
		activity.RecordHeartbeat(ctx, TurnProgress{TurnID: turnID})
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %w)", ctx.Err(), err)
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}
