package e2e_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/deploy/devstack"
)

// TestCrashTestsAreListed: the tests that call skipWithoutChaos are
// exactly devstack.CrashTests, the list make test skips and make
// test-chaos runs, so a new crash test can be neither left out of both
// nor run by make test.
func TestCrashTestsAreListed(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*_test.go")
	require.NoError(t, err)
	var marked []string
	fset := token.NewFileSet()
	for _, file := range files {
		f, err := parser.ParseFile(fset, file, nil, 0)
		require.NoError(t, err)
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil || !strings.HasPrefix(fn.Name.Name, "Test") {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				if id, ok := call.Fun.(*ast.Ident); ok && id.Name == "skipWithoutChaos" {
					marked = append(marked, fn.Name.Name)
				}
				return true
			})
		}
	}
	slices.Sort(marked)
	require.Equal(t, slices.Sorted(slices.Values(devstack.CrashTests)), slices.Compact(marked))
}
