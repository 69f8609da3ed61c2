// Package clients holds the runner's clients of other Zimmer services.
package clients

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/runner/internal/clone"
	"github.com/zimmerhq/zimmer/services/runner/internal/domain"
	"github.com/zimmerhq/zimmer/services/runner/internal/infer"
	"github.com/zimmerhq/zimmer/services/runner/internal/summary"
	"github.com/zimmerhq/zimmer/services/runner/internal/sweep"
	"github.com/zimmerhq/zimmer/services/runner/internal/workflow"
)

// Lifecycle calls the lifecycle service as the runner (the connection
// carries the internal token): TransitionSession and the session
// credentials are admin methods a service may call for itself.
type Lifecycle struct {
	client   lifecyclev1.LifecycleServiceClient
	triggers lifecyclev1.TriggerServiceClient
}

var (
	_ workflow.Lifecycle = (*Lifecycle)(nil)
	_ clone.Sessions     = (*Lifecycle)(nil)
	_ summary.Lifecycle  = (*Lifecycle)(nil)
)

// NewLifecycle returns the client over conn.
func NewLifecycle(conn grpc.ClientConnInterface) *Lifecycle {
	return &Lifecycle{client: lifecyclev1.NewLifecycleServiceClient(conn), triggers: lifecyclev1.NewTriggerServiceClient(conn)}
}

// Transition implements workflow.Lifecycle. It names the transition by
// req.IdempotencyKey, so a retry of a call that had applied is answered
// by lifecycle as already applied (success); a refusal is the session's
// state refusing this call, never an earlier attempt of it.
func (l *Lifecycle) Transition(ctx context.Context, req workflow.TransitionRequest) error {
	msg := &lifecyclev1.TransitionSessionRequest{
		SessionId: strconv.FormatInt(req.SessionID, 10), Event: req.Event, FailureReason: req.FailureReason,
		SystemRecovery: req.SystemRecovery, RunningJobId: req.RunningJobID, PausedBy: req.PausedBy,
		IdempotencyKey: req.IdempotencyKey, ElicitationOutcome: req.ElicitationOutcome,
		AuthOutageReason: req.AuthOutageReason,
	}
	if e := req.Elicitation; e != nil {
		msg.Elicitation = &lifecyclev1.Elicitation{Id: e.ID, TurnId: e.TurnID, Message: e.Message}
		if e.RequestedSchema != nil {
			// A schema the wire cannot carry (it came from JSON, so it
			// always can) would leave the question without one.
			if schema, err := structpb.NewStruct(e.RequestedSchema); err == nil {
				msg.Elicitation.RequestedSchema = schema
			}
		}
		if !e.ExpiresAt.IsZero() {
			msg.Elicitation.ExpiresAt = timestamppb.New(e.ExpiresAt)
		}
	}
	_, err := l.client.TransitionSession(ctx, msg)
	switch status.Code(err) {
	case codes.OK:
		return nil
	case codes.NotFound:
		return &workflow.RefusedError{Event: req.Event, Status: domain.StatusGone, Message: status.Convert(err).Message()}
	case codes.FailedPrecondition:
		return &workflow.RefusedError{Event: req.Event, Message: status.Convert(err).Message()}
	}
	return fmt.Errorf("lifecycle %s of session %d: %w", req.Event, req.SessionID, err)
}

// MintCredential implements workflow.Lifecycle.
func (l *Lifecycle) MintCredential(ctx context.Context, req workflow.CredentialRequest) (string, string, error) {
	resp, err := l.client.MintSessionCredential(ctx, &lifecyclev1.MintSessionCredentialRequest{
		SessionId: strconv.FormatInt(req.SessionID, 10),
		Ttl:       durationpb.New(req.TTL),
		Turn:      &lifecyclev1.CredentialTurn{Node: req.Node, Incarnation: req.Incarnation, TurnId: req.TurnID},
	})
	if err != nil {
		return "", "", fmt.Errorf("mint a credential for turn %s of session %d: %w", req.TurnID, req.SessionID, err)
	}
	return resp.GetCredential().GetId(), resp.GetCredential().GetToken(), nil
}

