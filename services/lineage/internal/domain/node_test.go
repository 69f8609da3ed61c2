package domain_test

import (
	"encoding/json"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lineage/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

func ptr(v int64) *int64 { return &v }

func TestRouterSessionID(t *testing.T) {
	t.Parallel()

	const self = 7
	tests := []struct {
		name     string
		metadata map[string]any
		want     *int64
	}{
		{"no metadata", nil, nil},
		{"key absent", map[string]any{"other": 3.0}, nil},
		{"JSON number", map[string]any{"router_session_id": 42.0}, ptr(42)},
		{"json.Number", map[string]any{"router_session_id": json.Number("42")}, ptr(42)},
		{"numeric string", map[string]any{"router_session_id": "42"}, ptr(42)},
		{"largest exact float", map[string]any{"router_session_id": float64(1 << 53)}, ptr(1 << 53)},
		{"fractional number", map[string]any{"router_session_id": 42.5}, nil},
		{"float beyond int64", map[string]any{"router_session_id": math.Pow(2, 63)}, nil},
		{"NaN", map[string]any{"router_session_id": math.NaN()}, nil},
		{"fractional json.Number", map[string]any{"router_session_id": json.Number("4.2")}, nil},
		{"string with spaces", map[string]any{"router_session_id": " 42"}, nil},
		{"non-numeric string", map[string]any{"router_session_id": "abc"}, nil},
		{"empty string", map[string]any{"router_session_id": ""}, nil},
		{"zero", map[string]any{"router_session_id": 0.0}, nil},
		{"negative", map[string]any{"router_session_id": "-3"}, nil},
		{"itself", map[string]any{"router_session_id": float64(self)}, nil},
		{"bool", map[string]any{"router_session_id": true}, nil},
		{"null", map[string]any{"router_session_id": nil}, nil},
		{"object", map[string]any{"router_session_id": map[string]any{"id": 42.0}}, nil},
		{"list", map[string]any{"router_session_id": []any{42.0}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, domain.RouterSessionID(self, tt.metadata))
		})
	}
}

func TestSpawnParent(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name           string
		parent, router *int64
		want           *int64
	}{
		{"neither", nil, nil, nil},
		{"column only", ptr(1), nil, ptr(1)},
		{"metadata only", nil, ptr(2), ptr(2)},
		{"column wins over metadata", ptr(1), ptr(2), ptr(1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, domain.SpawnParent(tt.parent, tt.router))
			n := domain.Node{SessionID: 9, ParentSessionID: tt.parent, RouterSessionID: tt.router}
			require.Equal(t, tt.want, n.SpawnParentID())
		})
	}
}

func TestNodeValidate(t *testing.T) {
	t.Parallel()

	valid := domain.Node{SessionID: 5, ParentSessionID: ptr(4), UpdatedAt: time.Unix(1, 0)}
	tests := []struct {
		name   string
		modify func(*domain.Node)
		field  string // empty: valid
	}{
		{"valid", func(*domain.Node) {}, ""},
		{"root", func(n *domain.Node) { n.ParentSessionID = nil }, ""},
		{"no id", func(n *domain.Node) { n.SessionID = 0 }, "session.id"},
		{"negative parent", func(n *domain.Node) { n.ParentSessionID = ptr(-1) }, "session.parent_session_id"},
		{"own parent", func(n *domain.Node) { n.ParentSessionID = ptr(5) }, "session.parent_session_id"},
		{"no updated_at", func(n *domain.Node) { n.UpdatedAt = time.Time{} }, "session.updated_at"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			n := valid
			tt.modify(&n)
			err := n.Validate()
			if tt.field == "" {
				require.NoError(t, err)
				return
			}
			var ve *validation.Error
			require.ErrorAs(t, err, &ve)
			require.Len(t, ve.Violations, 1)
			require.Equal(t, tt.field, ve.Violations[0].Field)
		})
	}
}

func TestSessionNotKnown(t *testing.T) {
	t.Parallel()

	err := domain.SessionNotKnown(12)
	require.ErrorIs(t, err, domain.ErrNotFound)
	require.EqualError(t, err, "session 12 is not known to lineage yet")
	require.False(t, errors.Is(errors.New("other"), domain.ErrNotFound))
}
