// Package slogx builds the JSON logger every process uses.
package slogx

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// New returns a JSON logger writing to w at the named level (debug, info,
// warn, error; empty means info), with the service name on every line.
func New(w io.Writer, service, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.TrimSpace(orDefault(level, "info")))); err != nil {
		return nil, fmt.Errorf("parse log level %q: want debug, info, warn or error", level)
	}
	h := slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l})
	return slog.New(h).With("service", service), nil
}

// Discard returns a logger that drops everything; for tests that do not
// inspect logs.
func Discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