// RevokeCredential implements workflow.Lifecycle.
func (l *Lifecycle) RevokeCredential(ctx context.Context, sessionID int64, id string) error {
	_, err := l.client.RevokeSessionCredential(ctx, &lifecyclev1.RevokeSessionCredentialRequest{
		SessionId: strconv.FormatInt(sessionID, 10), CredentialId: id,
	})
	if err != nil && status.Code(err) != codes.NotFound {
		return fmt.Errorf("revoke credential %s of session %d: %w", id, sessionID, err)
	}
	return nil
}

// RevokeTurnCredentials implements workflow.Lifecycle. A session that is
// gone took its credentials with it: nothing is left to revoke.
func (l *Lifecycle) RevokeTurnCredentials(ctx context.Context, sessionID int64, turnID string) error {
	_, err := l.client.RevokeTurnCredentials(ctx, &lifecyclev1.RevokeTurnCredentialsRequest{
		SessionId: strconv.FormatInt(sessionID, 10), TurnId: turnID,
	})
	if code := status.Code(err); code == codes.OK || code == codes.NotFound {
		return nil
	}
	return fmt.Errorf("revoke the credentials of turn %s of session %d: %w", turnID, sessionID, err)
}

// SweepNodeCredentials implements workflow.Lifecycle.
func (l *Lifecycle) SweepNodeCredentials(ctx context.Context, node, incarnation string) (int, error) {
	resp, err := l.client.SweepNodeCredentials(ctx, &lifecyclev1.SweepNodeCredentialsRequest{Node: node, Incarnation: incarnation})
	if err != nil {
		return 0, fmt.Errorf("revoke the turn credentials of node %q's earlier runners: %w", node, err)
	}
	return int(resp.GetRevoked()), nil
}

// SessionState implements workflow.Lifecycle.
func (l *Lifecycle) SessionState(ctx context.Context, sessionID int64) (workflow.SessionState, error) {
	s, err := l.session(ctx, sessionID)
	if err != nil {
		return workflow.SessionState{}, err
	}
	st := workflow.SessionState{
		Status: s.GetStatus(), BlockedOnElicitation: s.GetBlockedOnElicitation(),
		PausedBy: s.GetPausedBy(), RunningJobID: s.GetRunningJobId(), Prompt: s.GetPrompt(),
		Spec: workflow.SessionSpec{
			ID: s.GetId(), Runtime: s.GetAgentRuntime(), GitRoot: s.GetGitRoot(),
			Branch: s.GetBranch(), Subdirectory: s.GetSubdirectory(),
		},
	}
	if st.Status == rules.StatusWaiting {
		asleep, err := l.triggers.AwaitingScheduledWake(ctx, &lifecyclev1.AwaitingScheduledWakeRequest{SessionIds: []int64{sessionID}})
		if err != nil {
			return workflow.SessionState{}, fmt.Errorf("ask whether session %d is asleep on a wake: %w", sessionID, err)
		}
		st.AwaitingWake = slices.Contains(asleep.GetAsleepSessionIds(), sessionID)
	}
	return st, nil
}

// AbandonRecovery implements workflow.Lifecycle.
func (l *Lifecycle) AbandonRecovery(ctx context.Context, sessionID int64, reason string) error {
	if _, err := l.client.AbandonRecovery(ctx, &lifecyclev1.AbandonRecoveryRequest{SessionId: sessionID, Reason: reason}); err != nil {
		return fmt.Errorf("abandon the recovery of session %d: %w", sessionID, err)
	}
	return nil
}

