package domain_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// nested is v wrapped in levels objects: {"n":{"n":…v…}}.
func nested(levels int, v any) map[string]any {
	m := map[string]any{"n": v}
	for range levels - 1 {
		m = map[string]any{"n": m}
	}
	return m
}

// refusedFields is the fields err names, or fails the test when err is not
// a validation error.
func refusedFields(t *testing.T, err error) []string {
	t.Helper()
	var verr *validation.Error
	require.ErrorAs(t, err, &verr)
	var fields []string
	for _, v := range verr.Violations {
		fields = append(fields, v.Field)
	}
	return fields
}

// createFields are the string fields of a create, each with its limit.
var createFields = []struct {
	name  string
	limit int
	set   func(*domain.NewSession, string)
}{
	{"prompt", rules.MaxPromptChars, func(n *domain.NewSession, v string) { n.Prompt = v }},
	{"git_root", rules.MaxGitRootChars, func(n *domain.NewSession, v string) { n.GitRoot = v }},
	{"branch", rules.MaxBranchChars, func(n *domain.NewSession, v string) { n.Branch = v }},
	{"subdirectory", rules.MaxSubdirectoryChars, func(n *domain.NewSession, v string) { n.Subdirectory = v }},
	{"title", rules.MaxTitleChars, func(n *domain.NewSession, v string) { n.Title = v }},
	{"goal", rules.MaxGoalChars, func(n *domain.NewSession, v string) { n.Goal = v }},
	{"agent_root", rules.MaxAgentRootChars, func(n *domain.NewSession, v string) { n.AgentRoot = v }},
	{"agent_runtime", rules.MaxAgentRuntimeChars, func(n *domain.NewSession, v string) { n.AgentRuntime = v }},
}

// TestEveryCreateStringIsBounded: each string field takes its limit in
// 4-byte characters and refuses one more, a NUL and invalid UTF-8, naming
// the field (issue 9, items 2 and 3).
func TestEveryCreateStringIsBounded(t *testing.T) {
	t.Parallel()
	for _, f := range createFields {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			n := valid()
			f.set(&n, strings.Repeat("𝄞", f.limit))
			if f.name == "agent_runtime" {
				// Only a runtime's name is one (issue 20 item 9): the limit
				// still bounds what the refusal quotes.
				require.Equal(t, []string{f.name}, refusedFields(t, n.Validate()))
			} else {
				require.NoError(t, n.Validate(), "the limit itself is allowed")
			}
			for name, bad := range map[string]string{
				"over the limit": strings.Repeat("𝄞", f.limit+1),
				"NUL":            "x\x00y",
				"invalid UTF-8":  "x\xffy",
				"lone surrogate": "x\xed\xa0\x80y",
			} {
				n := valid()
				f.set(&n, bad)
				err := n.Validate()
				require.Equal(t, []string{f.name}, refusedFields(t, err), name)
				require.Contains(t, err.Error(), f.name+": ")
			}
		})
	}
}

func TestMetadataIsCheckedWhole(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		md     map[string]any
		reason string // in the refusal; "" means valid
	}{
		{name: "at the depth limit", md: nested(rules.MaxMetadataDepth-1, "leaf")},
		{name: "arrays count as levels", md: map[string]any{"a": []any{[]any{"x"}}}},
		{name: "one level too deep", md: nested(rules.MaxMetadataDepth, map[string]any{}), reason: "nests deeper than 32 levels"},
		{name: "an array too deep", md: nested(rules.MaxMetadataDepth, []any{}), reason: "nests deeper than 32 levels"},
		{name: "3,333 levels", md: nested(3333, "x"), reason: "nests deeper than 32 levels"},
		{name: "NUL in a key", md: map[string]any{"a\x00": 1}, reason: `key "a\x00" contains a NUL`},
		{name: "NUL in a nested value", md: map[string]any{"a": map[string]any{"b": []any{1, "x\x00"}}}, reason: "at a.b[1]: contains a NUL"},
		{name: "invalid UTF-8 in a key", md: map[string]any{"ok": map[string]any{"\xff": true}}, reason: `at ok: key "\xff" is not valid UTF-8`},
		{name: "too large", md: map[string]any{"k": strings.Repeat("a", rules.MaxMetadataBytes)}, reason: "bytes as JSON; the limit is 262144"},
		{name: "every JSON type", md: map[string]any{"s": "x", "n": 1.5, "b": true, "z": nil, "a": []any{}, "o": map[string]any{}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			n := valid()
			n.CustomMetadata = tt.md
			p := domain.Patch{CustomMetadata: tt.md}
			for _, err := range []error{n.Validate(), p.Validate()} {
				if tt.reason == "" {
					require.NoError(t, err)
					continue
				}
				require.Equal(t, []string{"custom_metadata"}, refusedFields(t, err))
				require.Contains(t, err.Error(), tt.reason)
			}
		})
	}
}

