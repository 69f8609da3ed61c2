package domain

import (
	"fmt"
	"strings"
)

// Outline renders h as an indented list, two spaces per level, one line per
// node in node order, "- #id [agent root] {genesis · class} title":
//
//	| - #101 [zimmer-router] {web_ui · priority} Add spot vs priority classification
//	|   - #102 [zimmer] {web_ui · priority} Implement the genesis column ← this session
//
// Uncle edges show on the junior's line, after the title: "(uncle: #7)" or
// "(uncles: #7, #9)", naming every recorded uncle whether or not it is in
// the tree. A session sits under the first senior that reached it at its
// shallowest depth, which can be an uncle rather than its spawn parent; its
// line then also says "(spawned by #P)", as does a root whose recorded
// spawn parent is not in the tree (deleted, or beyond a bound), so no spawn
// edge is silently hidden.
//
// A line deeper than the line before it by more than one level (the session
// asked about, placed after a bound cut its branch) is preceded by a "…"
// line at the level in between. A truncated hierarchy ends with a last line
// "… " + TruncationReason.
//
// Each session is named by its Label: the title flattened to one line, so
// that no title can start a line of its own, or "Session #N" when it has
// none; quoting for a prompt is the caller's concern.
func (h Hierarchy) Outline() string {
	var b strings.Builder
	var stack []int64 // stack[d] is the last node rendered at depth d
	for _, n := range h.Nodes {
		if n.Depth > len(stack) {
			fmt.Fprintf(&b, "%s…\n", strings.Repeat("  ", len(stack)))
			for len(stack) < n.Depth {
				stack = append(stack, 0)
			}
		}
		stack = stack[:n.Depth]
		var under int64
		if n.Depth > 0 {
			under = stack[n.Depth-1]
		}
		stack = append(stack, n.ID)

		fmt.Fprintf(&b, "%s- #%d [%s]", strings.Repeat("  ", n.Depth), n.ID, oneLine(n.AgentRoot))
		if pill := genesisPill(n.Genesis, n.SchedulingClass); pill != "" {
			fmt.Fprintf(&b, " {%s}", pill)
		}
		fmt.Fprintf(&b, " %s", n.Label())
		if n.ParentID != nil && *n.ParentID != under {
			fmt.Fprintf(&b, " (spawned by #%d)", *n.ParentID)
		}
		switch len(n.UncleIDs) {
		case 0:
		case 1:
			fmt.Fprintf(&b, " (uncle: #%d)", n.UncleIDs[0])
		default:
			ids := make([]string, len(n.UncleIDs))
			for i, id := range n.UncleIDs {
				ids[i] = fmt.Sprintf("#%d", id)
			}
			fmt.Fprintf(&b, " (uncles: %s)", strings.Join(ids, ", "))
		}
		if n.Current {
			b.WriteString(CurrentMarker)
		}
		b.WriteByte('\n')
	}
	if h.Truncated {
		fmt.Fprintf(&b, "… %s\n", TruncationReason)
	}
	return b.String()
}

func genesisPill(genesis, class string) string {
	genesis, class = oneLine(genesis), oneLine(class)
	switch {
	case genesis != "" && class != "":
		return genesis + " · " + class
	case genesis != "":
		return genesis
	}
	return class
}

// oneLine replaces every line break and other control character with a
// space and trims the result.
func oneLine(s string) string {
	return strings.TrimSpace(strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == '\u2028' || r == '\u2029' || r == '\u0085' {
			return ' '
		}
		return r
	}, s))
}
