package mcp

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Every argument an action reads is a field of the request it sends (the
// proto is the field list), and so is acting_session_id wherever the
// request can name the acting session.
func TestActionArgumentsAreRequestFields(t *testing.T) {
	t.Parallel()

	for _, a := range sessionActions {
		fields := a.request.ProtoReflect().Descriptor().Fields()
		for _, name := range a.args {
			require.NotNil(t, fields.ByName(protoreflect.Name(name)), "%s reads %s, which %s does not have",
				a.name, name, a.request.ProtoReflect().Descriptor().FullName())
		}
	}
	for _, arg := range actionArgs {
		used := false
		for _, a := range sessionActions {
			for _, name := range a.args {
				used = used || name == arg.name
			}
		}
		require.True(t, used, "argument %s is read by no action", arg.name)
	}
}

// Every action is dispatched from its row: it says how it is sent, and
// what it needs is one of the arguments it reads.
func TestEverySessionActionRunsFromItsRow(t *testing.T) {
	t.Parallel()

	for _, a := range sessionActions {
		require.NotNil(t, a.run, "%s has no run", a.name)
		if a.needs != "" {
			require.Contains(t, a.args, a.needs, "%s needs an argument it does not read", a.name)
			require.NotEmpty(t, a.needsHint, "%s: the refusal says what %s takes", a.name, a.needs)
		}
	}
}
