// Package summary carries out the two effects of a session's status
// summary (session-lifecycle.md, the pause hook's step 6 and the fork
// carve-outs):
//
//   - enqueue_status_summary_refresh (a pause or failure of a session)
//     starts session/<id>/status-summary: when the session's transcript has
//     moved past what its summary covers, lifecycle creates a throwaway
//     fork of it (CreateStatusSummaryFork) whose one turn reads the newest
//     part of the transcript (domain.SummaryPrompt) and writes a summary.
//   - harvest_status_summary_fork (the fork's pause or failure) starts
//     session/<fork>/status-summary-harvest: what the fork's turn wrote
//     (domain.ForkSummary), or why it failed, goes to lifecycle
//     (HarvestStatusSummaryFork), which records it on the source and
//     archives the fork as a system archive.
//
// One refresh per session runs at a time (its workflow id), and lifecycle
// keeps at most one fork of a session at work (a unique index), so a
// second refresh never forks twice. The fork gets a clone of its own, made
// from the source's repository like any session's: it reads the source's
// transcript, never the source's clone.
package summary

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/zimmerhq/zimmer/services/platform/workflowid"
	"github.com/zimmerhq/zimmer/services/runner/internal/domain"
	"github.com/zimmerhq/zimmer/services/runner/internal/transcript"
	rw "github.com/zimmerhq/zimmer/services/runner/internal/workflow"
)

// Workflow and activity types.
const (
	RefreshWorkflowName = "zimmer.runner.StatusSummary"
	HarvestWorkflowName = "zimmer.runner.StatusSummaryHarvest"
	ActivityFork        = "zimmer.runner.ForkForStatusSummary"
	ActivityHarvest     = "zimmer.runner.HarvestStatusSummaryFork"
)

// ErrNotAFork is the error type of a harvest lifecycle refuses (the session
// is no fork): not retried.
const ErrNotAFork = "NotAStatusSummaryFork"

// RefreshID is session id's refresh workflow.
func RefreshID(id int64) string { return workflowid.StatusSummary(id) }

// HarvestID is fork id's harvest workflow.
func HarvestID(id int64) string { return workflowid.StatusSummaryHarvest(id) }

// RefreshInput names the session to summarise.
type RefreshInput struct{ SourceID int64 }

// HarvestInput is a fork whose turn ended, as its effect says: Failed with
// the reason when it failed rather than paused.
type HarvestInput struct {
	ForkID        int64
	Failed        bool
	FailureReason string
}

// Refreshed is what a refresh did: forked (ForkID, Created false when a
// fork was at work already), or Skipped saying why not.
type Refreshed struct {
	ForkID  int64
	Created bool
	Skipped string
}

// Source is what a refresh reads of the session to summarise.
type Source struct {
	Gone     bool // deleted
	Archived bool
	IsFork   bool
	// Covered is the transcript position its summary covers (0: none).
	Covered int64
}

// Lifecycle is lifecycle as the summaries use it.
type Lifecycle interface {
	SummarySource(ctx context.Context, id int64) (Source, error)
	// CreateFork answers the fork, and whether this call created it.
	CreateFork(ctx context.Context, sourceID int64, prompt string, covers int64) (int64, bool, error)
	// HarvestFork records text (or failure, when set) on the fork's source
	// and archives the fork. A session that is no fork is *NotAForkError.
	HarvestFork(ctx context.Context, forkID int64, text, failure string) error
}

// NotAForkError is lifecycle refusing a harvest of a session that is no
// status-summary fork.
type NotAForkError struct{ Message string }

func (e *NotAForkError) Error() string { return e.Message }

// Transcripts reads transcripts.
type Transcripts interface {
	Tail(ctx context.Context, sessionID, upTo int64, limit int) ([]transcript.Line, error)
}

// Starter starts workflows.
type Starter = rw.WorkflowStarter

// StartRefresh starts session id's refresh; started is false when one is
// running already (it has not yet read the transcript, or its fork is at
// work: either way this pause is covered or the next one asks again).
func StartRefresh(ctx context.Context, s Starter, id int64) (bool, error) {
	return rw.StartOnce(ctx, s, RefreshID(id), RefreshWorkflowName, RefreshInput{SourceID: id})
}

// StartHarvest starts the harvest of in.ForkID; started is false when one
// is running already.
func StartHarvest(ctx context.Context, s Starter, in HarvestInput) (bool, error) {
	return rw.StartOnce(ctx, s, HarvestID(in.ForkID), HarvestWorkflowName, in)
}

