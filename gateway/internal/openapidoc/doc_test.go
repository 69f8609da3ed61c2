package openapidoc

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/gateway/openapi"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

func TestIntegersAreDescribedAsTheGatewaySendsThem(t *testing.T) {
	t.Parallel()

	v, err := parse([]byte(`{"definitions":{"v1Session":{"type":"object","properties":{
		"id":{"type":"string","format":"int64"},
		"ids":{"type":"array","items":{"type":"string","format":"uint64"}},
		"title":{"type":"string"},
		"precedence":{"type":"integer","format":"int32"}}}}}`))
	require.NoError(t, err)
	d := &document{root: v.(*object)}
	require.NoError(t, d.integers())
	out, err := encode(d.root)
	require.NoError(t, err)
	require.JSONEq(t, `{"definitions":{"v1Session":{"type":"object","properties":{
		"id":{"type":"integer","format":"int64"},
		"ids":{"type":"array","items":{"type":"integer","format":"uint64"}},
		"title":{"type":"string"},
		"precedence":{"type":"integer","format":"int32"}}}}}`, string(out))
	require.Less(t, strings.Index(string(out), `"id"`), strings.Index(string(out), `"title"`), "order kept")
}

// The committed document is the finished one: finishing it again changes
// no byte (make proto-check regenerates it from the protos and diffs).
func TestCommittedDocumentIsFinished(t *testing.T) {
	t.Parallel()

	again, err := Finish(openapi.Spec)
	require.NoError(t, err)
	require.Equal(t, string(openapi.Spec), string(again))
}

// The rules in the document are the lifecycle rules.
func TestDocumentCarriesTheRules(t *testing.T) {
	t.Parallel()

	var doc struct {
		Paths       map[string]map[string]map[string]any `json:"paths"`
		Definitions map[string]struct {
			Properties map[string]map[string]any `json:"properties"`
		} `json:"definitions"`
	}
	require.NoError(t, json.Unmarshal(openapi.Spec, &doc))
	prop := func(def, name string) map[string]any {
		t.Helper()
		p, ok := doc.Definitions[def].Properties[name]
		require.True(t, ok, "%s.%s", def, name)
		return p
	}
	strs := func(v any) []string {
		var out []string
		for _, s := range v.([]any) {
			out = append(out, s.(string))
		}
		return out
	}

	event := prop("LifecycleServiceTransitionSessionBody", "event")
	require.Equal(t, rules.Events(), strs(event["enum"]))
	for _, tr := range rules.Machine() {
		require.Contains(t, event["description"], tr.Doc)
	}
	require.Equal(t, rules.Statuses(), strs(prop("v1Session", "status")["enum"]))
	require.Equal(t, rules.SchedulingClasses(), strs(prop("v1CreateSessionRequest", "scheduling_class")["enum"]))
	require.EqualValues(t, rules.MaxPromptChars, prop("v1CreateSessionRequest", "prompt")["maxLength"])
	require.EqualValues(t, rules.MaxNotesChars, prop("LifecycleServiceUpdateSessionBody", "notes")["maxLength"])
	require.Equal(t, rules.SlugPattern, prop("v1CreateSessionRequest", "slug")["pattern"])
	interval := prop("LifecycleServiceSetSessionHeartbeatBody", "interval_seconds")
	require.EqualValues(t, rules.MinHeartbeatSeconds, interval["minimum"])
	require.EqualValues(t, rules.MaxHeartbeatSeconds, interval["maximum"])

	for _, p := range doc.Paths["/api/v1/sessions"]["get"]["parameters"].([]any) {
		if p := p.(map[string]any); p["name"] == "per_page" {
			// Clamped, not refused (issue 9): no maximum a client would
			// refuse on; the sentence states the range.
			require.NotContains(t, p, "maximum")
			require.Contains(t, p["description"], fmt.Sprintf("outside 1 to %d is clamped", rules.MaxPerPage))
			require.EqualValues(t, rules.DefaultPerPage, p["default"])
		}
	}
}

// A route or field the finishing relies on that the protos no longer have
// fails make proto instead of being skipped.
func TestFinishRefusesWhatItCannotFinish(t *testing.T) {
	t.Parallel()

	_, err := Finish([]byte(`{"swagger":"2.0","paths":{},"definitions":{}}`))
	require.ErrorContains(t, err, "no operation GET /api/v1/sessions/{id}")
	_, err = Finish([]byte(`[]`))
	require.ErrorContains(t, err, "not an OpenAPI 2.0 document")

	// Without the property a rule is for.
	withoutEvent := []byte(strings.Replace(string(openapi.Spec), `"event": {`, `"evnt": {`, 1))
	_, err = Finish(withoutEvent)
	require.ErrorContains(t, err, "no property LifecycleServiceTransitionSessionBody.event")
}

// A follow-up answers 200 when delivered and 202 when queued
// (rest.Successes): both are documented, each with the response body and
// what it means; a create keeps its 201 and a delete its bodiless 204.
func TestSuccessStatusesAreDocumented(t *testing.T) {
	t.Parallel()

	var doc struct {
		Paths map[string]map[string]struct {
			Responses map[string]struct {
				Description string         `json:"description"`
				Schema      map[string]any `json:"schema"`
			} `json:"responses"`
		} `json:"paths"`
		Definitions map[string]struct {
			Properties map[string]map[string]any `json:"properties"`
		} `json:"definitions"`
	}
	require.NoError(t, json.Unmarshal(openapi.Spec, &doc))

	followUp := doc.Paths["/api/v1/sessions/{session_id}/follow_up"]["post"].Responses
	require.ElementsMatch(t, []string{"200", "202", "default"}, keys(followUp))
	for status, word := range map[string]string{"200": "Delivered", "202": "Queued"} {
		require.Equal(t, map[string]any{"$ref": "#/definitions/v1FollowUpResponse"}, followUp[status].Schema, status)
		require.True(t, strings.HasPrefix(followUp[status].Description, word+": "), followUp[status].Description)
	}
	require.ElementsMatch(t, []string{"201", "default"}, keys(doc.Paths["/api/v1/sessions"]["post"].Responses))
	deleted := doc.Paths["/api/v1/sessions/{session_id}"]["delete"].Responses
	require.ElementsMatch(t, []string{"204", "default"}, keys(deleted))
	require.Nil(t, deleted["204"].Schema)

	body := doc.Definitions["QueueServiceFollowUpBody"].Properties
	require.EqualValues(t, rules.MaxPromptChars, body["prompt"]["maxLength"])
	require.EqualValues(t, rules.MaxGoalChars, body["goal"]["maxLength"])
	require.Contains(t, doc.Definitions["SessionDetail"].Properties, "enqueued_messages")
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
