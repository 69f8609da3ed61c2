package domain_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// demoSchema is what the demo agent asks with.
var demoSchema = map[string]any{
	"type":       "object",
	"properties": map[string]any{"answer": map[string]any{"type": "string"}},
	"required":   []any{"answer"},
}

func blocked(e *domain.Elicitation) domain.Session {
	s := session(domain.StatusNeedsInput)
	s.Markers.BlockedOnElicitation = true
	s.Markers.Elicitation = e
	return s
}

func violated(t *testing.T, err error) []string {
	t.Helper()
	var verr *validation.Error
	require.True(t, errors.As(err, &verr), "%T %v", err, err)
	var out []string
	for _, v := range verr.Violations {
		out = append(out, v.Field)
	}
	return out
}

func TestElicitationContentIsCheckedAgainstItsSchema(t *testing.T) {
	t.Parallel()
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"name":   map[string]any{"type": "string", "minLength": 2.0, "maxLength": 5.0},
			"email":  map[string]any{"type": "string", "format": "email"},
			"site":   map[string]any{"type": "string", "format": "uri"},
			"day":    map[string]any{"type": "string", "format": "date"},
			"at":     map[string]any{"type": "string", "format": "date-time"},
			"colour": map[string]any{"type": "string", "enum": []any{"red", "blue"}},
			"count":  map[string]any{"type": "integer", "minimum": 1.0, "maximum": 3.0},
			"ratio":  map[string]any{"type": "number"},
			"ok":     map[string]any{"type": "boolean"},
		},
		"required": []any{"name"},
	}
	require.NoError(t, domain.CheckElicitationSchema(schema))
	for _, c := range []struct {
		name    string
		content map[string]any
		bad     []string
		reason  string
	}{
		{"all good", map[string]any{"name": "ada", "email": "a@b.io", "site": "https://x.io/y", "day": "2030-04-15",
			"at": "2030-04-15T09:30:00Z", "colour": "red", "count": 2.0, "ratio": 0.5, "ok": true}, nil, ""},
		{"required missing", map[string]any{"ok": true}, []string{"content.name"}, "is required"},
		{"wrong type", map[string]any{"name": 5.0}, []string{"content.name"}, "must be a string, got a number"},
		{"too short", map[string]any{"name": "a"}, []string{"content.name"}, "at least 2 characters"},
		{"too long", map[string]any{"name": "abcdef"}, []string{"content.name"}, "at most 5 characters"},
		{"not an email", map[string]any{"name": "ada", "email": "nope"}, []string{"content.email"}, "email address"},
		{"not a uri", map[string]any{"name": "ada", "site": "x.io"}, []string{"content.site"}, "absolute URI"},
		{"not a date", map[string]any{"name": "ada", "day": "15/04/2030"}, []string{"content.day"}, "a date like"},
		{"not a date-time", map[string]any{"name": "ada", "at": "2030-04-15 09:30"}, []string{"content.at"}, "RFC 3339"},
		{"not in the enum", map[string]any{"name": "ada", "colour": "green"}, []string{"content.colour"}, `one of "red", "blue"`},
		{"not an integer", map[string]any{"name": "ada", "count": 1.5}, []string{"content.count"}, "integer"},
		{"below the minimum", map[string]any{"name": "ada", "count": 0.0}, []string{"content.count"}, "at least 1"},
		{"above the maximum", map[string]any{"name": "ada", "count": 4.0}, []string{"content.count"}, "at most 3"},
		{"not a boolean", map[string]any{"name": "ada", "ok": "yes"}, []string{"content.ok"}, "true or false"},
		{"unknown property", map[string]any{"name": "ada", "extra": 1.0}, []string{"content.extra"}, "not a property"},
		{"every problem at once", map[string]any{"count": 9.0, "ok": 1.0}, []string{"content.name", "content.count", "content.ok"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			err := domain.CheckElicitationContent(schema, c.content)
			if c.bad == nil {
				require.NoError(t, err)
				return
			}
			require.Equal(t, c.bad, violated(t, err))
			require.Contains(t, err.Error(), c.reason)
		})
	}
	require.Equal(t, []string{"content"}, violated(t, domain.CheckElicitationContent(schema, nil)), "accept needs content")
	require.NoError(t, domain.CheckElicitationContent(nil, map[string]any{"anything": 1.0}), "no schema takes any object")
}