// RecoveryCandidates implements sweep.Lifecycle (ListRecoveryCandidates).
func (l *Lifecycle) RecoveryCandidates(ctx context.Context, settledBefore time.Time, limit int) ([]sweep.Candidate, error) {
	got, err := l.client.ListRecoveryCandidates(ctx, &lifecyclev1.ListRecoveryCandidatesRequest{
		SettledBefore: timestamppb.New(settledBefore), Limit: int32(limit),
	})
	if err != nil {
		return nil, fmt.Errorf("list the recovery candidates: %w", err)
	}
	out := make([]sweep.Candidate, 0, len(got.GetCandidates()))
	for _, c := range got.GetCandidates() {
		out = append(out, sweep.Candidate{
			SessionID: c.GetSessionId(), Status: c.GetStatus(), PausedBy: c.GetPausedBy(),
			BlockedOnElicitation: c.GetBlockedOnElicitation(), RunningJobID: c.GetRunningJobId(),
			UpdatedAt: c.GetUpdatedAt().AsTime(),
		})
	}
	return out, nil
}

// ArchiveState implements clone.Sessions.
func (l *Lifecycle) ArchiveState(ctx context.Context, sessionID int64) (clone.SessionState, error) {
	s, err := l.session(ctx, sessionID)
	if err != nil {
		return clone.SessionState{}, err
	}
	return clone.SessionState{Status: s.GetStatus(), ArchivedAt: timeOf(s.GetArchivedAt()), TrashAfter: timeOf(s.GetTrashAfter())}, nil
}

// ClearTrashExpiry implements clone.Sessions.
func (l *Lifecycle) ClearTrashExpiry(ctx context.Context, sessionID int64, archivedAt time.Time) (bool, error) {
	resp, err := l.client.ClearTrashExpiry(ctx, &lifecyclev1.ClearTrashExpiryRequest{
		SessionId: sessionID, ArchivedAt: timestamppb.New(archivedAt),
	})
	if err != nil {
		return false, fmt.Errorf("clear session %d's trash deadline: %w", sessionID, err)
	}
	return resp.GetCleared(), nil
}

// Note implements clone.Sessions.
func (l *Lifecycle) Note(ctx context.Context, sessionID int64, noteID, message string, warning bool) error {
	_, err := l.client.RecordTimelineNote(ctx, &lifecyclev1.RecordTimelineNoteRequest{
		SessionId: sessionID, NoteId: noteID, Message: message, Warning: warning,
	})
	if err != nil {
		return fmt.Errorf("note on session %d's timeline: %w", sessionID, err)
	}
	return nil
}

// PromptSession reads what a turn's prompt needs of its session and the
// provenance setting it runs under.
func (l *Lifecycle) PromptSession(ctx context.Context, sessionID int64) (workflow.PromptSession, error) {
	got, err := l.client.GetSession(ctx, &lifecyclev1.GetSessionRequest{SessionId: strconv.FormatInt(sessionID, 10)})
	if err != nil {
		return workflow.PromptSession{}, fmt.Errorf("read session %d: %w", sessionID, err)
	}
	settings, err := l.client.GetSettings(ctx, &lifecyclev1.GetSettingsRequest{})
	if err != nil {
		return workflow.PromptSession{}, fmt.Errorf("read the experimental settings: %w", err)
	}
	s := got.GetSession()
	return workflow.PromptSession{
		Goal: s.GetGoal(), Notes: s.GetNotes(),
		StatusSummaryFork: s.GetCustomMetadata().GetFields()[rules.StatusSummaryForkKey].GetBoolValue(),
		ProvenanceViaMCP:  settings.GetSettings().GetProvenanceViaMcpEnabled(),
	}, nil
}

// SessionID resolves a session's numeric id or slug to its id; an
// unknown one is lifecycle's NotFound, a malformed one its
// InvalidArgument.
func (l *Lifecycle) SessionID(ctx context.Context, ref string) (int64, error) {
	got, err := l.client.GetSession(ctx, &lifecyclev1.GetSessionRequest{SessionId: ref})
	if err != nil {
		return 0, err
	}
	return got.GetSession().GetId(), nil
}

