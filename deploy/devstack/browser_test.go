package devstack_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/deploy/devstack"
)

func TestFindBrowser(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	browser := filepath.Join(dir, "chromium")
	require.NoError(t, os.WriteFile(browser, []byte("#!/bin/sh\n"), 0o755))
	notExecutable := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(notExecutable, "chromium"), []byte("x"), 0o644))
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }

	got, err := devstack.FindBrowser(env(map[string]string{"PATH": notExecutable + string(os.PathListSeparator) + dir}))
	require.NoError(t, err)
	require.Equal(t, browser, got, "the first runnable one on PATH")

	got, err = devstack.FindBrowser(env(map[string]string{devstack.BrowserEnv: browser, "PATH": notExecutable}))
	require.NoError(t, err)
	require.Equal(t, browser, got, "ZIMMER_BROWSER wins")

	_, err = devstack.FindBrowser(env(map[string]string{"PATH": notExecutable}))
	require.ErrorIs(t, err, devstack.ErrNoBrowser)
	require.ErrorContains(t, err, devstack.BrowserInstall)
	require.True(t, devstack.BrowserMissing(env(nil), err), "none found: the tests skip")
	require.False(t, devstack.BrowserMissing(env(map[string]string{devstack.RequireBrowserEnv: "1"}), err), "unless required")

	_, err = devstack.FindBrowser(env(map[string]string{devstack.BrowserEnv: filepath.Join(dir, "nothing")}))
	require.Error(t, err)
	require.False(t, devstack.BrowserMissing(env(nil), err), "a browser named but missing fails, never skips")
}
