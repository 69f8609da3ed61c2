package mcp

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/zimmerhq/zimmer/gateway/internal/grpcerr"
	runnerv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/runner/v1"
)

// What get_session's include_transcript shows of the last turn: its first
// TranscriptLines lines, each cut at TranscriptLineChars characters. A
// transcript can be thousands of lines; a model reading a session needs the
// gist, and REST serves the whole (the section says where).
const (
	TranscriptLines     = 100
	TranscriptLineChars = 1000
)

// transcriptSection renders the session's last turn.
func (t *tools) transcriptSection(ctx context.Context, id int64) string {
	var b strings.Builder
	b.WriteString("### Last Turn's Transcript\n\n")
	if t.runner == nil {
		b.WriteString("Unavailable: this gateway has no runner to ask.\n")
		return b.String()
	}
	page, err := t.runner.GetTranscript(ctx, &runnerv1.GetTranscriptRequest{SessionId: fmt.Sprint(id), PageSize: TranscriptLines})
	if err != nil {
		p := grpcerr.FromCall(runnerv1.RunnerService_GetTranscript_FullMethodName, err)
		if p.Internal() {
			t.logger.ErrorContext(ctx, "MCP tool call failed", "tool", ToolGetSession, "part", "transcript", "code", p.Code.String(), "error", err)
		}
		b.WriteString("Unavailable: " + p.Message + "\n")
		return b.String()
	}
	if len(page.GetTurns()) == 0 {
		b.WriteString("No turn has run yet.\n")
		return b.String()
	}
	turn := page.GetTurns()[0] // newest first
	fmt.Fprintf(&b, "Turn `%s` started %s", turn.GetTurnId(), turn.GetStartedAt().AsTime().UTC().Format(time.RFC3339))
	if turn.GetEndedAt() != nil {
		fmt.Fprintf(&b, " and ended %s: %s.", turn.GetEndedAt().AsTime().UTC().Format(time.RFC3339), turn.GetOutcome())
	} else {
		b.WriteString(" and is still running.")
	}
	var lines []*runnerv1.TranscriptLine
	for _, l := range page.GetLines() {
		if l.GetTurnId() == turn.GetTurnId() {
			lines = append(lines, l)
		}
	}
	kept := int64(turn.GetStoredLines())
	if turn.GetDroppedLines() > 0 {
		kept++ // the marker line
	}
	if int64(len(lines)) < kept {
		fmt.Fprintf(&b, " Showing its first %d of %d lines; all of them: GET /api/v1/sessions/%d/transcript?turn=%s.",
			len(lines), kept, id, turn.GetTurnId())
	}
	b.WriteString("\n\n")
	for _, l := range lines {
		text := l.GetText()
		if utf8.RuneCountInString(text) > TranscriptLineChars {
			text = string([]rune(text)[:TranscriptLineChars]) + "…"
		}
		marker := ""
		if l.GetIsError() {
			marker = " (error)"
		}
		fmt.Fprintf(&b, "- [%s%s] %s\n", l.GetKind(), marker, strings.ReplaceAll(text, "\n", "\n  "))
	}
	return b.String()
}
