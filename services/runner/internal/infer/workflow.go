package infer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/zimmerhq/zimmer/services/runner/internal/domain"
	"github.com/zimmerhq/zimmer/services/runner/internal/transcript"
	rw "github.com/zimmerhq/zimmer/services/runner/internal/workflow"
)

// sharedTimeout bounds the calls to lifecycle and the database.
const sharedTimeout = 30 * time.Second

// Pending is what the pending activity found: nothing to do (Skip says
// why), or the request to put to the model.
type Pending struct {
	Skip    string
	Request Request
}

// Result is what one inference did, for the workflow's result and log.
type Result struct {
	// Skipped says why no model was asked.
	Skipped string
	// Failed is the failure written on the timeline.
	Failed                string
	Inferrer              string
	TitleSet, CategorySet bool
}

// RecordRequest hands an answer to lifecycle.
type RecordRequest struct {
	SessionID int64
	Inferred  Inferred
}

// Recorded is lifecycle's answer: which fields it set.
type Recorded struct {
	TitleSet, CategorySet bool
}

// NoteRequest is the one timeline line of a failed inference; ID (the
// workflow run's id) makes a retried note harmless.
type NoteRequest struct {
	SessionID int64
	ID        string
	Message   string
}

// Workflow is session/<id>/infer: what is pending, the model's answer,
// lifecycle's record of it. A model that fails its whole budget is noted
// once on the timeline and the run ends successfully: the session never
// waits on it.
func Workflow(ctx workflow.Context, in Input) (Result, error) {
	log := workflow.GetLogger(ctx)
	var p Pending
	if err := workflow.ExecuteActivity(sharedOptions(ctx), ActivityPending, in.SessionID).Get(ctx, &p); err != nil {
		return Result{}, fmt.Errorf("read what session %d still needs inferred: %w", in.SessionID, err)
	}
	if p.Skip != "" {
		log.Debug("nothing to infer", "session_id", in.SessionID, "why", p.Skip)
		return Result{Skipped: p.Skip}, nil
	}
	// fail writes the one timeline line of a failed inference and ends the
	// run: the session goes on without.
	fail := func(what string, err error) (Result, error) {
		msg := "[Inference] " + what + "; the session goes on without: " + cause(err)
		note := NoteRequest{SessionID: in.SessionID, ID: workflow.GetInfo(ctx).WorkflowExecution.RunID, Message: msg}
		if nerr := workflow.ExecuteActivity(sharedOptions(ctx), ActivityNote, note).Get(ctx, nil); nerr != nil {
			return Result{}, fmt.Errorf("note the failed inference of session %d: %w", in.SessionID, nerr)
		}
		log.Warn("inference failed", "session_id", in.SessionID, "error", err)
		return Result{Failed: msg}, nil
	}
	var ans Inferred
	if err := workflow.ExecuteActivity(askOptions(ctx), ActivityAsk, p.Request).Get(ctx, &ans); err != nil {
		return fail(fmt.Sprintf("could not infer the session's %s in %d attempts", wanted(p.Request), AskAttempts), err)
	}
	var rec Recorded
	err := workflow.ExecuteActivity(sharedOptions(ctx), ActivityRecord, RecordRequest{SessionID: in.SessionID, Inferred: ans}).Get(ctx, &rec)
	var refused *temporal.ApplicationError
	switch {
	case errors.As(err, &refused) && refused.Type() == errInvalid:
		return fail("lifecycle refused the inferred "+wanted(p.Request), err)
	case err != nil:
		return Result{}, fmt.Errorf("record the inference of session %d: %w", in.SessionID, err)
	}
	return Result{Inferrer: p.Request.Runtime, TitleSet: rec.TitleSet, CategorySet: rec.CategorySet}, nil
}

// wanted names what was asked for.
func wanted(r Request) string {
	switch {
	case r.Title && r.Category:
		return "title and category"
	case r.Title:
		return "title"
	}
	return "category"
}

// cause is an activity failure's own message, without Temporal's
// wrapping.
func cause(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Error()
	}
	var timeout *temporal.TimeoutError
	if errors.As(err, &timeout) {
		return fmt.Sprintf("the model gave no answer within %s", AskTimeout)
	}
	return err.Error()
}

func sharedOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           rw.TaskQueue,
		StartToCloseTimeout: sharedTimeout,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 10,
			NonRetryableErrorTypes: []string{errInvalid},
		},
	})
}

// askOptions are the model call's budget.
func askOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           rw.TaskQueue,
		StartToCloseTimeout: AskTimeout,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: AskRetryInterval, BackoffCoefficient: 2, MaximumAttempts: AskAttempts,
			NonRetryableErrorTypes: []string{errOff},
		},
	})
}

// Error types that retrying cannot mend.
const (
	errOff     = "InferenceOff"
	errInvalid = "InferenceRefused"
)

// ErrAnswerRefused is lifecycle's refusal of an answer (a category deleted
// since it was offered, say): retrying cannot mend it.
var ErrAnswerRefused = errors.New("lifecycle refused the answer")

// Sessions is what inference reads of and writes to lifecycle
// (clients.Lifecycle).
type Sessions interface {
	// PendingInference says what of the session is still to be inferred,
	// with its runtime, prompt, goal and the categories to choose from.
	PendingInference(ctx context.Context, id int64) (Request, error)
	// RecordInference sets what was inferred, each field only while unset.
	RecordInference(ctx context.Context, id int64, in Inferred) (Recorded, error)
	// Note writes a line on the session's timeline, once per noteID.
	Note(ctx context.Context, id int64, noteID, message string, warning bool) error
}