// session reads a session; one lifecycle does not know is {Status:
// domain.StatusGone}, which every reader here treats as gone.
func (l *Lifecycle) session(ctx context.Context, sessionID int64) (*lifecyclev1.Session, error) {
	got, err := l.client.GetSession(ctx, &lifecyclev1.GetSessionRequest{SessionId: strconv.FormatInt(sessionID, 10)})
	if status.Code(err) == codes.NotFound {
		return &lifecyclev1.Session{Id: sessionID, Status: domain.StatusGone}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read session %d: %w", sessionID, err)
	}
	return got.GetSession(), nil
}

func timeOf(ts *timestamppb.Timestamp) *time.Time {
	if ts == nil {
		return nil
	}
	t := ts.AsTime().UTC()
	return &t
}

// SummarySource implements summary.Lifecycle.
func (l *Lifecycle) SummarySource(ctx context.Context, id int64) (summary.Source, error) {
	s, err := l.session(ctx, id)
	if err != nil {
		return summary.Source{}, err
	}
	return summary.Source{
		Gone: s.GetStatus() == domain.StatusGone, Archived: s.GetStatus() == rules.StatusArchived,
		IsFork:  s.GetCustomMetadata().GetFields()[rules.StatusSummaryForkKey].GetBoolValue(),
		Covered: s.GetStatusSummary().GetTranscriptPosition(),
	}, nil
}

// CreateFork implements summary.Lifecycle.
func (l *Lifecycle) CreateFork(ctx context.Context, sourceID int64, prompt string, covers int64) (int64, bool, error) {
	resp, err := l.client.CreateStatusSummaryFork(ctx, &lifecyclev1.CreateStatusSummaryForkRequest{
		SourceSessionId: sourceID, Prompt: prompt, TranscriptPosition: covers,
	})
	if err != nil {
		return 0, false, fmt.Errorf("fork session %d for its status summary: %w", sourceID, err)
	}
	return resp.GetFork().GetId(), resp.GetCreated(), nil
}

// HarvestFork implements summary.Lifecycle.
func (l *Lifecycle) HarvestFork(ctx context.Context, forkID int64, text, failure string) error {
	_, err := l.client.HarvestStatusSummaryFork(ctx, &lifecyclev1.HarvestStatusSummaryForkRequest{
		ForkSessionId: forkID, Text: text, FailureReason: failure,
	})
	switch status.Code(err) {
	case codes.OK:
		return nil
	case codes.FailedPrecondition:
		return &summary.NotAForkError{Message: status.Convert(err).Message()}
	}
	return fmt.Errorf("harvest status-summary fork %d: %w", forkID, err)
}

// PendingInference implements infer.Sessions. A session deleted since its
// pause has nothing pending.
func (l *Lifecycle) PendingInference(ctx context.Context, sessionID int64) (infer.Request, error) {
	got, err := l.client.GetPendingInference(ctx, &lifecyclev1.GetPendingInferenceRequest{SessionId: sessionID})
	if status.Code(err) == codes.NotFound {
		return infer.Request{SessionID: sessionID}, nil
	}
	if err != nil {
		return infer.Request{}, fmt.Errorf("read what session %d still needs inferred: %w", sessionID, err)
	}
	req := infer.Request{
		SessionID: sessionID, Runtime: got.GetAgentRuntime(), Title: got.GetTitle(), Category: got.GetCategory(),
		Prompt: got.GetPrompt(), Goal: got.GetGoal(),
	}
	for _, c := range got.GetCategories() {
		req.Choices = append(req.Choices, infer.Choice{ID: c.GetId(), Name: c.GetName()})
	}
	return req, nil
}

