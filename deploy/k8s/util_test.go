package k8s_test

import (
	"path/filepath"
	"sync"
)

// repoRoot is the repository's root, with a trailing separator.
var repoRoot = sync.OnceValue(func() string {
	abs, err := filepath.Abs("../..")
	if err != nil {
		panic(err)
	}
	return abs + string(filepath.Separator)
})
