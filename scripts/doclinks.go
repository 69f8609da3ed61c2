//go:build ignore

// doclinks checks the Markdown links of the repository's docs: every
// relative link in README.md, deploy/README.md, docs/*.md and
// docs/contexts/*.md must name a file or folder that exists and, when it
// carries a #fragment into a Markdown file, a heading of that file (GitHub's
// anchor rule). Run it from the repository root: make doc-links.
//
// It is a standalone file (build tag ignore) rather than a test in a module:
// the docs belong to no module, and it needs nothing but the standard library.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

var (
	// [text](target) — targets hold no spaces or parentheses here.
	link    = regexp.MustCompile(`\]\(([^()\s]+)\)`)
	heading = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	fence   = regexp.MustCompile("^\\s*(```|~~~)")
)

func main() {
	files := []string{"README.md", "deploy/README.md"}
	for _, pattern := range []string{"docs/*.md", "docs/contexts/*.md"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			fail(err)
		}
		files = append(files, m...)
	}
	broken := 0
	for _, f := range files {
		for _, problem := range check(f) {
			fmt.Println(problem)
			broken++
		}
	}
	if broken > 0 {
		fmt.Printf("%d broken link(s) in %d file(s) checked\n", broken, len(files))
		os.Exit(1)
	}
	fmt.Printf("doclinks: %d files, every relative link resolves\n", len(files))
}

// check returns one line per broken relative link of file.
func check(file string) []string {
	body, err := os.ReadFile(file)
	if err != nil {
		fail(err)
	}
	var problems []string
	inFence := false
	for i, line := range strings.Split(string(body), "\n") {
		if fence.MatchString(line) {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		for _, m := range link.FindAllStringSubmatch(line, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, fragment, _ := strings.Cut(target, "#")
			resolved := file
			if path != "" {
				resolved = filepath.Join(filepath.Dir(file), path)
				if _, err := os.Stat(resolved); err != nil {
					problems = append(problems, fmt.Sprintf("%s:%d: %s: no such file", file, i+1, target))
					continue
				}
			}
			if fragment != "" && strings.HasSuffix(resolved, ".md") && !anchors(resolved)[fragment] {
				problems = append(problems, fmt.Sprintf("%s:%d: %s: no such heading", file, i+1, target))
			}
		}
	}
	return problems
}

// anchors returns the heading anchors of a Markdown file as GitHub makes
// them: lower case, punctuation dropped, spaces to hyphens, repeats numbered.
func anchors(file string) map[string]bool {
	body, err := os.ReadFile(file)
	if err != nil {
		fail(err)
	}
	seen := map[string]int{}
	out := map[string]bool{}
	inFence := false
	for _, line := range strings.Split(string(body), "\n") {
		if fence.MatchString(line) {
			inFence = !inFence
			continue
		}
		m := heading.FindStringSubmatch(line)
		if inFence || m == nil {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "doclinks:", err)
	os.Exit(2)
}
