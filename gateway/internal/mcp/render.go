package mcp

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

// quoteLimit bounds how much of the prompt, goal and notes the markdown
// quotes; the JSON always carries them whole.
const quoteLimit = 2000

// renderSession is s as markdown for a model to read: a header, the fields
// as a bullet list, the prompt, goal and notes quoted, then js (the JSON the
// REST API would answer) in a fenced block.
func renderSession(s *lifecyclev1.Session, js []byte) string {
	var b strings.Builder
	title := s.GetTitle()
	if title == "" {
		title = "(untitled)"
	}
	fmt.Fprintf(&b, "## Session #%d — %s\n\n", s.GetId(), oneLine(title))

	bullet := func(name, value string) {
		if value != "" {
			fmt.Fprintf(&b, "- **%s:** %s\n", name, oneLine(value))
		}
	}
	bullet("status", s.GetStatus())
	bullet("slug", s.GetSlug())
	bullet("git_root", s.GetGitRoot())
	bullet("branch", s.GetBranch())
	bullet("subdirectory", s.GetSubdirectory())
	bullet("agent_root", s.GetAgentRoot())
	bullet("agent_runtime", s.GetAgentRuntime())
	if s.ParentSessionId != nil {
		bullet("parent_session_id", strconv.FormatInt(s.GetParentSessionId(), 10))
	}
	bullet("genesis", s.GetGenesis())
	bullet("scheduling_class", s.GetSchedulingClass())
	bullet("precedence", strconv.FormatInt(int64(s.GetPrecedence()), 10))
	if s.GetCreatedAt() != nil {
		bullet("created_at", s.GetCreatedAt().AsTime().Format(time.RFC3339))
	}
	if s.GetUpdatedAt() != nil {
		bullet("updated_at", s.GetUpdatedAt().AsTime().Format(time.RFC3339))
	}

	if w := s.GetSlotWait(); w != nil {
		why := "its turn waits for a free turn slot"
		if w.GetReason() == rules.SlotWaitSpotQueue {
			why = "it sleeps in the spot queue until the spot scheduler resumes it"
		}
		fmt.Fprintf(&b, "\n### Waiting to run\n\n%s: number %d in line (quick_search_sessions with view ranked lists the line), since %s.\n",
			why, w.GetPosition(), w.GetSince().AsTime().UTC().Format(time.RFC3339))
	}
	if l := s.GetLostElicitation(); l != nil {
		fmt.Fprintf(&b, "\n### Lost elicitation\n\nA question the agent asked went unanswered (%s): %s — %s\n",
			l.GetReason(), l.GetRequestId(), oneLine(l.GetSummary()))
	}

	quote(&b, "Prompt", s.GetPrompt())
	quote(&b, "Goal", s.GetGoal())
	quote(&b, "Notes", s.GetNotes())

	b.WriteString("\n### JSON\n\n```json\n")
	b.Write(js)
	b.WriteString("\n```\n")
	return b.String()
}

// quote writes text as a markdown blockquote under a heading, cut at
// quoteLimit characters.
func quote(b *strings.Builder, heading, text string) {
	if text == "" {
		return
	}
	fmt.Fprintf(b, "\n### %s\n\n", heading)
	cut := false
	if utf8.RuneCountInString(text) > quoteLimit {
		text, cut = string([]rune(text)[:quoteLimit]), true
	}
	for line := range strings.SplitSeq(text, "\n") {
		b.WriteString("> " + line + "\n")
	}
	if cut {
		fmt.Fprintf(b, "\n(first %d characters; the JSON below has all of it)\n", quoteLimit)
	}
}

// oneLine keeps a value on its bullet line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