// activityOptions: lifecycle and the database, retried with backoff; a
// fork that cannot be made is retried by the next pause, not for ever.
func activityOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 10,
			NonRetryableErrorTypes: []string{ErrNotAFork},
		},
	})
}

// Refresh is session/<id>/status-summary.
func Refresh(ctx workflow.Context, in RefreshInput) (Refreshed, error) {
	var out Refreshed
	err := workflow.ExecuteActivity(activityOptions(ctx), ActivityFork, in.SourceID).Get(ctx, &out)
	if out.Skipped != "" {
		workflow.GetLogger(ctx).Debug("no status-summary fork", "session_id", in.SourceID, "why", out.Skipped)
	}
	return out, err
}

// Harvest is session/<fork>/status-summary-harvest.
func Harvest(ctx workflow.Context, in HarvestInput) error {
	return workflow.ExecuteActivity(activityOptions(ctx), ActivityHarvest, in).Get(ctx, nil)
}

// Activities are the summaries' activities, on the shared queue.
type Activities struct {
	Lifecycle   Lifecycle
	Transcripts Transcripts
}

// Register registers the workflows and activities on the shared queue's
// worker.
func (a *Activities) Register(w worker.Registry) {
	w.RegisterWorkflowWithOptions(Refresh, workflow.RegisterOptions{Name: RefreshWorkflowName})
	w.RegisterWorkflowWithOptions(Harvest, workflow.RegisterOptions{Name: HarvestWorkflowName})
	w.RegisterActivityWithOptions(a.Fork, activity.RegisterOptions{Name: ActivityFork})
	w.RegisterActivityWithOptions(a.HarvestFork, activity.RegisterOptions{Name: ActivityHarvest})
}

// Fork forks session id for its summary when its transcript has moved
// past what its summary covers.
func (a *Activities) Fork(ctx context.Context, id int64) (Refreshed, error) {
	src, err := a.Lifecycle.SummarySource(ctx, id)
	switch {
	case err != nil:
		return Refreshed{}, err
	case src.Gone:
		return Refreshed{Skipped: "the session is gone"}, nil
	case src.IsFork:
		return Refreshed{Skipped: "a status-summary fork is never summarised"}, nil
	case src.Archived:
		return Refreshed{Skipped: "the session is archived"}, nil
	}
	lines, err := a.Transcripts.Tail(ctx, id, 0, domain.SummaryMaxLines)
	if err != nil {
		return Refreshed{}, err
	}
	if len(lines) == 0 || !domain.SummaryNeeded(lines[len(lines)-1].ID, src.Covered) {
		return Refreshed{Skipped: fmt.Sprintf("no transcript since the summary (line %d)", src.Covered)}, nil
	}
	position := lines[len(lines)-1].ID
	prompt := domain.SummaryPrompt(id, position, summaryLines(lines))
	forkID, created, err := a.Lifecycle.CreateFork(ctx, id, prompt, position)
	if err != nil {
		return Refreshed{}, err
	}
	return Refreshed{ForkID: forkID, Created: created}, nil
}

// HarvestFork hands lifecycle what the fork's turn wrote, or why it failed.
func (a *Activities) HarvestFork(ctx context.Context, in HarvestInput) error {
	text, failure := "", ""
	if in.Failed {
		failure = in.FailureReason
		if failure == "" {
			failure = "the fork failed and gave no reason"
		}
	} else {
		lines, err := a.Transcripts.Tail(ctx, in.ForkID, 0, forkTailLines)
		if err != nil {
			return err
		}
		text = domain.ForkSummary(summaryLines(lines))
	}
	err := a.Lifecycle.HarvestFork(ctx, in.ForkID, text, failure)
	var notAFork *NotAForkError
	if errors.As(err, &notAFork) {
		return temporal.NewNonRetryableApplicationError(notAFork.Message, ErrNotAFork, err)
	}
	return err
}

// forkTailLines is how much of a fork's transcript its summary is read
// from: its last lines (a result line and a message).
const forkTailLines = 20

func summaryLines(lines []transcript.Line) []domain.SummaryLine {
	out := make([]domain.SummaryLine, len(lines))
	for i, l := range lines {
		out[i] = domain.SummaryLine{Kind: l.Kind, Text: l.Text, IsError: l.IsError}
	}
	return out
}
