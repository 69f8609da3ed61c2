package domain_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/runner/internal/domain"
)

// The original's result words, and one timeline line per step the ladder
// took, the last ending with the word.
func TestATerminationIsToldStepByStepWithTheOriginalsWord(t *testing.T) {
	t.Parallel()
	const turn = "session-7/turn-2"
	for _, c := range []struct {
		name   string
		t      domain.Termination
		result string
		lines  []string
	}{
		{"SIGTERM was enough", domain.Termination{Pid: 41, TermGrace: 3 * time.Second}, "terminated", []string{
			"[Process] SIGTERM sent to the process group of turn session-7/turn-2's agent (pid 41). Result: terminated.",
		}},
		{"escalated to SIGKILL", domain.Termination{Pid: 41, Killed: true, TermGrace: 3 * time.Second}, "terminated", []string{
			"[Process] SIGTERM sent to the process group of turn session-7/turn-2's agent (pid 41).",
			"[Process] The agent of turn session-7/turn-2 (pid 41) outlived SIGTERM's 3s grace: escalated to SIGKILL, its group first. Result: terminated.",
		}},
		{"the group could not be signalled", domain.Termination{Pid: 41, GroupRefused: "no such process", LeaderSignalled: true}, "terminated", []string{
			"[Process] The process group of turn session-7/turn-2's agent (pid 41) could not be signalled (no such process): SIGTERM sent to the agent alone. Result: terminated.",
		}},
		{"already ended", domain.Termination{Pid: 41, AlreadyEnded: true}, "already_dead", []string{
			"[Process] The agent of turn session-7/turn-2 (pid 41) had already ended when Zimmer came to stop it. Result: already_dead.",
		}},
		{"not ours to signal", domain.Termination{Pid: 41, GroupRefused: "operation not permitted", PermissionDenied: true,
			Killed: true, TermGrace: time.Second, Failed: "terminate pid 41: the process survived SIGKILL"}, "permission_denied", []string{
			"[Process] Neither the process group of turn session-7/turn-2's agent (pid 41) nor the agent itself could be signalled (operation not permitted).",
			"[Process] The agent of turn session-7/turn-2 (pid 41) outlived SIGTERM's 1s grace: escalated to SIGKILL, its group first.",
			"[Process] The agent of turn session-7/turn-2 (pid 41) could not be stopped: terminate pid 41: the process survived SIGKILL. Result: permission_denied.",
		}},
		{"outlived SIGKILL", domain.Termination{Pid: 41, Killed: true, TermGrace: time.Second, Failed: "stuck in the kernel"}, "error", []string{
			"[Process] SIGTERM sent to the process group of turn session-7/turn-2's agent (pid 41).",
			"[Process] The agent of turn session-7/turn-2 (pid 41) outlived SIGTERM's 1s grace: escalated to SIGKILL, its group first.",
			"[Process] The agent of turn session-7/turn-2 (pid 41) could not be stopped: stuck in the kernel. Result: error.",
		}},
	} {
		require.Equal(t, c.result, c.t.Result(), c.name)
		require.Equal(t, c.lines, domain.TerminationLines(turn, c.t), c.name)
	}
	require.Equal(t, []string{"terminated", "already_dead", "permission_denied", "error"}, []string{
		domain.TerminationTerminated, domain.TerminationAlreadyDead, domain.TerminationPermissionDenied, domain.TerminationError,
	}, "the original's words")
}
