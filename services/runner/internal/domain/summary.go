package domain

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A status summary (session-lifecycle.md, the pause hook's step 6) is
// written by a throwaway fork of the session, whose one turn reads the
// newest part of the session's transcript and says where the work stands.
// The position a summary covers is the id of the newest transcript line
// the fork was shown: line ids only grow, so a session has moved since its
// summary exactly when its newest line's id is greater.

// SummaryNeeded reports whether a session whose newest transcript line is
// newest, and whose summary covers the transcript up to covered, has moved
// since: a transition that added no transcript costs nothing.
func SummaryNeeded(newest, covered int64) bool { return newest > covered }

// SummaryLine is one transcript line as a summary reads it.
type SummaryLine struct {
	Kind    string
	Text    string
	IsError bool
}

// What a fork is shown of its source's transcript: its newest lines, each
// cut, within a total. A summary is of where the work stands, which the
// newest lines say; the whole transcript could be megabytes.
const (
	SummaryMaxLines     = 200
	SummaryMaxLineRunes = 500
	SummaryMaxBytes     = 48 << 10
)

// The fork's prompt: a request naming the source and the position, the
// instructions, and the transcript, one "[kind] text" line per line.
const (
	summaryRequestOpen   = `<status-summary-request session="%d" transcript-position="%d">`
	summaryRequestClose  = "</status-summary-request>"
	summaryTranscript    = "<source-transcript>"
	summaryTranscriptEnd = "</source-transcript>"
)

var summaryRequest = regexp.MustCompile(`<status-summary-request session="(\d+)" transcript-position="(\d+)">`)

// SummaryPrompt is the one turn of session sourceID's fork: lines are the
// newest of its transcript, oldest first, up to position.
func SummaryPrompt(sourceID, position int64, lines []SummaryLine) string {
	var b strings.Builder
	fmt.Fprintf(&b, summaryRequestOpen+"\n", sourceID, position)
	fmt.Fprintf(&b, "You are a throwaway copy of session #%d that Zimmer made to summarise it. "+
		"Change no file, run nothing that changes anything, and act on no session. "+
		"Read the newest part of session #%d's transcript below (oldest first) and answer with a summary "+
		"of where its work stands, in at most five sentences: what it was asked, what is done, "+
		"what is left or blocked, and what it is waiting for. Answer with the summary alone.\n", sourceID, sourceID)
	b.WriteString(summaryRequestClose + "\n" + summaryTranscript + "\n")
	for _, l := range SummaryExcerpt(lines) {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	b.WriteString(summaryTranscriptEnd + "\n")
	return b.String()
}

// SummaryExcerpt renders lines as the fork is shown them: "[kind] text" on
// one line each (an error marked), each cut to SummaryMaxLineRunes, the
// newest SummaryMaxLines that fit SummaryMaxBytes, oldest first. Lines
// with no text are left out.
func SummaryExcerpt(lines []SummaryLine) []string {
	var out []string
	total := 0
	for i := len(lines) - 1; i >= 0 && len(out) < SummaryMaxLines; i-- {
		l := lines[i]
		text := strings.Join(strings.Fields(l.Text), " ")
		if text == "" {
			continue
		}
		if utf8.RuneCountInString(text) > SummaryMaxLineRunes {
			text = string([]rune(text)[:SummaryMaxLineRunes]) + "…"
		}
		kind := l.Kind
		if l.IsError {
			kind += " error"
		}
		line := "[" + kind + "] " + text
		if total+len(line)+1 > SummaryMaxBytes {
			break
		}
		total += len(line) + 1
		out = append(out, line)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// SummaryRequest is a fork's prompt read back: whose transcript, up to
// where, and the excerpt it was shown ("[kind] text" lines).
type SummaryRequest struct {
	SourceID int64
	Position int64
	Lines    []string
}

// ParseSummaryPrompt reads a prompt SummaryPrompt made; ok is false for any
// other prompt. The demo runtime's summary mode reads it, so the format
// lives here alone.
func ParseSummaryPrompt(prompt string) (SummaryRequest, bool) {
	m := summaryRequest.FindStringSubmatchIndex(prompt)
	if m == nil {
		return SummaryRequest{}, false
	}
	source, err1 := strconv.ParseInt(prompt[m[2]:m[3]], 10, 64)
	position, err2 := strconv.ParseInt(prompt[m[4]:m[5]], 10, 64)
	if err1 != nil || err2 != nil {
		return SummaryRequest{}, false
	}
	rest := prompt[m[1]:]
	_, body, found := strings.Cut(rest, "\n"+summaryTranscript+"\n")
	if !found {
		return SummaryRequest{}, false
	}
	body, _, found = strings.Cut(body, summaryTranscriptEnd)
	if !found {
		return SummaryRequest{}, false
	}
	req := SummaryRequest{SourceID: source, Position: position}
	for l := range strings.SplitSeq(body, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			req.Lines = append(req.Lines, l)
		}
	}
	return req, true
}

// ForkSummary is what a fork's turn wrote, read off the newest lines of
// its transcript (newest last): the text of its final result line, else
// its last message. "" when it wrote none; an error result is none.
func ForkSummary(lines []SummaryLine) string {
	for i := len(lines) - 1; i >= 0; i-- {
		l := lines[i]
		if l.Kind == "result" {
			if l.IsError {
				return ""
			}
			if t := strings.TrimSpace(l.Text); t != "" {
				return t
			}
		}
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if l := lines[i]; l.Kind == "assistant" && !l.IsError {
			if t := strings.TrimSpace(l.Text); t != "" {
				return t
			}
		}
	}
	return ""
}
