package infer

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/runner/internal/domain"
)

func request() Request {
	return Request{
		SessionID: 42, Runtime: "claude_code", Title: true, Category: true,
		Prompt: "Fix the flaky bugs in the parser\nand add tests", Goal: "green CI",
		Choices: []Choice{{ID: 3, Name: "Docs"}, {ID: 5, Name: "Bugs"}},
	}
}

func TestSettleKeepsOnlyWhatWasAskedAndKnown(t *testing.T) {
	t.Parallel()
	got, err := Settle(request(), Answer{Title: `  "Fix the parser."  `, Category: "bugs"})
	require.NoError(t, err)
	require.Equal(t, "Fix the parser", got.Title)
	require.Equal(t, int64(5), *got.CategoryID, "matched without regard to case")

	got, err = Settle(request(), Answer{Title: "Fix it", Category: "Features"})
	require.NoError(t, err)
	require.Nil(t, got.CategoryID, "a category not offered is dropped")

	req := request()
	req.Title = false
	got, err = Settle(req, Answer{Title: "Unasked", Category: "Docs"})
	require.NoError(t, err)
	require.Empty(t, got.Title, "a title not asked for is not recorded")

	_, err = Settle(request(), Answer{Title: "  ", Category: "nope"})
	require.ErrorContains(t, err, "no usable title or category")
}

func TestCleanTitleMakesAHeading(t *testing.T) {
	t.Parallel()
	require.Equal(t, "Two lines", CleanTitle("Two\n lines\x00"))
	long := CleanTitle(strings.Repeat("word ", 40))
	require.LessOrEqual(t, utf8.RuneCountInString(long), rules.InferredTitleChars+1)
	require.True(t, strings.HasSuffix(long, "word…"), long)
}

func TestPromptAsksForWhatIsPending(t *testing.T) {
	t.Parallel()
	p := Prompt(request())
	require.Contains(t, p, `"title"`)
	require.Contains(t, p, `Categories: "Docs", "Bugs"`)
	require.Contains(t, p, "<task>\nFix the flaky bugs in the parser\nand add tests\n</task>")
	require.Contains(t, p, "<goal>\ngreen CI\n</goal>")
	require.NotContains(t, p, "<transcript-start>", "nothing to show")
	req := request()
	req.Category = false
	require.NotContains(t, Prompt(req), "Categories:")
}

func TestParseAnswerFindsTheObject(t *testing.T) {
	t.Parallel()
	a, err := ParseAnswer("Sure!\n```json\n{\"title\": \"Fix parser\", \"category\": \"Bugs\"}\n```")
	require.NoError(t, err)
	require.Equal(t, Answer{Title: "Fix parser", Category: "Bugs"}, a)
	_, err = ParseAnswer("no object here")
	require.ErrorContains(t, err, "without a JSON object")
	_, err = ParseAnswer(`{"title": 3}`)
	require.ErrorContains(t, err, "does not read as")
}

func FuzzSettleAnAnswer(f *testing.F) {
	f.Add(`{"title":"Fix it","category":"Bugs"}`)
	f.Add("```{\"title\":\"\\u0000\\n\"}```")
	f.Add(strings.Repeat("{", 100))
	f.Fuzz(func(t *testing.T, reply string) {
		a, err := ParseAnswer(reply)
		if err != nil {
			return
		}
		got, err := Settle(request(), a)
		if err != nil {
			return
		}
		require.LessOrEqual(t, utf8.RuneCountInString(got.Title), rules.InferredTitleChars+1)
		require.NotContains(t, got.Title, "\n")
		if got.CategoryID != nil {
			require.Contains(t, []int64{3, 5}, *got.CategoryID)
		}
	})
}

func TestDemoIsDeterministic(t *testing.T) {
	t.Parallel()
	a, err := Demo{}.Infer(context.Background(), request())
	require.NoError(t, err)
	require.Equal(t, Answer{Title: "Fix the flaky bugs in the parser", Category: "Bugs"}, a)
	req := request()
	req.Prompt, req.Goal = "", "write the manual"
	a, err = Demo{}.Infer(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, Answer{Title: "write the manual", Category: "Docs"}, a, "no name matches: the first choice")
}

