package sink

import (
	"context"
	"log/slog"
)

// Log writes the message as a structured log line: the default sink, and the
// one that never fails. Alerts log at ERROR with alert=true (what operators
// watch for); pushes at INFO.
type Log struct{ Logger *slog.Logger }

var _ Sink = Log{}

// Name implements Sink.
func (Log) Name() string { return "log" }

// Send implements Sink.
func (l Log) Send(ctx context.Context, m Message) error {
	level := slog.LevelInfo
	if m.Kind == KindAlert {
		level = slog.LevelError
	}
	l.Logger.Log(ctx, level, string(m.Kind)+": "+m.Title,
		string(m.Kind), true,
		"title", m.Title,
		"body", m.Body,
		"session_id", m.SessionID,
		"url", m.URL,
		"dedup_key", m.DedupKey,
		"time", m.Time,
	)
	return nil
}
