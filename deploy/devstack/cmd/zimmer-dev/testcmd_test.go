package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The e2e module runs more tests at once than go test's default, before the
// caller's flags so that theirs win; the other modules keep the default.
func TestOnlyTheE2EModuleRunsMoreTestsAtOnce(t *testing.T) {
	goArgs := []string{"test", "-race", "-parallel=1", "./..."}
	require.Equal(t, []string{"test", e2eParallel, "-race", "-parallel=1", "./..."}, moduleArgs("/repo/e2e", goArgs))
	require.Equal(t, goArgs, moduleArgs("/repo/services/queue", goArgs))
	require.Equal(t, []string{"test", "-race", "-parallel=1", "./..."}, goArgs, "the shared args are left as they were")
}