func TestElicitationSchemasOutsideMCPsFormAreRefused(t *testing.T) {
	t.Parallel()
	for name, schema := range map[string]map[string]any{
		"not an object":      {"type": "string"},
		"nested object":      {"type": "object", "properties": map[string]any{"x": map[string]any{"type": "object"}}},
		"properties a list":  {"type": "object", "properties": []any{"x"}},
		"required a string":  {"type": "object", "required": "x"},
		"property not a map": {"type": "object", "properties": map[string]any{"x": "string"}},
	} {
		require.Error(t, domain.CheckElicitationSchema(schema), name)
	}
}

func TestAnAnswerGoesOnlyToThePendingElicitation(t *testing.T) {
	t.Parallel()
	e := &domain.Elicitation{ID: "elicit_demo_3", TurnID: "turn-1", Message: "Ship it?", RequestedSchema: demoSchema}
	s := blocked(e)

	got, err := domain.CheckElicitationAnswer(s, "elicit_demo_3", domain.ElicitationAnswer{Action: "accept", Content: map[string]any{"answer": "yes"}})
	require.NoError(t, err)
	require.Equal(t, *e, got)
	for _, action := range []string{"decline", "cancel"} {
		_, err = domain.CheckElicitationAnswer(s, "elicit_demo_3", domain.ElicitationAnswer{Action: action})
		require.NoError(t, err, action)
		_, err = domain.CheckElicitationAnswer(s, "elicit_demo_3", domain.ElicitationAnswer{Action: action, Content: map[string]any{}})
		require.Equal(t, []string{"content"}, violated(t, err), "content only with accept")
	}
	_, err = domain.CheckElicitationAnswer(s, "elicit_demo_3", domain.ElicitationAnswer{Action: "maybe"})
	require.Equal(t, []string{"action"}, violated(t, err))
	_, err = domain.CheckElicitationAnswer(s, "elicit_demo_3", domain.ElicitationAnswer{Action: "accept", Content: map[string]any{"answer": 1.0}})
	require.Equal(t, []string{"content.answer"}, violated(t, err))

	_, err = domain.CheckElicitationAnswer(s, "elicit_demo_2", domain.ElicitationAnswer{Action: "cancel"})
	require.ErrorIs(t, err, domain.ErrNotFound)
	require.Contains(t, err.Error(), `it waits on "elicit_demo_3"`)

	idle := session(domain.StatusNeedsInput)
	_, err = domain.CheckElicitationAnswer(idle, "elicit_demo_3", domain.ElicitationAnswer{Action: "cancel"})
	require.ErrorIs(t, err, domain.ErrNotFound)
	require.Contains(t, err.Error(), "no pending elicitation")

	idle.Markers.LostElicitation = &domain.LostElicitation{Reason: domain.LostExpired, RequestID: "elicit_demo_3"}
	_, err = domain.CheckElicitationAnswer(idle, "elicit_demo_3", domain.ElicitationAnswer{Action: "cancel"})
	require.Contains(t, err.Error(), "lost (expired)")

	archived := blocked(e)
	archived.Status = domain.StatusArchived
	_, err = domain.CheckElicitationAnswer(archived, "elicit_demo_3", domain.ElicitationAnswer{Action: "cancel"})
	require.ErrorIs(t, err, domain.ErrPrecondition)
}

