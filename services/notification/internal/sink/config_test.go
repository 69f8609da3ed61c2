package sink_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/notification/internal/sink"
)

func loadRoutes(t *testing.T, env map[string]string) (sink.Routes, error) {
	t.Helper()
	cfg, err := sink.LoadConfig(context.Background(), func(k string) string { return env[k] })
	require.NoError(t, err)
	return sink.New(cfg, slog.New(slog.DiscardHandler))
}

func names(sinks []sink.Sink) []string {
	out := make([]string, 0, len(sinks))
	for _, s := range sinks {
		out = append(out, s.Name())
	}
	return out
}

func TestDefaultRoutesLogOnly(t *testing.T) {
	t.Parallel()
	r, err := loadRoutes(t, nil)
	require.NoError(t, err)
	require.Equal(t, []string{"log"}, names(r.Push))
	require.Equal(t, []string{"log"}, names(r.Alert))
}

func TestRoutesAreConfiguredSeparately(t *testing.T) {
	t.Parallel()
	r, err := loadRoutes(t, map[string]string{
		"NOTIFICATION_SINKS":             "log, webhook,ntfy,slack,email",
		"ZIMMER_ALERT_SINKS":             "slack,ntfy,slack",
		"NOTIFICATION_WEBHOOK_URL":       "https://hooks.example/zimmer",
		"NOTIFICATION_WEBHOOK_SECRET":    "k",
		"NOTIFICATION_NTFY_TOPIC":        "zimmer-ops",
		"NOTIFICATION_SLACK_WEBHOOK_URL": "https://hooks.slack.com/services/T/B/x",
		"NOTIFICATION_SMTP_ADDR":         "smtp.example:587",
		"NOTIFICATION_SMTP_FROM":         "zimmer@example.com",
		"NOTIFICATION_SMTP_TO":           "a@example.com, b@example.com",
	})
	require.NoError(t, err)
	require.Equal(t, []string{"log", "webhook", "ntfy", "slack", "email"}, names(r.Push))
	require.Equal(t, []string{"slack", "ntfy"}, names(r.Alert), "in order, once each")
	require.Equal(t, sink.Ntfy{ServerURL: "https://ntfy.sh", Topic: "zimmer-ops", Client: r.Push[2].(sink.Ntfy).Client}, r.Push[2], "ntfy.sh by default")
	require.Equal(t, []string{"a@example.com", "b@example.com"}, r.Push[4].(sink.Email).To)
}

func TestAnEnabledSinkMissingSettingsNamesEveryVariable(t *testing.T) {
	t.Parallel()
	_, err := loadRoutes(t, map[string]string{
		"NOTIFICATION_SINKS":       "webhook,email",
		"ZIMMER_ALERT_SINKS":       "ntfy,slack,pager",
		"NOTIFICATION_WEBHOOK_URL": "not a url",
		"NOTIFICATION_SMTP_ADDR":   "smtp.example",
	})
	require.Error(t, err)
	for _, want := range []string{
		"NOTIFICATION_WEBHOOK_URL must be an http(s) URL",
		"NOTIFICATION_WEBHOOK_SECRET is not set",
		"NOTIFICATION_SMTP_ADDR must be host:port",
		"NOTIFICATION_SMTP_FROM is not set",
		"NOTIFICATION_SMTP_TO is not set",
		"NOTIFICATION_NTFY_TOPIC is not set",
		"NOTIFICATION_SLACK_WEBHOOK_URL is not set",
		`ZIMMER_ALERT_SINKS: unknown sink "pager"`,
	} {
		require.Contains(t, err.Error(), want)
	}
}

func TestConfigLogValueKeepsSecretsOut(t *testing.T) {
	t.Parallel()
	cfg, err := sink.LoadConfig(context.Background(), func(k string) string {
		return map[string]string{
			"NOTIFICATION_WEBHOOK_SECRET":    "whsecret",
			"NOTIFICATION_NTFY_TOKEN":        "tk_secret",
			"NOTIFICATION_SLACK_WEBHOOK_URL": "https://hooks.slack.com/services/SECRETPATH",
			"NOTIFICATION_SMTP_PASSWORD":     "smtpsecret",
		}[k]
	})
	require.NoError(t, err)
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("config", "sinks", cfg)
	for _, secret := range []string{"whsecret", "tk_secret", "SECRETPATH", "smtpsecret"} {
		require.NotContains(t, buf.String(), secret)
	}
}

func TestLogSinkLogsAlertsAtErrorAndPushesAtInfo(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	l := sink.Log{Logger: slog.New(slog.NewJSONHandler(&buf, nil))}
	require.NoError(t, l.Send(context.Background(), pushMessage()))
	require.NoError(t, l.Send(context.Background(), sink.Message{Kind: sink.KindAlert, Title: "cleanup failing", DedupKey: "cleanup", Time: sentAt}))

	lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
	require.Len(t, lines, 2)
	var push, alert map[string]any
	require.NoError(t, json.Unmarshal(lines[0], &push))
	require.NoError(t, json.Unmarshal(lines[1], &alert))
	require.Equal(t, "INFO", push["level"])
	require.Equal(t, "sess-1", push["session_id"])
	require.Equal(t, "needs_input:sess-1:3", push["dedup_key"])
	require.Equal(t, "ERROR", alert["level"])
	require.Equal(t, true, alert["alert"])
	require.Equal(t, "alert: cleanup failing", alert["msg"])
}
