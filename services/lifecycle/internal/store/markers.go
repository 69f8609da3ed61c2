package store

import (
	"encoding/json"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
)

// markersColumn is how domain.Markers is kept in the sessions.markers jsonb
// column: the keys are the spec's marker names, and a marker at its zero
// value is left out. It has the domain type's fields, so the two convert
// into each other and a marker added to one must be added to the other.
type markersColumn struct {
	PausedBy                 string `json:"paused_by,omitempty"`
	PendingSleep             bool   `json:"pending_sleep,omitempty"`
	PendingSleepRequiresWake bool   `json:"pending_sleep_requires_wake,omitempty"`
	BlockedOnElicitation     bool   `json:"blocked_on_elicitation,omitempty"`
	LostElicitation          string `json:"lost_elicitation,omitempty"`
	MCPFailure               string `json:"mcp_failure,omitempty"`
	AuthOutageReason         string `json:"auth_outage_reason,omitempty"`
	DrainAttempts            int    `json:"drain_attempts,omitempty"`
	NeedsInputCount          int64  `json:"needs_input_count,omitempty"`
	PRURLWarned              bool   `json:"pr_url_warned,omitempty"`
	RunningJobID             string `json:"running_job_id,omitempty"`
	FailureReason            string `json:"failure_reason,omitempty"`
	RecoveryAbandoned        string `json:"recovery_continue_abandoned,omitempty"`
}

func encodeMarkers(m domain.Markers) ([]byte, error) { return json.Marshal(markersColumn(m)) }

func decodeMarkers(b []byte) (domain.Markers, error) {
	var m markersColumn
	err := json.Unmarshal(b, &m)
	return domain.Markers(m), err
}
