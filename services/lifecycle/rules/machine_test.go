package rules_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

func TestMachineIsWellFormed(t *testing.T) {
	t.Parallel()

	statuses := rules.Statuses()
	var guardNames []string
	for _, g := range rules.Guards() {
		require.NotEmpty(t, g.Doc, g.Name)
		guardNames = append(guardNames, g.Name)
	}
	seen := map[string]bool{}
	rows := 0
	for _, tr := range rules.Machine() {
		require.False(t, seen[tr.Event], "event %s listed twice", tr.Event)
		seen[tr.Event] = true
		require.Contains(t, statuses, tr.To, tr.Event)
		require.NotEmpty(t, tr.From, tr.Event)
		for _, from := range tr.From {
			require.Contains(t, statuses, from, tr.Event)
			require.NotEqual(t, tr.To, from, "%s: no event leads a state to itself", tr.Event)
		}
		for _, g := range tr.Guards {
			require.Contains(t, guardNames, g, tr.Event)
		}
		require.NotEmpty(t, tr.Doc, tr.Event)
		rows += len(tr.From)
	}
	require.Len(t, seen, 11, "the spec's eleven events")
	require.Equal(t, 18, rows, "the spec's 18 (event, from-state) rows")
	require.Equal(t, []string{"start", "pause", "resume", "sleep", "block_on_elicitation", "unblock_from_elicitation",
		"fail", "archive", "unarchive_to_waiting", "unarchive_to_failed", "unarchive_to_needs_input"}, rules.Events())
}

func TestMachineIsACopy(t *testing.T) {
	t.Parallel()

	m := rules.Machine()
	m[0].From[0] = "mutated"
	m[0].Event = "mutated"
	require.Equal(t, rules.EventStart, rules.Machine()[0].Event)
	require.Equal(t, []string{rules.StatusWaiting}, rules.Machine()[0].From)

	tr, ok := rules.Lookup(rules.EventArchive)
	require.True(t, ok)
	tr.From[0] = "mutated"
	again, _ := rules.Lookup(rules.EventArchive)
	require.False(t, slices.Contains(again.From, "mutated"))
	_, ok = rules.Lookup("explode")
	require.False(t, ok)
}
