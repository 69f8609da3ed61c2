package e2e_test

import (
	"os"
	"testing"
)

// TestMain ends the browser (by its pid) and removes the binaries the tests
// built, once every test is done.
func TestMain(m *testing.M) {
	code := m.Run()
	stopChromium()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}
