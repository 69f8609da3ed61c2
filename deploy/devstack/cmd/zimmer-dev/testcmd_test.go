package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

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

// e2e first, then the modules without a time, then the longest of the last
// run first.
func TestModulesRunLongestFirstByTheLastRun(t *testing.T) {
	root := t.TempDir()
	mod := func(name string) string { return filepath.Join(root, name) }
	file := filepath.Join(root, "test-times")
	writeTimes(file, []moduleResult{
		{rel: "services/queue", elapsed: 70 * time.Second},
		{rel: "services/runner", elapsed: 159 * time.Second},
		{rel: "e2e", elapsed: 500 * time.Second},
		{rel: "gateway", err: context.Canceled},
	})
	last := readTimes(file, root)
	require.Equal(t, map[string]time.Duration{
		mod("services/queue"): 70 * time.Second, mod("services/runner"): 159 * time.Second, mod("e2e"): 500 * time.Second,
	}, last, "a module stopped early has no time")
	modules := []string{mod("deploy/k8s"), mod("services/queue"), mod("e2e"), mod("gateway"), mod("services/runner")}
	require.Equal(t, []string{mod("e2e"), mod("deploy/k8s"), mod("gateway"), mod("services/runner"), mod("services/queue")},
		orderModules(modules, last))
	require.Equal(t, []string{mod("e2e"), mod("deploy/k8s"), mod("services/queue"), mod("gateway"), mod("services/runner")},
		orderModules(modules, readTimes(filepath.Join(root, "missing"), root)), "no times: e2e first, the rest as listed")
}
