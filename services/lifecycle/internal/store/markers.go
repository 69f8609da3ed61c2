package store

import (
	"encoding/json"
	"time"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
)

// markersColumn is how domain.Markers is kept in the sessions.markers jsonb
// column: the keys are the spec's marker names, and a marker at its zero
// value is left out. A marker added to domain.Markers must be added here
// and to both conversions; the two elicitation markers and the status
// summary are objects.
type markersColumn struct {
	scalarMarkers
	Elicitation     *elicitationColumn     `json:"elicitation,omitempty"`
	LostElicitation *lostElicitationColumn `json:"lost_elicitation,omitempty"`
	StatusSummary   *statusSummaryColumn   `json:"status_summary,omitempty"`
}

type statusSummaryColumn struct {
	Text               string                      `json:"text,omitempty"`
	GeneratedAt        *time.Time                  `json:"generated_at,omitempty"`
	TranscriptPosition int64                       `json:"transcript_position,omitempty"`
	ForkSessionID      int64                       `json:"fork_session_id,omitempty"`
	Failure            *statusSummaryFailureColumn `json:"failure,omitempty"`
}

type statusSummaryFailureColumn struct {
	Reason             string    `json:"reason"`
	FailedAt           time.Time `json:"failed_at"`
	ForkSessionID      int64     `json:"fork_session_id"`
	TranscriptPosition int64     `json:"transcript_position,omitempty"`
}

type scalarMarkers struct {
	PausedBy                 string `json:"paused_by,omitempty"`
	PendingSleep             bool   `json:"pending_sleep,omitempty"`
	PendingSleepRequiresWake bool   `json:"pending_sleep_requires_wake,omitempty"`
	BlockedOnElicitation     bool   `json:"blocked_on_elicitation,omitempty"`
	MCPFailure               string `json:"mcp_failure,omitempty"`
	AuthOutageReason         string `json:"auth_outage_reason,omitempty"`
	DrainAttempts            int    `json:"drain_attempts,omitempty"`
	NeedsInputCount          int64  `json:"needs_input_count,omitempty"`
	PRURLWarned              bool   `json:"pr_url_warned,omitempty"`
	RunningJobID             string `json:"running_job_id,omitempty"`
	FailureReason            string `json:"failure_reason,omitempty"`
	RecoveryAbandoned        string `json:"recovery_continue_abandoned,omitempty"`
}

type elicitationColumn struct {
	ID              string         `json:"id"`
	TurnID          string         `json:"turn_id,omitempty"`
	Message         string         `json:"message,omitempty"`
	RequestedSchema map[string]any `json:"requested_schema,omitempty"`
	RequestedAt     time.Time      `json:"requested_at"`
	ExpiresAt       *time.Time     `json:"expires_at,omitempty"`
}

type lostElicitationColumn struct {
	Reason    string    `json:"reason"`
	RequestID string    `json:"request_id,omitempty"`
	Summary   string    `json:"summary,omitempty"`
	LostAt    time.Time `json:"lost_at"`
}

func encodeMarkers(m domain.Markers) ([]byte, error) {
	col := markersColumn{scalarMarkers: scalarMarkers{
		PausedBy: m.PausedBy, PendingSleep: m.PendingSleep, PendingSleepRequiresWake: m.PendingSleepRequiresWake,
		BlockedOnElicitation: m.BlockedOnElicitation, MCPFailure: m.MCPFailure, AuthOutageReason: m.AuthOutageReason,
		DrainAttempts: m.DrainAttempts, NeedsInputCount: m.NeedsInputCount, PRURLWarned: m.PRURLWarned,
		RunningJobID: m.RunningJobID, FailureReason: m.FailureReason, RecoveryAbandoned: m.RecoveryAbandoned,
	}}
	if e := m.Elicitation; e != nil {
		col.Elicitation = &elicitationColumn{ID: e.ID, TurnID: e.TurnID, Message: e.Message,
			RequestedSchema: e.RequestedSchema, RequestedAt: e.RequestedAt}
		if !e.ExpiresAt.IsZero() {
			at := e.ExpiresAt
			col.Elicitation.ExpiresAt = &at
		}
	}
	if l := m.LostElicitation; l != nil {
		col.LostElicitation = &lostElicitationColumn{Reason: l.Reason, RequestID: l.RequestID, Summary: l.Summary, LostAt: l.LostAt}
	}
	if ss := m.StatusSummary; ss != nil {
		col.StatusSummary = &statusSummaryColumn{Text: ss.Text, TranscriptPosition: ss.TranscriptPosition, ForkSessionID: ss.ForkSessionID}
		if !ss.GeneratedAt.IsZero() {
			at := ss.GeneratedAt
			col.StatusSummary.GeneratedAt = &at
		}
		if f := ss.Failure; f != nil {
			col.StatusSummary.Failure = &statusSummaryFailureColumn{Reason: f.Reason, FailedAt: f.FailedAt,
				ForkSessionID: f.ForkSessionID, TranscriptPosition: f.TranscriptPosition}
		}
	}
	return json.Marshal(col)
}

func decodeMarkers(b []byte) (domain.Markers, error) {
	var col markersColumn
	if err := json.Unmarshal(b, &col); err != nil {
		return domain.Markers{}, err
	}
	s := col.scalarMarkers
	m := domain.Markers{
		PausedBy: s.PausedBy, PendingSleep: s.PendingSleep, PendingSleepRequiresWake: s.PendingSleepRequiresWake,
		BlockedOnElicitation: s.BlockedOnElicitation, MCPFailure: s.MCPFailure, AuthOutageReason: s.AuthOutageReason,
		DrainAttempts: s.DrainAttempts, NeedsInputCount: s.NeedsInputCount, PRURLWarned: s.PRURLWarned,
		RunningJobID: s.RunningJobID, FailureReason: s.FailureReason, RecoveryAbandoned: s.RecoveryAbandoned,
	}
	if e := col.Elicitation; e != nil {
		m.Elicitation = &domain.Elicitation{ID: e.ID, TurnID: e.TurnID, Message: e.Message,
			RequestedSchema: e.RequestedSchema, RequestedAt: e.RequestedAt}
		if e.ExpiresAt != nil {
			m.Elicitation.ExpiresAt = *e.ExpiresAt
		}
	}
	if l := col.LostElicitation; l != nil {
		m.LostElicitation = &domain.LostElicitation{Reason: l.Reason, RequestID: l.RequestID, Summary: l.Summary, LostAt: l.LostAt}
	}
	if ss := col.StatusSummary; ss != nil {
		m.StatusSummary = &domain.StatusSummary{Text: ss.Text, TranscriptPosition: ss.TranscriptPosition, ForkSessionID: ss.ForkSessionID}
		if ss.GeneratedAt != nil {
			m.StatusSummary.GeneratedAt = *ss.GeneratedAt
		}
		if f := ss.Failure; f != nil {
			m.StatusSummary.Failure = &domain.StatusSummaryFailure{Reason: f.Reason, FailedAt: f.FailedAt,
				ForkSessionID: f.ForkSessionID, TranscriptPosition: f.TranscriptPosition}
		}
	}
	return m, nil
}
