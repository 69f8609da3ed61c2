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

// renderSession is s as markdown for a model to read: a heading (what
// became of it, when outcome says; otherwise the session itself), the
// fields as "- **field:** value" lines, message (the service's words), the
// prompt, goal and notes quoted, then js (the JSON the REST API would
// answer) in a fenced block.
func renderSession(outcome, message string, s *lifecyclev1.Session, js []byte) string {
	var b strings.Builder
	title := s.GetTitle()
	if title == "" {
		title = "(untitled)"
	}
	bullet := func(name, value string) {
		if value != "" {
			fmt.Fprintf(&b, "- **%s:** %s\n", name, oneLine(value))
		}
	}
	if outcome == "" {
		fmt.Fprintf(&b, "## Session #%d — %s\n\n", s.GetId(), oneLine(title))
	} else {
		fmt.Fprintf(&b, "## %s\n\n", outcome)
		bullet("id", strconv.FormatInt(s.GetId(), 10))
		bullet("title", title)
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
	if s.CategoryId != nil {
		bullet("category_id", strconv.FormatInt(s.GetCategoryId(), 10))
	}
	if s.GetStarred() {
		bullet("starred", "yes")
	}
	if s.GetCreatedAt() != nil {
		bullet("created_at", s.GetCreatedAt().AsTime().Format(time.RFC3339))
	}
	if s.GetUpdatedAt() != nil {
		bullet("updated_at", s.GetUpdatedAt().AsTime().Format(time.RFC3339))
	}

	if message = strings.TrimSpace(message); message != "" {
		b.WriteString("\n" + message + "\n")
	}

	if w := s.GetSlotWait(); w != nil {
		why := "its turn waits for a free turn slot"
		switch w.GetReason() {
		case rules.SlotWaitSpotQueue:
			why = "it sleeps in the spot queue until the spot scheduler resumes it"
		case rules.SlotWaitNoNodeSlot:
			why = "its turn waits for a free turn slot on its runner node, which is at its own limit (RUNNER_TURN_SLOTS)"
		}
		fmt.Fprintf(&b, "\n### Waiting to run\n\n%s: number %d in line (quick_search_sessions with view ranked lists the line), since %s.\n",
			why, w.GetPosition(), w.GetSince().AsTime().UTC().Format(time.RFC3339))
	}
	if l := s.GetLostElicitation(); l != nil {
		fmt.Fprintf(&b, "\n### Lost elicitation\n\nA question the agent asked went unanswered (%s): %s — %s\n",
			l.GetReason(), l.GetRequestId(), oneLine(l.GetSummary()))
	}

	statusSummarySection(&b, s.GetStatusSummary())
	if prs := s.GetGithubPullRequests(); len(prs) > 0 {
		// The pull requests the session's own tools opened; their merge
		// (and conflicts, comments, failed checks) come as messages.
		b.WriteString("\n### Pull requests\n\n")
		for _, pr := range prs {
			fmt.Fprintf(&b, "- %s — %s\n", pr.GetUrl(), pr.GetState())
		}
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

// statusSummarySection is the session's status summary: where its work
// stood when a fork last summarised it (quoted, with what it covers), and
// a fork that failed since.
func statusSummarySection(b *strings.Builder, ss *lifecyclev1.StatusSummary) {
	if ss == nil {
		return
	}
	if ss.GetText() != "" {
		at := ""
		if ss.GetGeneratedAt() != nil {
			at = " at " + ss.GetGeneratedAt().AsTime().Format(time.RFC3339)
		}
		quote(b, "Status summary", ss.GetText())
		fmt.Fprintf(b, "\n_Written by status-summary fork #%d%s, covering the transcript to line %d._\n",
			ss.GetForkSessionId(), at, ss.GetTranscriptPosition())
	}
	if f := ss.GetFailure(); f != nil {
		fmt.Fprintf(b, "\n### Status summary failed\n\nThe status-summary fork #%d failed: %s\n", f.GetForkSessionId(), oneLine(f.GetReason()))
	}
}