// Transcripts reads a session's transcript (store.Transcripts): from its
// start, with afterID 0.
type Transcripts interface {
	LinesAfter(ctx context.Context, sessionID, afterID int64, limit int) ([]transcript.Line, error)
}

// Activities are the inference workflow's activities.
type Activities struct {
	Sessions    Sessions
	Transcripts Transcripts
	Inferrers   Inferrers
	// Costs records each model call as an inference cost (docs/costs.md);
	// nil records none.
	Costs  CostRecorder
	Logger *slog.Logger
}

// CostRecorder records cost entries (store.Costs), each key once.
type CostRecorder interface {
	Record(ctx context.Context, at time.Time, entries ...domain.CostEntry) error
}

// Register registers the workflow and its activities on the shared
// queue's worker.
func (a *Activities) Register(w worker.Registry) {
	w.RegisterWorkflowWithOptions(Workflow, workflow.RegisterOptions{Name: WorkflowName})
	w.RegisterActivityWithOptions(a.Pending, activity.RegisterOptions{Name: ActivityPending})
	w.RegisterActivityWithOptions(a.Ask, activity.RegisterOptions{Name: ActivityAsk})
	w.RegisterActivityWithOptions(a.Record, activity.RegisterOptions{Name: ActivityRecord})
	w.RegisterActivityWithOptions(a.Note, activity.RegisterOptions{Name: ActivityNote})
}

// Pending reads what session id still needs inferred, and the start of
// its transcript to infer it from.
func (a *Activities) Pending(ctx context.Context, id int64) (Pending, error) {
	req, err := a.Sessions.PendingInference(ctx, id)
	if err != nil {
		return Pending{}, err
	}
	if !req.Title && !req.Category {
		return Pending{Skip: "nothing pending: the title is set and there is no category to infer (or the session is gone)"}, nil
	}
	if _, err := a.Inferrers.For(req.Runtime); errors.Is(err, ErrOff) {
		return Pending{Skip: err.Error()}, nil // off is an answer, not a failure
	}
	lines, err := a.Transcripts.LinesAfter(ctx, id, 0, TranscriptStartLines)
	if err != nil {
		return Pending{}, fmt.Errorf("read the start of session %d's transcript: %w", id, err)
	}
	var b strings.Builder
	for _, l := range lines {
		if strings.TrimSpace(l.Text) == "" || b.Len() > MaxContextChars {
			continue
		}
		fmt.Fprintf(&b, "%s: %s\n", l.Kind, l.Text)
	}
	req.TranscriptStart = b.String()
	return Pending{Request: req}, nil
}

// Ask puts the request to the session's inferrer and settles its answer.
func (a *Activities) Ask(ctx context.Context, req Request) (Inferred, error) {
	in, err := a.Inferrers.For(req.Runtime)
	if err != nil {
		return Inferred{}, temporal.NewNonRetryableApplicationError(err.Error(), errOff, err)
	}
	ans, err := in.Infer(ctx, req)
	a.recordCost(ctx, req, ans.Usage)
	if err != nil {
		a.Logger.WarnContext(ctx, "inference attempt failed", "session_id", req.SessionID, "inferrer", in.Name(),
			"attempt", activity.GetInfo(ctx).Attempt, "error", err)
		return Inferred{}, fmt.Errorf("%s: %w", in.Name(), err)
	}
	return Settle(req, ans)
}

// recordCost counts one attempt of the model call: the prompt Zimmer sent
// and what the runtime reported it used. Each attempt asked the model, so
// each counts; a cost that cannot be recorded is logged, never fatal.
func (a *Activities) recordCost(ctx context.Context, req Request, u *domain.Usage) {
	if a.Costs == nil {
		return
	}
	var usage domain.Usage
	if u != nil {
		usage = *u
	}
	info := activity.GetInfo(ctx)
	e := domain.InferenceCost(req.SessionID, info.WorkflowExecution.RunID, info.Attempt, len(Prompt(req)), usage)
	if err := a.Costs.Record(ctx, time.Now(), e); err != nil {
		a.Logger.WarnContext(ctx, "record the inference's cost", "session_id", req.SessionID, "error", err)
	}
}

// Record hands what was inferred to lifecycle.
func (a *Activities) Record(ctx context.Context, req RecordRequest) (Recorded, error) {
	rec, err := a.Sessions.RecordInference(ctx, req.SessionID, req.Inferred)
	if errors.Is(err, ErrAnswerRefused) {
		return Recorded{}, temporal.NewNonRetryableApplicationError(err.Error(), errInvalid, err)
	}
	return rec, err
}

// Note writes the failed inference's line on the session's timeline.
func (a *Activities) Note(ctx context.Context, req NoteRequest) error {
	return a.Sessions.Note(ctx, req.SessionID, req.ID, req.Message, true)
}

// Starter starts workflows: the Temporal client.
type Starter = rw.WorkflowStarter

// Start starts session id's inference; started is false when one is
// running already — it reads what is pending when it starts, so this
// pause's request is served by it or by the next pause's.
func Start(ctx context.Context, s Starter, id int64) (started bool, err error) {
	return rw.StartOnce(ctx, s, WorkflowID(id), WorkflowName, Input{SessionID: id})
}