func TestPatchStringsAreBounded(t *testing.T) {
	t.Parallel()
	for _, f := range []struct {
		name  string
		limit int
		set   func(*domain.Patch, string)
	}{
		{"title", rules.MaxTitleChars, func(p *domain.Patch, v string) { p.Title = &v }},
		{"goal", rules.MaxGoalChars, func(p *domain.Patch, v string) { p.Goal = &v }},
		{"notes", rules.MaxNotesChars, func(p *domain.Patch, v string) { p.Notes = &v }},
	} {
		var p domain.Patch
		f.set(&p, strings.Repeat("𝄞", f.limit))
		require.NoError(t, p.Validate(), f.name)
		for _, bad := range []string{strings.Repeat("a", f.limit+1), "\x00", "\xc3"} {
			var p domain.Patch
			f.set(&p, bad)
			require.Equal(t, []string{f.name}, refusedFields(t, p.Validate()), "%s %q", f.name, bad)
		}
	}
	for _, bad := range []string{"a\x00", "\xff", strings.Repeat("a", 1000)} {
		p := domain.Patch{Slug: &bad}
		require.Equal(t, []string{"slug"}, refusedFields(t, p.Validate()))
		p = domain.Patch{SchedulingClass: &bad}
		require.Equal(t, []string{"scheduling_class"}, refusedFields(t, p.Validate()))
	}
}

func TestPatchRefusesMergedMetadataTooLarge(t *testing.T) {
	t.Parallel()
	half := strings.Repeat("a", rules.MaxMetadataBytes/2)
	s := domain.Session{ID: 1, CustomMetadata: map[string]any{"a": half}}
	p := domain.Patch{CustomMetadata: map[string]any{"b": half}}
	require.NoError(t, p.Validate(), "the patch alone fits")
	_, _, err := p.Apply(s, time.Now(), "")
	require.Equal(t, []string{"custom_metadata"}, refusedFields(t, err))
	require.Contains(t, err.Error(), "merged into the session's")

	p = domain.Patch{CustomMetadata: map[string]any{"a": nil, "b": half}}
	got, _, err := p.Apply(s, time.Now(), "")
	require.NoError(t, err, "replacing a key frees its room")
	require.Equal(t, map[string]any{"b": half}, got.CustomMetadata)
}

func TestCommandDetailsAreBounded(t *testing.T) {
	t.Parallel()
	require.NoError(t, domain.Command{FailureReason: strings.Repeat("é", rules.MaxFailureReasonChars), PausedBy: "user", RunningJobID: "job-1"}.Validate())
	for _, tt := range []struct {
		cmd   domain.Command
		field string
	}{
		{domain.Command{FailureReason: strings.Repeat("a", rules.MaxFailureReasonChars+1)}, "failure_reason"},
		{domain.Command{FailureReason: "a\x00"}, "failure_reason"},
		{domain.Command{PausedBy: strings.Repeat("a", rules.MaxPausedByChars+1)}, "paused_by"},
		{domain.Command{PausedBy: "\xff"}, "paused_by"},
		{domain.Command{RunningJobID: strings.Repeat("a", rules.MaxRunningJobIDChars+1)}, "running_job_id"},
		{domain.Command{RunningJobID: "\x00"}, "running_job_id"},
	} {
		require.Equal(t, []string{tt.field}, refusedFields(t, tt.cmd.Validate()))
	}
}

