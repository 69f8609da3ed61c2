package devstack

import "strings"

// CrashTests are the e2e tests that kill -9 parts of a running stack (the
// runner, lifecycle, Postgres, the Temporal dev server, a node with its
// agents) and wait for what recovers them: heartbeat timeouts, dead-node
// windows, a restarted server's backlog. Each takes from 45 s to several
// minutes, so `make test` skips them to stay a quick loop and `make
// test-chaos` runs them alone; CI runs both. The e2e package checks that
// this list names exactly the tests that call skipWithoutChaos.
var CrashTests = []string{
	"TestADeadDeliverersClaimIsDrainedOnceItExpires",
	"TestChaos",
	"TestFollowUpDuringRecovery",
	"TestKilledRunnerCutsOffItsTurnOnTheTranscript",
	"TestKilledRunnerMidTurnIsRecoveredOnce",
	"TestLoginPoolKill",
	"TestMultiNode",
	"TestReplicas",
	"TestSpotQueueKill",
	"TestWakeKill",
}

// CrashTestPattern matches CrashTests' names, for go test's -run and -skip.
func CrashTestPattern() string { return "^(" + strings.Join(CrashTests, "|") + ")$" }
