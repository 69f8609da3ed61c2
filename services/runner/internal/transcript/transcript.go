// Package transcript keeps what each turn's agent printed: one Line per
// output line, grouped by turn, bounded per turn (Limits), read a page at a
// time newest turn first, and followed live (Follow) as a turn runs.
//
// The turn calls a Sink for every line its runtime parsed (agent.Event);
// the runner's store is the Postgres implementation, and Recorder wraps it
// so that followers in this process hear of a line as soon as it is
// committed. Followers elsewhere (another runner replica) find it by
// polling.
package transcript

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/zimmerhq/zimmer/services/runner/internal/agent"
)

// Sink receives a turn's lines in the order the agent printed them.
type Sink interface {
	// Append records one line of turn turnID of session sessionID. The
	// first line of a turn starts it. A line past the turn's bounds is
	// counted, not stored.
	Append(ctx context.Context, sessionID int64, turnID string, e agent.Event) error
}

// KindDropped is the kind of the line that stands for the lines a turn
// printed past its bounds; its text says how many.
const KindDropped = "dropped"

// Line is one stored transcript line.
type Line struct {
	// ID orders a session's lines as they were appended; a follower
	// resumes after the last one it saw.
	ID        int64
	SessionID int64
	TurnID    string
	// Seq counts a turn's lines from 1 in the order printed.
	Seq  int32
	Kind string
	// Type is the runtime's own name for the line (agent.Event.Type).
	Type string
	Text string
	Raw  string
	// RawTruncated says Raw was cut at Limits.MaxRawBytes.
	RawTruncated bool
	IsError      bool
	CreatedAt    time.Time
}

// Turn is one turn's transcript, without its lines.
type Turn struct {
	TurnID    string
	SessionID int64
	StartedAt time.Time
	// EndedAt is zero while the turn runs; Outcome is then "".
	EndedAt      time.Time
	Outcome      string
	StoredLines  int32
	StoredBytes  int64
	DroppedLines int64
}

// Limits bound what one turn keeps. A runaway agent printing without end
// must not fill the runner's database; an operator still sees where the
// output stopped being kept and how much was lost.
type Limits struct {
	// MaxLines is how many lines a turn keeps.
	MaxLines int32
	// MaxBytes is how many bytes of text and raw output a turn keeps.
	MaxBytes int64
	// MaxRawBytes cuts one line's raw output: a tool result can be a whole
	// file. Text is already cut by the runtime (agent.Event.Text).
	MaxRawBytes int
}

// DefaultLimits: 5,000 lines and 8 MiB a turn, 64 KiB a raw line. A long
// Claude Code turn prints a few hundred lines; the bounds only bite on a
// runaway.
var DefaultLimits = Limits{MaxLines: 5000, MaxBytes: 8 << 20, MaxRawBytes: 64 << 10}

// Usage is what a turn has stored so far, read under the turn's lock.
type Usage struct {
	StoredLines  int32
	StoredBytes  int64
	DroppedLines int64
}

// Admission is what to do with a line.
type Admission int

const (
	// Store the line as the turn's next.
	Store Admission = iota
	// DropFirst: the first line past the bounds; store a KindDropped
	// marker instead.
	DropFirst
	// Drop: count the line; update the marker's count.
	Drop
)

// Admit decides whether a line of size bytes (Size) is stored, given what
// the turn holds. Once a line is dropped every later one is too, so a
// turn's stored lines are always a prefix of what the agent printed.
func (l Limits) Admit(u Usage, size int64) Admission {
	switch {
	case u.DroppedLines > 0:
		return Drop
	case u.StoredLines >= l.MaxLines || u.StoredBytes+size > l.MaxBytes:
		return DropFirst
	}
	return Store
}

// Size is what a line counts against Limits.MaxBytes.
func Size(l Line) int64 { return int64(len(l.Text) + len(l.Raw)) }

// DroppedText is the marker line's text.
func (l Limits) DroppedText(dropped int64) string {
	return fmt.Sprintf("%d later line(s) of this turn were not kept: a turn keeps at most %d lines and %d bytes of output",
		dropped, l.MaxLines, l.MaxBytes)
}

// NewLine is the line to store for e: text made storable (valid UTF-8, no
// NUL, which Postgres cannot hold) and raw cut at MaxRawBytes.
func (l Limits) NewLine(sessionID int64, turnID string, e agent.Event) Line {
	raw := storable(e.Raw)
	truncated := false
	if len(raw) > l.MaxRawBytes {
		raw, truncated = cutUTF8(raw, l.MaxRawBytes), true
	}
	kind := string(e.Kind)
	if kind == "" {
		kind = string(agent.KindText)
	}
	return Line{
		SessionID: sessionID, TurnID: turnID, Kind: kind, Type: storable(e.Type),
		Text: storable(e.Text), Raw: raw, RawTruncated: truncated, IsError: e.IsError,
	}
}

func storable(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// cutUTF8 cuts s to at most n bytes without splitting a character.
func cutUTF8(s string, n int) string {
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Query asks for a page of a session's transcript: newest turn first, each
// turn's lines in the order printed.
type Query struct {
	SessionID int64
	// TurnID, if set, reads that turn only.
	TurnID string
	// PageSize bounds the lines on the page (Page.Lines may hold fewer:
	// a page also stops at MaxPageBytes).
	PageSize int
	// After continues from a previous page's Next.
	After Cursor
}

// Page sizes, in lines, and the bytes a page may hold: a page must fit a
// gRPC message with room to spare, and 1,000 lines at the line bounds would
// not.
const (
	DefaultPageSize = 500
	MaxPageSize     = 1000
	MaxPageBytes    = 4 << 20
)

// Page is one page of a transcript.
type Page struct {
	// Turns are the turns whose lines are on the page, newest first.
	Turns []Turn
	Lines []Line
	// Next continues the reading; zero when there is nothing more.
	Next Cursor
}

// Cursor is a position in the newest-turn-first order: after line Seq of
// the turn at Position.
type Cursor struct {
	Position int64
	Seq      int32
}

// IsZero reports whether c is the start.
func (c Cursor) IsZero() bool { return c == Cursor{} }

// Token is c as an opaque page token ("" for the start).
func (c Cursor) Token() string {
	if c.IsZero() {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "%d:%d", c.Position, c.Seq))
}

// ParseToken reads a page token made by Token.
func ParseToken(token string) (Cursor, error) {
	if token == "" {
		return Cursor{}, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return Cursor{}, ErrBadToken
	}
	pos, seq, ok := strings.Cut(string(b), ":")
	if !ok {
		return Cursor{}, ErrBadToken
	}
	p, err1 := strconv.ParseInt(pos, 10, 64)
	s, err2 := strconv.ParseInt(seq, 10, 32)
	if err1 != nil || err2 != nil || p < 1 || s < 0 {
		return Cursor{}, ErrBadToken
	}
	return Cursor{Position: p, Seq: int32(s)}, nil
}

// ErrBadToken is the error ParseToken returns.
var ErrBadToken = errors.New("not a page token of this transcript; pass next_page_token as it was returned, or leave it out to start")