func TestListFiltersAndRefsAreText(t *testing.T) {
	t.Parallel()
	_, err := domain.ListRequest{Query: "a\x00", AgentRoot: "\xff", Genesis: strings.Repeat("g", rules.MaxGenesisChars+1)}.Filter()
	require.Equal(t, []string{"q", "agent_root", "genesis"}, refusedFields(t, err))
	_, err = domain.ListRequest{Query: strings.Repeat("q", rules.MaxQueryChars)}.Filter()
	require.NoError(t, err)

	for _, bad := range []string{"a\x00", "\xff", "\xed\xa0\x80"} {
		_, err := domain.ParseSessionRef(bad)
		require.Equal(t, []string{"session_id"}, refusedFields(t, err), "%q", bad)
	}
}

func TestSummaryCarriesPreviews(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("𝄞", rules.ListPreviewChars+1)
	at := strings.Repeat("𝄞", rules.ListPreviewChars)
	s := domain.Session{ID: 1, Title: long, Prompt: long, Goal: at, Notes: long, CustomMetadata: map[string]any{"k": "v"}}
	s.Markers.FailureReason = long
	got := s.Summary()
	cut := at + rules.PreviewEllipsis
	require.Equal(t, cut, got.Prompt)
	require.Equal(t, at, got.Goal, "a text within the preview is whole")
	require.Equal(t, cut, got.Notes)
	require.Equal(t, cut, got.Markers.FailureReason)
	require.Equal(t, long, got.Title, "bounded fields are kept whole")
	require.Nil(t, got.CustomMetadata)
	require.Equal(t, long, s.Prompt, "the session itself is untouched")
}

// depth is how many objects and arrays v nests, an independent reckoning of
// the rule the domain checks.
func depth(v any) int {
	deepest := 0
	switch v := v.(type) {
	case map[string]any:
		for _, e := range v {
			deepest = max(deepest, depth(e))
		}
		return deepest + 1
	case []any:
		for _, e := range v {
			deepest = max(deepest, depth(e))
		}
		return deepest + 1
	}
	return 0
}

// storable reports, independently of the domain, whether every key and
// string in v is text Postgres can store.
func storable(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if !text(k) || !storable(e) {
				return false
			}
		}
	case []any:
		for _, e := range v {
			if !storable(e) {
				return false
			}
		}
	case string:
		return text(v)
	}
	return true
}

func text(s string) bool { return utf8.ValidString(s) && !strings.ContainsRune(s, 0) }

func fits(s string, limit int) bool { return text(s) && utf8.RuneCountInString(s) <= limit }

// fuzzMetadata decodes raw as a JSON object (nil when it is not one) and
// wraps it in levels objects.
func fuzzMetadata(raw []byte, levels uint8) map[string]any {
	var md map[string]any
	if json.Unmarshal(raw, &md) != nil || md == nil {
		return nil
	}
	if levels > 0 {
		return nested(int(levels), md)
	}
	return md
}

func metadataOK(md map[string]any) bool {
	if md == nil {
		return true
	}
	if depth(md) > rules.MaxMetadataDepth || !storable(md) {
		return false
	}
	b, err := json.Marshal(md)
	return err == nil && len(b) <= rules.MaxMetadataBytes
}

// checkRefusal asserts err is a validation error naming only known fields,
// each in the message.
func checkRefusal(t *testing.T, err error, known ...string) {
	t.Helper()
	var verr *validation.Error
	require.True(t, errors.As(err, &verr), "a refusal is a validation error: %v", err)
	for _, v := range verr.Violations {
		require.Contains(t, known, v.Field)
		require.Contains(t, err.Error(), v.Field+": ")
	}
}

