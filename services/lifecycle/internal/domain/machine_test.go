package domain_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

// TestGuardsAreTheTablesGuards breaks each guard of rules' table in turn and
// fires every (event, from-state) row: exactly the events that name the
// guard refuse, for a reason, and every other event goes through.
func TestGuardsAreTheTablesGuards(t *testing.T) {
	t.Parallel()

	breaks := map[string]func(*domain.Session, *domain.Env){
		rules.GuardHasGitRoot:           func(s *domain.Session, _ *domain.Env) { s.GitRoot = " " },
		rules.GuardBlockedOnElicitation: func(s *domain.Session, _ *domain.Env) { s.Markers.BlockedOnElicitation = false },
		rules.GuardNoWakeAhead: func(_ *domain.Session, e *domain.Env) {
			e.Wakes = domain.Wakes{OneTime: 1, LatestOneTime: e.Now.Add(time.Minute)}
		},
	}
	require.Len(t, breaks, len(rules.Guards()), "every guard of the table is broken once here")
	for _, g := range rules.Guards() {
		broken, ok := breaks[g.Name]
		require.True(t, ok, g.Name)
		for _, row := range rules.Machine() {
			for _, from := range row.From {
				st, err := domain.ParseStatus(from)
				require.NoError(t, err)
				s := session(st)
				s.Markers.BlockedOnElicitation = true // every guard holds ...
				e := env()
				broken(&s, &e) // ... but this one
				_, err = domain.Apply(s, domain.Command{Event: domain.Event(row.Event)}, e)
				if !slices.Contains(row.Guards, g.Name) {
					require.NoError(t, err, "%s from %s with %s broken", row.Event, from, g.Name)
					continue
				}
				var terr *domain.TransitionError
				require.ErrorAs(t, err, &terr, "%s from %s with %s broken", row.Event, from, g.Name)
				require.NotEmpty(t, terr.Reason)
			}
		}
	}
}

func TestMachineIsTheTable(t *testing.T) {
	t.Parallel()

	require.Len(t, domain.Events, len(rules.Events()))
	for i, row := range rules.Machine() {
		ev := domain.Events[i]
		require.Equal(t, row.Event, string(ev))
		require.Equal(t, row.To, ev.Target().String())
		for _, st := range domain.Statuses {
			require.Equal(t, slices.Contains(row.From, st.String()), ev.AllowedFrom(st), "%s from %s", ev, st)
		}
	}
	for i, w := range rules.Statuses() {
		require.Equal(t, w, domain.Statuses[i].String())
	}
}
