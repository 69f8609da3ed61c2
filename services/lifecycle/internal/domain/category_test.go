package domain_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
)

func cats(names ...string) []domain.Category {
	out := make([]domain.Category, len(names))
	for i, n := range names {
		out[i] = domain.Category{ID: int64(i + 1), Name: n, Position: int32(i + 1)}
	}
	return out
}

func order(cs []domain.Category) []string {
	var out []string
	for i, c := range cs {
		if int(c.Position) != i+1 {
			out = append(out, "gap")
		}
		out = append(out, c.Name)
	}
	return out
}

func TestPlaceMovesOneAndRenumbersTheRest(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		id   int64
		pos  int32
		want []string
	}{
		{"to the front", 3, 1, []string{"c", "a", "b", "d"}},
		{"to the back", 1, 4, []string{"b", "c", "d", "a"}},
		{"past the end is last", 2, 99, []string{"a", "c", "d", "b"}},
		{"where it is", 2, 2, []string{"a", "b", "c", "d"}},
		{"an unknown id moves nothing", 9, 1, []string{"a", "b", "c", "d"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := cats("a", "b", "c", "d")
			require.Empty(t, cmp.Diff(tc.want, order(domain.Place(in, tc.id, tc.pos))), "(-want +got)")
			require.Equal(t, []string{"a", "b", "c", "d"}, order(in), "the caller's slice is not changed")
		})
	}
	gappy := []domain.Category{{ID: 1, Name: "a", Position: 2}, {ID: 2, Name: "b", Position: 7}}
	require.Equal(t, []string{"a", "b"}, order(domain.Renumber(gappy)))
}

func TestCategoryRequestsAreValidatedWhole(t *testing.T) {
	t.Parallel()
	zero := int32(0)
	err := domain.NewCategory{Name: " ", Position: &zero}.Validate()
	require.ErrorContains(t, err, "name: is required and not blank")
	require.ErrorContains(t, err, "position: is 0; positions start at 1")
	require.ErrorContains(t, domain.NewCategory{Name: strings.Repeat("x", domain.MaxCategoryNameChars+1)}.Validate(), "name")
	require.ErrorContains(t, domain.NewCategory{Name: "a\tb"}.Validate(), "one line")
	require.NoError(t, domain.NewCategory{Name: "Docs"}.Validate())
	require.ErrorContains(t, domain.CategoryPatch{}.Validate(), "changes nothing")
	require.Equal(t, "Docs", domain.CategoryName("  Docs "))
}

// The pause hook's step 5 asks for inference while the title or the
// category is unset, and no longer once both are set.
func TestPauseAsksForInferenceUntilTitleAndCategoryAreSet(t *testing.T) {
	t.Parallel()
	cat := int64(3)
	for _, tc := range []struct {
		name     string
		title    string
		category *int64
		want     bool
	}{
		{"neither", "", nil, true},
		{"title only", "t", nil, true},
		{"category only", "", &cat, true},
		{"both", "t", &cat, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := session(domain.StatusRunning)
			s.Title, s.CategoryID = tc.title, tc.category
			out, err := domain.Apply(s, domain.Command{Event: domain.EventPause}, env())
			require.NoError(t, err)
			require.Equal(t, tc.want, strings.Contains(strings.Join(effectNames(out), " "), "domain.Inference"), effectNames(out))
		})
	}
}

// Inference never overwrites: a title or a category set before the answer
// arrives is kept, and only what was unset is set.
func TestInferredFieldsAreSetOnlyWhileUnset(t *testing.T) {
	t.Parallel()
	bugs := &domain.Category{ID: 7, Name: "Bugs"}
	mine := int64(2)

	s := session(domain.StatusNeedsInput)
	s.Title = ""
	next, titleSet, categorySet, note := domain.Inferred{Title: " Fix the parser ", Category: bugs}.Apply(s, now, "the runner")
	require.True(t, titleSet)
	require.True(t, categorySet)
	require.Equal(t, "Fix the parser", next.Title)
	require.Equal(t, int64(7), *next.CategoryID)
	require.Equal(t, `[Inference] set the title "Fix the parser" and the category "Bugs" (by the runner)`, note.Message)

	s.Title, s.CategoryID = "A human's title", &mine
	next, titleSet, categorySet, note = domain.Inferred{Title: "Fix the parser", Category: bugs}.Apply(s, now, "")
	require.False(t, titleSet)
	require.False(t, categorySet)
	require.Equal(t, "A human's title", next.Title)
	require.Equal(t, int64(2), *next.CategoryID)
	require.Empty(t, note.Message)

	s.Title, s.CategoryID = "   ", nil
	next, titleSet, categorySet, _ = domain.Inferred{Title: ""}.Apply(s, now, "")
	require.False(t, titleSet, "an empty inferred title sets nothing")
	require.False(t, categorySet)
	require.Nil(t, next.CategoryID)
}

func TestPendingInferenceNeedsACategoryToChoose(t *testing.T) {
	t.Parallel()
	s := session(domain.StatusNeedsInput)
	all := []domain.Category{{ID: 1, Name: "Parked", Frozen: true}, {ID: 2, Name: "Docs"}}
	choices := domain.InferenceChoices(all)
	require.Equal(t, []string{"Docs"}, order(domain.Renumber(choices)), "a frozen category is never inferred")
	title, category := s.PendingInference(choices)
	require.False(t, title)
	require.True(t, category)
	_, category = s.PendingInference(domain.InferenceChoices(all[:1]))
	require.False(t, category, "nothing to choose from")
}
