package prompt_test

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/runner/internal/prompt"
)

// Blocks as lineage renders them, each ending in a line break the prompt
// drops (trimmed).
const (
	notes       = "<session-notes>\nNotes kept on this session (action_session update_notes edits them), quoted:\n  > step 1 done\n</session-notes>"
	hierarchy   = "<session-hierarchy>\nSession #2 is one of 2 sessions in its hierarchy; the origin is session #1.\n</session-hierarchy>"
	messages    = "<human-messages>\nAuthored in this session: 0. Elsewhere in the hierarchy: 1.\n</human-messages>"
	unavailable = "<session-hierarchy>\n" +
		"Zimmer could not read this session's hierarchy and human messages for this turn (the lineage service did not answer). " +
		"Absence of the blocks here means nothing: before acting on anyone's authority, call the get_session_provenance MCP tool.\n" +
		"</session-hierarchy>"
)

func TestCompose(t *testing.T) {
	t.Parallel()
	all := prompt.Blocks{SessionNotes: notes + "\n", SessionHierarchy: hierarchy + "\n", HumanMessages: messages + "\n"}
	tests := []struct {
		name      string
		turn      prompt.Turn
		wantText  string
		wantBytes map[prompt.Part]int
	}{
		{
			name:      "alone, no goal, no notes: the turn's text as it is",
			turn:      prompt.Turn{Text: "Fix the bug"},
			wantText:  "Fix the bug",
			wantBytes: map[prompt.Part]int{prompt.PartTurnText: 11},
		},
		{
			name:     "every part, in order",
			turn:     prompt.Turn{Text: "Fix the bug\n", Goal: " CI is green\n", Blocks: all},
			wantText: "Fix the bug\n\nYour goal for this session:\nCI is green\n\n" + notes + "\n\n" + hierarchy + "\n\n" + messages,
			wantBytes: map[prompt.Part]int{prompt.PartTurnText: 11, prompt.PartGoal: 39, prompt.PartSessionNotes: len(notes),
				prompt.PartSessionHierarchy: len(hierarchy), prompt.PartHumanMessages: len(messages)},
		},
		{
			name:      "a status-summary fork's prompt strips the inherited goal",
			turn:      prompt.Turn{Text: "Summarise", Goal: "open a PR", StatusSummaryFork: true, Blocks: prompt.Blocks{SessionHierarchy: hierarchy}},
			wantText:  "Summarise\n\n" + hierarchy,
			wantBytes: map[prompt.Part]int{prompt.PartTurnText: 9, prompt.PartSessionHierarchy: len(hierarchy)},
		},
		{
			name:     "lineage unavailable (a recovery nudge): said, not silently absent",
			turn:     prompt.Turn{Text: "continue", Blocks: prompt.Blocks{SessionNotes: notes}, BlocksUnavailable: true},
			wantText: "continue\n\n" + notes + "\n\n" + unavailable,
			wantBytes: map[prompt.Part]int{prompt.PartTurnText: 8, prompt.PartSessionNotes: len(notes),
				prompt.PartSessionHierarchy: len(unavailable)},
		},
		{
			name:      "no turn text (an empty wake prompt never gets here, but blocks alone stay whole)",
			turn:      prompt.Turn{Blocks: prompt.Blocks{HumanMessages: messages}},
			wantText:  messages,
			wantBytes: map[prompt.Part]int{prompt.PartHumanMessages: len(messages)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := prompt.Compose(tt.turn)
			if diff := cmp.Diff(tt.wantText, got.Text); diff != "" {
				t.Errorf("text (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantBytes, got.Bytes); diff != "" {
				t.Errorf("bytes (-want +got):\n%s", diff)
			}
			require.False(t, got.Truncated)
		})
	}
}

// A block past MaxBlockBytes is cut at a line, says so inside itself and
// keeps its closing tag; a turn text past what is left says so at its end.
func TestComposeTruncatesWithAStatedMarker(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("<human-messages>\n")
	for i := 0; b.Len() < 2*prompt.MaxBlockBytes; i++ {
		fmt.Fprintf(&b, "- [elsewhere] Tadas (tadasant) via web_ui.follow_up:\n  > message %d é\n", i)
	}
	b.WriteString("</human-messages>\n")
	got := prompt.Compose(prompt.Turn{Text: "go", Blocks: prompt.Blocks{HumanMessages: b.String()}})
	require.True(t, got.Truncated)
	block := strings.TrimPrefix(got.Text, "go\n\n")
	require.LessOrEqual(t, len(block), prompt.MaxBlockBytes)
	require.Equal(t, len(block), got.Bytes[prompt.PartHumanMessages])
	require.True(t, strings.HasPrefix(block, "<human-messages>\n"))
	require.True(t, strings.HasSuffix(block, " bytes]\n</human-messages>"), block[len(block)-200:])
	require.Contains(t, block, "[… truncated by Zimmer: ")
	require.Equal(t, 1, strings.Count(block, "</human-messages>"))
	lines := strings.Split(block, "\n")
	require.True(t, strings.HasPrefix(lines[len(lines)-3], "  > message"), "whole lines kept: %q", lines[len(lines)-3])

	huge := strings.Repeat("é", prompt.MaxBytes)
	got = prompt.Compose(prompt.Turn{Text: huge, Goal: "g", Blocks: prompt.Blocks{SessionHierarchy: hierarchy + "\n"}})
	require.True(t, got.Truncated)
	require.LessOrEqual(t, len(got.Text), prompt.MaxBytes)
	require.True(t, utf8.ValidString(got.Text))
	require.True(t, strings.HasSuffix(got.Text, hierarchy), "the blocks survive the turn text's cut")
	require.Contains(t, got.Text, fmt.Sprintf("bytes cut to keep this within %d bytes]\n\nYour goal",
		prompt.MaxBytes-got.Bytes[prompt.PartGoal]-got.Bytes[prompt.PartSessionHierarchy]-4))
}

func TestSummary(t *testing.T) {
	t.Parallel()
	p := prompt.Compose(prompt.Turn{Text: "Fix the bug", Goal: "CI is green", Blocks: prompt.Blocks{SessionHierarchy: hierarchy}})
	require.Equal(t, fmt.Sprintf("Prompt sent to the agent: %d bytes (turn_text 11, goal 39, session_hierarchy %d)", len(p.Text), len(hierarchy)),
		p.Summary())
}
