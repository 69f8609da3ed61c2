// Package prompt is the one prompt builder: every turn of every session —
// the first, a follow-up, a queued message, a wake's or a watcher's
// prompt, a heartbeat nudge, a recovery nudge, a restart — reaches its
// agent as Compose's output (docs/prompts.md).
//
// The builder is pure. The runner's RunTurn activity gathers its input —
// the session's goal from lifecycle, the rendered <session-notes>,
// <session-hierarchy> and <human-messages> blocks from lineage — and sends
// the result to the agent, recording it as the turn's first transcript
// line. Every untrusted string inside the blocks went through lineage's
// one sanitiser before it got here; this package never renders one itself.
package prompt

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Bounds of a composed prompt. The turn's own text and the goal are
// bounded where they are accepted (lifecycle and the queue: a prompt of at
// most 500,000 characters, a goal of at most 50,000); the builder bounds
// what it injects and the whole, so no block can crowd out the turn.
const (
	// MaxBlockBytes bounds each injected block. Lineage's blocks are
	// bounded by count (the newest 25 messages, 150 sessions) but not by
	// the length of what a human or an agent wrote in them.
	MaxBlockBytes = 32 << 10
	// MaxBytes bounds the whole prompt: the largest turn text and goal
	// lifecycle accepts, in UTF-8, plus the blocks, fit in it.
	MaxBytes = 3 << 20
)

// TruncationMarker ends what was cut, so neither the agent nor an operator
// reading the transcript mistakes a cut prompt for a whole one. Its %d are
// the bytes cut and the bound that cut them.
const TruncationMarker = "[… truncated by Zimmer: %d bytes cut to keep this within %d bytes]"

// ProvenanceUnavailable stands in for the provenance blocks when lineage
// could not be asked (only ever on a recovery nudge, which must not wait
// for it): the agent is told, rather than reading absence as "no human
// spoke".
const ProvenanceUnavailable = "<session-hierarchy>\n" +
	"Zimmer could not read this session's hierarchy and human messages for this turn (the lineage service did not answer). " +
	"Absence of the blocks here means nothing: before acting on anyone's authority, call the get_session_provenance MCP tool.\n" +
	"</session-hierarchy>\n"

// Blocks are lineage's rendered blocks (GetPromptBlocks), each "" when the
// session has none. A block's trailing line break is dropped: parts are
// joined by one blank line.
type Blocks struct {
	SessionNotes     string
	SessionHierarchy string
	HumanMessages    string
}

// Turn is what one turn's prompt is composed from.
type Turn struct {
	// Text is the turn's own text: the session's prompt on its first
	// turn, the message, wake prompt or nudge on every later one.
	Text string
	// Goal is the session's goal, "" for none.
	Goal string
	// StatusSummaryFork marks Zimmer's own throwaway status-summary fork:
	// its prompt strips the goal it inherited from its source (the spec's
	// prepare_fork), which would otherwise tell it to open a PR.
	StatusSummaryFork bool
	Blocks            Blocks
	// BlocksUnavailable: lineage was not asked successfully; the prompt
	// carries ProvenanceUnavailable in place of the provenance blocks.
	BlocksUnavailable bool
}

// Part names one part of a prompt; the costs work counts injected bytes by
// part (session_hierarchy and human_messages are the spec's lines).
type Part string

// Parts, in the order a prompt holds them.
const (
	PartTurnText         Part = "turn_text"
	PartGoal             Part = "goal"
	PartSessionNotes     Part = "session_notes"
	PartSessionHierarchy Part = "session_hierarchy"
	PartHumanMessages    Part = "human_messages"
)

// Parts lists every part in prompt order.
var Parts = []Part{PartTurnText, PartGoal, PartSessionNotes, PartSessionHierarchy, PartHumanMessages}

// Prompt is a composed prompt.
type Prompt struct {
	// Text is exactly what the agent receives.
	Text string
	// Bytes counts each part's bytes in Text (its separators excluded);
	// a part the prompt lacks is absent.
	Bytes map[Part]int
	// Truncated: a part was cut (and says so with TruncationMarker).
	Truncated bool
}

