package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
)

// syncWriter serialises writes from concurrent children so lines never interleave.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// lineWriter calls emit once per complete line.
type lineWriter struct {
	buf  []byte
	emit func(line []byte)
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		l.emit(l.buf[:i])
		l.buf = l.buf[i+1:]
	}
}

// prefixWriter writes each line with a fixed prefix.
type prefixWriter struct {
	prefix string
	w      io.Writer
	lw     *lineWriter
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	if p.lw == nil {
		p.lw = &lineWriter{emit: func(line []byte) { fmt.Fprintf(p.w, "%s%s\n", p.prefix, line) }}
	}
	return p.lw.Write(b)
}

// newLogTail returns a writer that shows a service's JSON log lines compactly
// on the terminal as "name | LEVEL msg key=value ..."; the full lines go to
// the log file.
func newLogTail(name string, width int, w io.Writer) io.Writer {
	prefix := fmt.Sprintf("%-*s | ", width, name)
	return &lineWriter{emit: func(line []byte) {
		fmt.Fprintf(w, "%s%s\n", prefix, compactLogLine(line))
	}}
}

// compactLogLine renders a slog JSON line without its timestamp; anything that
// is not JSON is shown as is.
func compactLogLine(line []byte) string {
	var rec map[string]any
	if json.Unmarshal(line, &rec) != nil {
		return string(line)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-5v %v", rec["level"], rec["msg"])
	keys := make([]string, 0, len(rec))
	for k := range rec {
		switch k {
		case "time", "level", "msg", "source":
		default:
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		v, _ := json.Marshal(rec[k])
		fmt.Fprintf(&b, " %s=%s", k, strings.Trim(string(v), `"`))
	}
	const max = 240
	if s := b.String(); len(s) > max {
		return s[:max] + "…"
	}
	return b.String()
}

// printSkipped says loudly, inside the summary, what a test run left out
// and why, so that a green run is never read as "every test ran".
func printSkipped(w io.Writer, what string) {
	bar := strings.Repeat("!", 78)
	fmt.Fprintf(w, "%s\n!!! %s\n%s\n", bar, what, bar)
}