// FuzzNewSessionValidate checks create validation against an independent
// statement of the rules: it accepts exactly the requests whose strings are
// storable text within their limits, whose git_root is not blank and whose
// metadata is shallow, storable and small enough, and what it accepts
// builds and encodes. The seeds run with go test; `go test -fuzz` explores.
func FuzzNewSessionValidate(f *testing.F) {
	f.Add("fix the test", "git@example.com:a/b.git", "Title", "fix-1", []byte(`{"ticket":"A-1"}`), uint8(0))
	f.Add("", "g", "", "", []byte(`{}`), uint8(31))
	f.Add("", "g", "", "", []byte(`{"a":[]}`), uint8(31))
	f.Add("p", "   ", "t", "", []byte(`null`), uint8(0))
	f.Add("p\x00", "g", "t", "", []byte(`{"k\u0000":1}`), uint8(0))
	f.Add("p", "g\xff", "t\xed\xa0\x80", "Bad", []byte(`{"a":"\u0000"}`), uint8(2))
	f.Add(strings.Repeat("𝄞", 300), "g", strings.Repeat("t", rules.MaxTitleChars+1), "123", []byte(`[1,2]`), uint8(40))
	f.Add("p", "g", "", "", []byte(`{"a":{"b":{"c":[[[[{"d":"e"}]]]]}}}`), uint8(25))
	f.Fuzz(func(t *testing.T, prompt, gitRoot, title, slug string, raw []byte, levels uint8) {
		n := domain.NewSession{Prompt: prompt, GitRoot: gitRoot, Title: title, Slug: slug, CustomMetadata: fuzzMetadata(raw, levels)}
		want := fits(prompt, rules.MaxPromptChars) && fits(gitRoot, rules.MaxGitRootChars) && strings.TrimSpace(gitRoot) != "" &&
			fits(title, rules.MaxTitleChars) && (slug == "" || domain.ValidateSlug(slug) == nil) && metadataOK(n.CustomMetadata)
		err := n.Validate()
		if !want {
			checkRefusal(t, err, "prompt", "git_root", "title", "slug", "custom_metadata")
			return
		}
		require.NoError(t, err)
		s, err := n.Build(nil, time.Now())
		require.NoError(t, err)
		_, err = json.Marshal(s.CustomMetadata)
		require.NoError(t, err, "what is accepted encodes")
		require.Equal(t, s.Summary().ID, s.ID)
	})
}

// FuzzPatchValidate does the same for a patch, and applies what it accepts
// to a stored session.
func FuzzPatchValidate(f *testing.F) {
	f.Add("New title", "notes", "goal", "slug-1", "spot", []byte(`{"k":"v"}`), uint8(0))
	f.Add("", "", "", "", "priority", []byte(`{"k":null}`), uint8(31))
	f.Add("\x00", "\xff", "g", "UPPER", "urgent", []byte(`{"\u0000":1}`), uint8(32))
	f.Add(strings.Repeat("t", rules.MaxTitleChars+1), "n", "g", "1", "", []byte(`{"a":[[[]]]}`), uint8(30))
	f.Fuzz(func(t *testing.T, title, notes, goal, slug, class string, raw []byte, levels uint8) {
		p := domain.Patch{Title: &title, Notes: &notes, Goal: &goal, Slug: &slug, SchedulingClass: &class, CustomMetadata: fuzzMetadata(raw, levels)}
		want := fits(title, rules.MaxTitleChars) && fits(notes, rules.MaxNotesChars) && fits(goal, rules.MaxGoalChars) &&
			(slug == "" || domain.ValidateSlug(slug) == nil) && (class == rules.SchedulingPriority || class == rules.SchedulingSpot) &&
			metadataOK(p.CustomMetadata)
		err := p.Validate()
		if !want {
			checkRefusal(t, err, "title", "notes", "goal", "slug", "scheduling_class", "custom_metadata")
			return
		}
		require.NoError(t, err)
		stored := domain.Session{ID: 1, Title: "t", CustomMetadata: map[string]any{"kept": true}}
		got, _, err := p.Apply(stored, time.Now(), "")
		if err != nil {
			checkRefusal(t, err, "custom_metadata")
			require.ErrorContains(t, err, "merged into the session's")
			return
		}
		require.True(t, metadataOK(got.CustomMetadata), "what is stored is storable")
	})
}