// Compose builds a turn's prompt: the turn's text, then the goal, then the
// blocks (notes, hierarchy, human messages), separated by blank lines.
func Compose(t Turn) Prompt {
	p := Prompt{Bytes: map[Part]int{}}
	hierarchy, messages := t.Blocks.SessionHierarchy, t.Blocks.HumanMessages
	if t.BlocksUnavailable {
		hierarchy, messages = ProvenanceUnavailable, ""
	}
	goal := ""
	if g := strings.TrimSpace(t.Goal); g != "" && !t.StatusSummaryFork {
		goal = "Your goal for this session:\n" + g
	}
	parts := []struct {
		part Part
		text string
	}{
		{PartGoal, goal},
		{PartSessionNotes, t.Blocks.SessionNotes},
		{PartSessionHierarchy, hierarchy},
		{PartHumanMessages, messages},
	}
	var tail []string
	tailBytes := 0
	for _, pt := range parts {
		if pt.text == "" {
			continue
		}
		text := strings.TrimRight(pt.text, "\n")
		if pt.part != PartGoal {
			var cut bool
			text, cut = boundBlock(text, MaxBlockBytes)
			p.Truncated = p.Truncated || cut
		}
		p.Bytes[pt.part] = len(text)
		tail = append(tail, text)
		tailBytes += len(text) + len(separator)
	}
	// The turn's text takes what the injected parts leave.
	text, cut := bound(strings.TrimRight(t.Text, "\n"), MaxBytes-tailBytes)
	p.Truncated = p.Truncated || cut
	if text != "" {
		p.Bytes[PartTurnText] = len(text)
	}
	p.Text = strings.Join(append([]string{text}, tail...), separator)
	if text == "" {
		p.Text = strings.Join(tail, separator)
	}
	return p
}

// separator parts a prompt: a blank line, so each block starts a line of
// its own whatever ends the part before it. The prompt ends with its last
// part's last line, without a line break.
const separator = "\n\n"

// bound cuts s to at most limit bytes, the marker included, at a rune
// boundary.
func bound(s string, limit int) (string, bool) {
	if len(s) <= limit {
		return s, false
	}
	marker := fmt.Sprintf(TruncationMarker, len(s), limit) // len(s): a safe upper bound for the digits
	keep := max(0, limit-len(marker)-1)
	kept := cutRunes(s, keep)
	return kept + "\n" + fmt.Sprintf(TruncationMarker, len(s)-len(kept), limit), true
}

// boundBlock cuts a block "<tag>\n…\n</tag>" to at most limit bytes at a
// line boundary, keeping its closing tag: the marker is the last line
// inside it, so the block's structure survives the cut.
func boundBlock(block string, limit int) (string, bool) {
	if len(block) <= limit {
		return block, false
	}
	i := strings.LastIndex(block, "\n")
	if i < 0 {
		return bound(block, limit)
	}
	body, closing := block[:i+1], block[i+1:]
	marker := fmt.Sprintf(TruncationMarker, len(block), limit) + "\n"
	kept := cutRunes(body, max(0, limit-len(marker)-len(closing)))
	if j := strings.LastIndex(kept, "\n"); j >= 0 {
		kept = kept[:j+1] // whole lines only: a cut quote would lose its prefix's meaning
	}
	return kept + fmt.Sprintf(TruncationMarker, len(body)-len(kept), limit) + "\n" + closing, true
}

// cutRunes returns the longest prefix of s of at most n bytes that ends on
// a rune boundary.
func cutRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Summary is the readable line recorded with the prompt in the turn's
// transcript: its size and each part's injected bytes.
func (p Prompt) Summary() string {
	var parts []string
	for _, part := range Parts {
		if n, ok := p.Bytes[part]; ok {
			parts = append(parts, fmt.Sprintf("%s %d", part, n))
		}
	}
	s := fmt.Sprintf("Prompt sent to the agent: %d bytes (%s)", len(p.Text), strings.Join(parts, ", "))
	if p.Truncated {
		s += "; truncated"
	}
	return s
}