// RecordInference implements infer.Sessions. A refusal (a category
// deleted since it was offered) is infer.ErrAnswerRefused.
func (l *Lifecycle) RecordInference(ctx context.Context, sessionID int64, in infer.Inferred) (infer.Recorded, error) {
	got, err := l.client.RecordInference(ctx, &lifecyclev1.RecordInferenceRequest{
		SessionId: sessionID, Title: in.Title, CategoryId: in.CategoryID,
	})
	if status.Code(err) == codes.InvalidArgument {
		return infer.Recorded{}, fmt.Errorf("%w: %s", infer.ErrAnswerRefused, status.Convert(err).Message())
	}
	if err != nil {
		return infer.Recorded{}, fmt.Errorf("record the inference of session %d: %w", sessionID, err)
	}
	return infer.Recorded{TitleSet: got.GetTitleSet(), CategorySet: got.GetCategorySet()}, nil
}

// RecordPullRequest implements workflow.PullRequestRecorder: lifecycle
// tracks the pull request on the session (a second record of it is a
// no-op there).
func (l *Lifecycle) RecordPullRequest(ctx context.Context, sessionID int64, turnID, url string) error {
	_, err := l.client.RecordPullRequest(ctx, &lifecyclev1.RecordPullRequestRequest{SessionId: sessionID, TurnId: turnID, Url: url})
	if err != nil {
		return fmt.Errorf("record pull request %s on session %d: %w", url, sessionID, err)
	}
	return nil
}

// AcquireSlot implements workflow.Lifecycle. A lifecycle that keeps no turn
// slots (Unimplemented: one older than them) grants every turn, as before.
func (l *Lifecycle) AcquireSlot(ctx context.Context, req workflow.SlotRequest) (workflow.SlotAnswer, error) {
	resp, err := l.client.AcquireTurnSlot(ctx, &lifecyclev1.AcquireTurnSlotRequest{SessionId: req.SessionID, TurnId: req.TurnID, Node: req.Node})
	switch status.Code(err) {
	case codes.OK:
		return workflow.SlotAnswer{Granted: resp.GetGranted(), Position: int(resp.GetWait().GetPosition())}, nil
	case codes.Unimplemented:
		return workflow.SlotAnswer{Granted: true}, nil
	case codes.NotFound:
		return workflow.SlotAnswer{}, &workflow.RefusedError{Event: "acquire a turn slot", Status: domain.StatusGone, Message: status.Convert(err).Message()}
	case codes.FailedPrecondition, codes.InvalidArgument:
		return workflow.SlotAnswer{}, &workflow.RefusedError{Event: "acquire a turn slot", Message: status.Convert(err).Message()}
	}
	return workflow.SlotAnswer{}, fmt.Errorf("acquire a turn slot for session %d: %w", req.SessionID, err)
}

// SetNodeSlots tells lifecycle this runner node's own limit of
// concurrently running turns (RUNNER_TURN_SLOTS; nil: none). A lifecycle
// that keeps no turn slots (Unimplemented) has nothing to hold it to.
func (l *Lifecycle) SetNodeSlots(ctx context.Context, node string, limit *int) error {
	req := &lifecyclev1.SetNodeTurnSlotsRequest{Node: node}
	if limit != nil {
		n := int32(*limit) //nolint:gosec // config.Load bounds it to MaxNodeTurnSlots
		req.Limit = &n
	}
	_, err := l.client.SetNodeTurnSlots(ctx, req)
	if err != nil && status.Code(err) != codes.Unimplemented {
		return fmt.Errorf("tell lifecycle node %s's turn slots: %w", node, err)
	}
	return nil
}

// ReleaseSlot implements workflow.Lifecycle.
func (l *Lifecycle) ReleaseSlot(ctx context.Context, req workflow.SlotRequest) ([]int64, error) {
	resp, err := l.client.ReleaseTurnSlot(ctx, &lifecyclev1.ReleaseTurnSlotRequest{SessionId: req.SessionID, TurnId: req.TurnID})
	switch status.Code(err) {
	case codes.OK:
		return resp.GetGrantedSessionIds(), nil
	case codes.Unimplemented, codes.NotFound:
		return nil, nil // nothing to give back
	}
	return nil, fmt.Errorf("release the turn slot of session %d: %w", req.SessionID, err)
}
