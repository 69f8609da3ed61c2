package pager_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/notification/internal/domain"
	"github.com/zimmerhq/zimmer/services/notification/internal/pager"
)

func TestLogPagesAtErrorWithTheAlertFields(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	p := pager.Log{Logger: slog.New(slog.NewJSONHandler(&buf, nil))}
	at := time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC)

	p.Page(context.Background(), domain.Alert{
		ID: 7, DedupKey: "cleanup_running_job", Summary: "cleanup failed",
		Details: map[string]any{"error": "boom"}, Occurrences: 1,
		FirstSeenAt: at, LastSeenAt: at, DedupUntil: at.Add(15 * time.Minute),
	})

	var line map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &line))
	require.Equal(t, "ERROR", line["level"])
	require.Equal(t, true, line["alert"])
	require.Equal(t, "cleanup_running_job", line["dedup_key"])
	require.Equal(t, "cleanup failed", line["summary"])
	require.EqualValues(t, 7, line["alert_id"])
	require.Equal(t, map[string]any{"error": "boom"}, line["details"])
}
