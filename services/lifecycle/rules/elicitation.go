package rules

// What can become of an elicitation an agent is blocked on: the answer the
// agent took (MCP's elicitation actions), or why it went unanswered. The
// runner reports one with unblock_from_elicitation; lifecycle keeps the
// banner of the unanswered ones (lost_elicitation, with the reason).
const (
	ElicitAccept  = "accept"
	ElicitDecline = "decline"
	ElicitCancel  = "cancel"
	// ElicitationExpired: the agent stopped waiting before anyone answered.
	ElicitationExpired = "expired"
	// ElicitationStranded: the round-trip is gone — the agent's process
	// ended while it waited, or the block outlived the expired-elicitation
	// sweep's window with no word from the runner.
	ElicitationStranded = "stranded"
)

// ElicitationActions are the actions an answer may take.
func ElicitationActions() []string { return []string{ElicitAccept, ElicitDecline, ElicitCancel} }