// The banner: a block keeps its question and clears an old banner; an
// unblock that says the question expired or was stranded leaves one; an
// answer (a cancel too) leaves none; resume and archive clear it.
func TestTheLostElicitationBanner(t *testing.T) {
	t.Parallel()
	running := session(domain.StatusRunning)
	running.Markers.RunningJobID = "turn-4"
	running.Markers.LostElicitation = &domain.LostElicitation{Reason: domain.LostExpired, RequestID: "old"}
	question := &domain.Elicitation{ID: "elicit_demo_5", Message: "Which   branch\nshould I use?", RequestedSchema: demoSchema}

	out, err := domain.Apply(running, domain.Command{Event: domain.EventBlockOnElicitation, Elicitation: question}, env())
	require.NoError(t, err)
	s := out.Session
	require.Nil(t, s.Markers.LostElicitation, "a fresh elicitation clears the banner")
	require.Equal(t, &domain.Elicitation{ID: "elicit_demo_5", TurnID: "turn-4", Message: question.Message,
		RequestedSchema: demoSchema, RequestedAt: now}, s.Markers.Elicitation)
	require.Equal(t, s.Markers.Elicitation, domain.PendingElicitation(s))

	for _, c := range []struct {
		outcome string
		banner  *domain.LostElicitation
	}{
		{"accept", nil}, {"decline", nil}, {"cancel", nil}, {"", nil},
		{"expired", &domain.LostElicitation{Reason: "expired", RequestID: "elicit_demo_5", Summary: "Which branch should I use?", LostAt: now}},
		{"stranded", &domain.LostElicitation{Reason: "stranded", RequestID: "elicit_demo_5", Summary: "Which branch should I use?", LostAt: now}},
	} {
		out, err := domain.Apply(s, domain.Command{Event: domain.EventUnblockFromElicitation, ElicitationOutcome: c.outcome}, env())
		require.NoError(t, err, c.outcome)
		require.Equal(t, c.banner, out.Session.Markers.LostElicitation, c.outcome)
		require.Nil(t, out.Session.Markers.Elicitation, "the question is over")
		if c.banner != nil {
			require.Contains(t, out.Timeline[len(out.Timeline)-1].Message, `[Elicitation] "elicit_demo_5" went unanswered (`+c.outcome+`)`)
		}
	}

	lost, err := domain.Apply(s, domain.Command{Event: domain.EventUnblockFromElicitation, ElicitationOutcome: "expired"}, env())
	require.NoError(t, err)
	paused, err := domain.Apply(lost.Session, domain.Command{Event: domain.EventPause}, env())
	require.NoError(t, err)
	require.NotNil(t, paused.Session.Markers.LostElicitation, "the turn's end keeps the banner: the session is not merely idle")
	for _, ev := range []domain.Event{domain.EventResume, domain.EventArchive} {
		out, err := domain.Apply(paused.Session, domain.Command{Event: ev}, env())
		require.NoError(t, err)
		require.Nil(t, out.Session.Markers.LostElicitation, "%s clears the banner", ev)
	}

	err = domain.Command{Event: domain.EventUnblockFromElicitation, ElicitationOutcome: "shrug"}.Validate()
	require.Equal(t, []string{"elicitation_outcome"}, violated(t, err))
	err = domain.Command{Event: domain.EventBlockOnElicitation, Elicitation: &domain.Elicitation{ID: " "}}.Validate()
	require.Equal(t, []string{"elicitation.id"}, violated(t, err))
}

func TestTheSweepLeavesAStrandedBanner(t *testing.T) {
	t.Parallel()
	s := blocked(&domain.Elicitation{ID: "elicit_demo_1", Message: strings.Repeat("why ", 100)})
	s.UpdatedAt = now.Add(-2 * domain.DefaultElicitationExpiry)
	out, ok := domain.ExpireElicitationBlock(s, now.Add(-domain.DefaultElicitationExpiry), domain.DefaultElicitationExpiry, env())
	require.True(t, ok)
	l := out.Session.Markers.LostElicitation
	require.Equal(t, domain.LostStranded, l.Reason)
	require.Equal(t, "elicit_demo_1", l.RequestID)
	require.Equal(t, domain.MaxLostSummaryRunes, len([]rune(l.Summary)))
	require.Nil(t, out.Session.Markers.Elicitation)
	require.False(t, out.Session.Markers.BlockedOnElicitation)
}

// FuzzCheckElicitationContent: any schema and content decoded from JSON is
// checked without a panic, and a refusal names fields under content.
func FuzzCheckElicitationContent(f *testing.F) {
	seed, _ := json.Marshal(demoSchema)
	f.Add(string(seed), `{"answer":"yes"}`)
	f.Add(string(seed), `{"answer":5}`)
	f.Add(`{"type":"object","properties":{"n":{"type":"integer","minimum":1}},"required":["n"]}`, `{"n":1.5}`)
	f.Add(`{"properties":{"e":{"type":"string","enum":["a",1]}}}`, `{"e":"b"}`)
	f.Add(`{"properties":{"d":{"type":"string","format":"date-time","minLength":"x"}}}`, `{"d":"2030"}`)
	f.Fuzz(func(t *testing.T, schemaJSON, contentJSON string) {
		var schema, content map[string]any
		if json.Unmarshal([]byte(schemaJSON), &schema) != nil || json.Unmarshal([]byte(contentJSON), &content) != nil {
			return
		}
		_ = domain.CheckElicitationSchema(schema)
		err := domain.CheckElicitationContent(schema, content)
		if err == nil {
			return
		}
		var verr *validation.Error
		if !errors.As(err, &verr) {
			t.Fatalf("CheckElicitationContent(%s, %s) = %T %v, want a *validation.Error", schemaJSON, contentJSON, err, err)
		}
		for _, v := range verr.Violations {
			if v.Field != "content" && !strings.HasPrefix(v.Field, "content.") {
				t.Fatalf("violation names %q, not a content field", v.Field)
			}
		}
	})
}
