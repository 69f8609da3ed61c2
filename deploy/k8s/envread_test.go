package k8s_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/tools/go/packages"
)

// binaries are the components the manifests run, by container name, and
// the command each one is.
var binaries = map[string]string{
	"lifecycle":    "./services/lifecycle/cmd/lifecycle",
	"lineage":      "./services/lineage/cmd/lineage",
	"queue":        "./services/queue/cmd/queue",
	"runner":       "./services/runner/cmd/runner",
	"notification": "./services/notification/cmd/notification",
	"gateway":      "./gateway/cmd/gateway",
}

const (
	modulePath = "github.com/zimmerhq/zimmer/"
	hostPkg    = modulePath + "services/platform/host"
	// hostLoad is the function whose envcfg struct every service reads
	// under its own prefix (<SERVICE>_GRPC_ADDR), but for the names its
	// switch passes through unprefixed (TEMPORAL_ADDRESS, …).
	hostLoad = "LoadConfig"
)

// otelSDK is the package whose presence among a binary's dependencies
// means it reads the OpenTelemetry SDK's standard OTEL_* variables
// (exporter, endpoint, sampler, resource), which the SDK reads itself, not
// through envcfg.
const otelSDK = "go.opentelemetry.io/otel/sdk/trace"

// otelVar is the key under which readEnv records that a binary reads the
// OTEL_* variables.
const otelVar = "OTEL_*"

// envVar is one variable a component reads through envcfg.
type envVar struct {
	defaulted bool   // its tag has a default=
	where     string // file:line of the tag
}

// readEnv returns, for each binary, the variables its envcfg structs read:
// the `env:"…"` tags in every package of this repository the command
// depends on (go list -deps, through go/packages). The config packages are
// internal to their modules, so this module cannot import them and reflect
// over the real types; the tags in their source are the same tags envcfg
// reads.
var readEnv = sync.OnceValues(func() (map[string]map[string]envVar, error) {
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedFiles | packages.NeedImports | packages.NeedDeps, Dir: "../.."}
	var patterns []string
	byPath := map[string]string{} // the command's package path → its binary
	for _, cmd := range binaries {
		patterns = append(patterns, cmd)
	}
	// One go list for every command: their dependencies overlap.
	roots, err := packages.Load(cfg, patterns...)
	if err != nil {
		return nil, err
	}
	for name, cmd := range binaries {
		byPath[modulePath+strings.TrimPrefix(cmd, "./")] = name
	}
	out := map[string]map[string]envVar{}
	for _, root := range roots {
		name, ok := byPath[root.PkgPath]
		if !ok {
			return nil, fmt.Errorf("go list returned %s, which is none of the binaries", root.PkgPath)
		}
		vars := map[string]envVar{}
		var failed error
		packages.Visit([]*packages.Package{root}, nil, func(p *packages.Package) {
			for _, e := range p.Errors {
				failed = e
			}
			if p.PkgPath == otelSDK {
				vars[otelVar] = envVar{defaulted: true, where: otelSDK}
			}
			if !strings.HasPrefix(p.PkgPath, modulePath) {
				return
			}
			for _, file := range p.GoFiles {
				if err := tagsIn(file, p.PkgPath, strings.ToUpper(name)+"_", vars); err != nil {
					failed = err
				}
			}
		})
		if failed != nil {
			return nil, failed
		}
		out[name] = vars
	}
	if len(out) != len(binaries) {
		return nil, fmt.Errorf("go list found %d of the %d binaries", len(out), len(binaries))
	}
	return out, nil
})

// tagsIn adds the env tags of one file to vars.
func tagsIn(file, pkgPath, prefix string, vars map[string]envVar) error {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
	if err != nil {
		return err
	}
	add := func(n ast.Node, prefixed func(string) string) {
		ast.Inspect(n, func(n ast.Node) bool {
			field, ok := n.(*ast.Field)
			if !ok || field.Tag == nil {
				return true
			}
			tag, err := strconv.Unquote(field.Tag.Value)
			if err != nil {
				return true
			}
			spec, ok := reflect.StructTag(tag).Lookup("env")
			if !ok {
				return true
			}
			name, opts, _ := strings.Cut(spec, ",")
			pos := fset.Position(field.Pos())
			vars[prefixed(strings.TrimSpace(name))] = envVar{
				defaulted: strings.Contains(opts, "default="),
				where:     strings.TrimPrefix(pos.Filename, repoRoot()) + ":" + strconv.Itoa(pos.Line),
			}
			return true
		})
	}
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if pkgPath == hostPkg && ok && fn.Name.Name == hostLoad {
			shared := caseStrings(fn)
			add(fn, func(name string) string {
				if shared[name] {
					return name
				}
				return prefix + name
			})
			continue
		}
		add(decl, func(name string) string { return name })
	}
	return nil
}

// caseStrings are the string constants of the switch cases in fn.
func caseStrings(fn *ast.FuncDecl) map[string]bool {
	out := map[string]bool{}
	ast.Inspect(fn, func(n ast.Node) bool {
		if cc, ok := n.(*ast.CaseClause); ok {
			for _, e := range cc.List {
				if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if s, err := strconv.Unquote(lit.Value); err == nil {
						out[s] = true
					}
				}
			}
		}
		return true
	})
	return out
}