func TestInferrersChooseByRuntime(t *testing.T) {
	t.Parallel()
	by := map[string]Inferrer{"demo": Demo{}, "claude_code": ClaudeCode{}}
	in, err := NewInferrers(ModeSession, "demo", by)
	require.NoError(t, err)
	got, err := in.For("")
	require.NoError(t, err)
	require.Equal(t, "demo", got.Name(), "a session without a runtime has the default one")
	_, err = in.For("command")
	require.ErrorIs(t, err, ErrOff)

	in, err = NewInferrers(ModeOff, "demo", by)
	require.NoError(t, err)
	_, err = in.For("demo")
	require.ErrorIs(t, err, ErrOff)

	in, err = NewInferrers("demo", "claude_code", by)
	require.NoError(t, err)
	got, err = in.For("claude_code")
	require.NoError(t, err)
	require.Equal(t, "demo", got.Name(), "a fixed inferrer serves every session")

	_, err = NewInferrers("gpt", "demo", by)
	require.ErrorContains(t, err, "want one of session, off, claude_code, demo")
}

// fakeEnv is the environment the fake CLIs run with: the runner's keys,
// which they must not see, and what they are told to do.
func fakeEnv(record string, extra ...string) []string {
	return append([]string{"PATH=" + os.Getenv("PATH"), "ZIMMER_API_KEYS=secret", "RUNNER_DATABASE_URL=postgres://x",
		"FAKE_RECORD=" + record}, extra...)
}

func fakePath(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", name))
	require.NoError(t, err)
	return p
}

func recorded(t *testing.T, path string) (args []string, stdin string) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	head, in, ok := strings.Cut(string(b), "--stdin--\n")
	require.True(t, ok, "no stdin recorded: %s", b)
	return strings.Fields(head), in
}

func TestClaudeCodeOneShot(t *testing.T) {
	t.Parallel()
	record := filepath.Join(t.TempDir(), "record")
	c := ClaudeCode{Path: fakePath(t, "fake-claude"), Model: "haiku",
		environ: fakeEnv(record, `FAKE_RESULT=Here: {"title": "Fix the parser", "category": "Bugs"}`)}
	a, err := c.Infer(context.Background(), request())
	require.NoError(t, err)
	require.Equal(t, Answer{Title: "Fix the parser", Category: "Bugs",
		Usage: &domain.Usage{InputTokens: 120, OutputTokens: 12, CacheReadTokens: 30, CacheCreationTokens: 4, CostUSD: 0.001}}, a,
		"with what the CLI reported the call used")
	args, stdin := recorded(t, record)
	require.Equal(t, []string{"-p", "--output-format", "json", "--max-turns", "1", "--model", "haiku"}, args)
	require.Equal(t, Prompt(request()), stdin, "the prompt goes on stdin, never on the command line")

	c.environ = fakeEnv(record, "FAKE_RESULT=rate limited", "FAKE_IS_ERROR=true")
	_, err = c.Infer(context.Background(), request())
	require.ErrorContains(t, err, "claude ended in error")

	c.environ = fakeEnv(record, "FAKE_RESULT={}", "FAKE_SLEEP=5")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = c.Infer(ctx, request())
	require.ErrorContains(t, err, "gave no answer in time")
	require.Less(t, time.Since(start), 4*time.Second, "the budget kills the CLI")

	_, err = ClaudeCode{Path: filepath.Join(t.TempDir(), "missing")}.Infer(context.Background(), request())
	require.ErrorContains(t, err, "RUNNER_CLAUDE_PATH")
}

func TestCodexExec(t *testing.T) {
	t.Parallel()
	record := filepath.Join(t.TempDir(), "record")
	c := Codex{Path: fakePath(t, "fake-codex"), environ: fakeEnv(record, `FAKE_RESULT={"title":"Write the docs","category":"Docs"}`)}
	a, err := c.Infer(context.Background(), request())
	require.NoError(t, err)
	require.Equal(t, Answer{Title: "Write the docs", Category: "Docs"}, a)
	args, stdin := recorded(t, record)
	require.Equal(t, []string{"exec", "--skip-git-repo-check", "--sandbox", "read-only", "--output-last-message"}, args[:5])
	require.Equal(t, "-", args[len(args)-1])
	require.Equal(t, Prompt(request()), stdin)

	c.environ = fakeEnv(record, "FAKE_RESULT=x", "FAKE_EXIT=2")
	_, err = c.Infer(context.Background(), request())
	require.ErrorContains(t, err, "failed")
}
