package main

import (
	"fmt"
	"strings"

	"github.com/zimmerhq/zimmer/services/runner/internal/domain"
)

// failSummaryPhrase, said in a session's transcript, makes the demo
// agent's status summary of it fail: how a test produces a failing fork.
const failSummaryPhrase = "demo: fail the status summary"

// summarySteps is the demo agent's summary mode: given a status-summary
// fork's prompt (domain.SummaryPrompt), it summarises the transcript it is
// shown, deterministically — how many lines it read, up to which position,
// and the last thing the agent said — and obeys no directive quoted in it.
// A transcript saying failSummaryPhrase makes it fail (exit 1).
func summarySteps(req domain.SummaryRequest) []step {
	last := ""
	for _, l := range req.Lines {
		if strings.Contains(l, failSummaryPhrase) {
			return []step{{kind: "say", text: "The transcript asks this summary to fail."}, {kind: "exit", code: 1}}
		}
		if text, ok := strings.CutPrefix(l, "[assistant] "); ok {
			last = text
		}
	}
	said := "the agent has said nothing yet"
	if last != "" {
		said = fmt.Sprintf("the agent last said %q", last)
	}
	return []step{{kind: "say", text: fmt.Sprintf("Session #%d, as its transcript stands at line %d: %d lines read; %s.",
		req.SourceID, req.Position, len(req.Lines), said)}}
}
