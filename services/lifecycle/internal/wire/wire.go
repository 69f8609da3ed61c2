// Package wire converts between the lifecycle domain and its protobuf
// messages, for the gRPC API and for the events lifecycle publishes.
package wire

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

// Session converts a domain session to its message. A session without
// custom_metadata (a list's summary) has none in the message either, rather
// than an empty object that would claim it is empty.
func Session(s domain.Session) (*lifecyclev1.Session, error) {
	var md *structpb.Struct
	if s.CustomMetadata != nil {
		var err error
		if md, err = structpb.NewStruct(s.CustomMetadata); err != nil {
			return nil, fmt.Errorf("encode custom_metadata of session %d: %w", s.ID, err)
		}
	}
	return &lifecyclev1.Session{
		Id:                        s.ID,
		Slug:                      s.Slug,
		Status:                    s.Status.String(),
		Title:                     s.Title,
		Prompt:                    s.Prompt,
		Goal:                      s.Goal,
		Notes:                     s.Notes,
		AgentRoot:                 s.AgentRoot,
		AgentRuntime:              s.AgentRuntime,
		GitRoot:                   s.GitRoot,
		Branch:                    s.Branch,
		Subdirectory:              s.Subdirectory,
		ParentSessionId:           s.ParentSessionID,
		Genesis:                   s.Genesis,
		SchedulingClass:           s.SchedulingClass,
		Precedence:                s.Precedence,
		CustomMetadata:            md,
		CreatedAt:                 timestamppb.New(s.CreatedAt),
		UpdatedAt:                 timestamppb.New(s.UpdatedAt),
		ArchivedAt:                timestampOrNil(s.ArchivedAt),
		TrashAfter:                timestampOrNil(s.TrashAfter),
		FailureReason:             s.Markers.FailureReason,
		PausedBy:                  s.Markers.PausedBy,
		AuthOutageReason:          s.Markers.AuthOutageReason,
		RecoveryContinueAbandoned: s.Markers.RecoveryAbandoned,
		PendingSleep:              s.Markers.PendingSleep,
		BlockedOnElicitation:      s.Markers.BlockedOnElicitation,
		NeedsInputCount:           s.Markers.NeedsInputCount,
		Version:                   s.Version,
		HeartbeatEnabled:          s.HeartbeatEnabled,
		HeartbeatIntervalSeconds:  s.HeartbeatIntervalSeconds,
		McpToolGroups:             s.MCPToolGroups,
		RunningJobId:              s.Markers.RunningJobID,
		PushNotifications:         s.PushNotifications,
		LostElicitation:           lostElicitation(s.Markers.LostElicitation),
		StatusSummary:             statusSummary(s.Markers.StatusSummary),
		CategoryId:                s.CategoryID,
		Starred:                   s.Starred,
		GithubPullRequests:        pullRequests(s.PullRequests),
	}, nil
}

func statusSummary(ss *domain.StatusSummary) *lifecyclev1.StatusSummary {
	if ss == nil {
		return nil
	}
	out := &lifecyclev1.StatusSummary{Text: ss.Text, TranscriptPosition: ss.TranscriptPosition, ForkSessionId: ss.ForkSessionID}
	if !ss.GeneratedAt.IsZero() {
		out.GeneratedAt = timestamppb.New(ss.GeneratedAt)
	}
	if f := ss.Failure; f != nil {
		out.Failure = &lifecyclev1.StatusSummaryFailure{Reason: f.Reason, FailedAt: timestamppb.New(f.FailedAt),
			ForkSessionId: f.ForkSessionID, TranscriptPosition: f.TranscriptPosition}
	}
	return out
}

// Category converts a category to its message.
func Category(c domain.Category) *lifecyclev1.Category {
	return &lifecyclev1.Category{Id: c.ID, Name: c.Name, Position: c.Position, Frozen: c.Frozen,
		CreatedAt: timestamppb.New(c.CreatedAt), UpdatedAt: timestamppb.New(c.UpdatedAt)}
}

// Categories converts categories to their messages, in order.
func Categories(cs []domain.Category) []*lifecyclev1.Category {
	out := make([]*lifecyclev1.Category, len(cs))
	for i, c := range cs {
		out[i] = Category(c)
	}
	return out
}

// PullRequest converts a tracked pull request to its message.
func PullRequest(pr domain.PullRequest) *lifecyclev1.GitHubPullRequest {
	return &lifecyclev1.GitHubPullRequest{Url: pr.URL(), Repository: pr.Repository(), Number: int32(min(pr.Number, rules.MaxPullRequestNumber)), //nolint:gosec // bounded
		State: string(pr.State)}
}

func pullRequests(prs []domain.PullRequest) []*lifecyclev1.GitHubPullRequest {
	out := make([]*lifecyclev1.GitHubPullRequest, 0, len(prs))
	for _, pr := range prs {
		out = append(out, PullRequest(pr))
	}
	return out
}

func lostElicitation(l *domain.LostElicitation) *lifecyclev1.LostElicitation {
	if l == nil {
		return nil
	}
	return &lifecyclev1.LostElicitation{Reason: l.Reason, RequestId: l.RequestID, Summary: l.Summary, LostAt: timestamppb.New(l.LostAt)}
}

// Elicitation converts the question session sessionID is blocked on to
// its message.
func Elicitation(sessionID int64, e domain.Elicitation) (*lifecyclev1.Elicitation, error) {
	m := &lifecyclev1.Elicitation{Id: e.ID, SessionId: sessionID, TurnId: e.TurnID, Message: e.Message,
		RequestedAt: timestamppb.New(e.RequestedAt)}
	if e.RequestedSchema != nil {
		schema, err := structpb.NewStruct(e.RequestedSchema)
		if err != nil {
			return nil, fmt.Errorf("encode the requested schema of elicitation %q: %w", e.ID, err)
		}
		m.RequestedSchema = schema
	}
	if !e.ExpiresAt.IsZero() {
		m.ExpiresAt = timestamppb.New(e.ExpiresAt)
	}
	return m, nil
}

// ElicitationFrom is the question a block_on_elicitation request carries;
// nil when it carries none.
func ElicitationFrom(m *lifecyclev1.Elicitation) *domain.Elicitation {
	if m == nil {
		return nil
	}
	e := &domain.Elicitation{ID: m.GetId(), TurnID: m.GetTurnId(), Message: m.GetMessage()}
	if m.GetRequestedSchema() != nil {
		e.RequestedSchema = m.GetRequestedSchema().AsMap()
	}
	if m.GetExpiresAt() != nil {
		e.ExpiresAt = m.GetExpiresAt().AsTime()
	}
	return e
}

func timestampOrNil(t *time.Time) *timestamppb.Timestamp {
	if t == nil {
		return nil
	}
	return timestamppb.New(*t)
}

// Trigger converts a trigger to its message.
func Trigger(t domain.Trigger) *lifecyclev1.Trigger {
	m := &lifecyclev1.Trigger{
		Id:               t.ID,
		SessionId:        t.SessionID,
		Kind:             string(t.Kind),
		WatchedSessionId: t.WatchedSessionID,
		Prompt:           t.Prompt,
		Source:           string(t.Source),
		CreatedAt:        timestamppb.New(t.CreatedAt),
	}
	if !t.FireAt.IsZero() {
		m.FireAt = timestamppb.New(t.FireAt)
	}
	for _, s := range t.States {
		m.States = append(m.States, s.String())
	}
	if t.Kind == domain.KindOneTime {
		m.WorkflowId = t.WorkflowID()
		m.Timezone = t.Timezone
	}
	return m
}
