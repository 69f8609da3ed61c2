package mcp

import (
	"fmt"
	"slices"
	"strings"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// toolAction is one action of a tool that dispatches on its "action"
// argument, with the arguments that action reads.
type toolAction struct {
	name string
	args []string
}

// toolActions are such a tool's actions, in the order it lists them.
type toolActions []toolAction

// names is every action's name, in order: the action argument's enum.
func (as toolActions) names() []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.name
	}
	return out
}

// read reads req as a call of one of as: the arguments any action reads
// are accepted, an argument the chosen action does not read is a problem
// on the returned args, and a missing or unknown action is the error
// result (res) naming the actions offered.
func (as toolActions) read(req mcpgo.CallToolRequest) (a *args, action toolAction, res *mcpgo.CallToolResult) {
	accepted := []string{"action"}
	for _, ta := range as {
		for _, n := range ta.args {
			if !slices.Contains(accepted, n) {
				accepted = append(accepted, n)
			}
		}
	}
	a = readArgs(req, accepted)
	name := a.word("action")
	i := slices.IndexFunc(as, func(ta toolAction) bool { return ta.name == name })
	offered := strings.Join(as.names(), ", ")
	switch {
	case name == "":
		return nil, toolAction{}, mcpgo.NewToolResultError("action is required; use one of " + offered)
	case i < 0:
		return nil, toolAction{}, mcpgo.NewToolResultError(fmt.Sprintf("unknown action %q; use one of %s", name, offered))
	}
	action = as[i]
	for k := range a.raw {
		if k != "action" && !slices.Contains(action.args, k) {
			a.problems = append(a.problems, fmt.Sprintf("argument %q is not read by action %s (it reads %s)",
				k, name, strings.Join(action.args, ", ")))
		}
	}
	return a, action, nil
}
