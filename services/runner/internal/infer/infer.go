// Package infer gives a paused session the title and category it still
// lacks (session-lifecycle.md, the pause hook's step 5,
// enqueue_session_inference_if_needed): lifecycle's effect starts
// session/<id>/infer (zimmer.runner.Infer), which asks lifecycle what is
// still pending, asks a model through the Inferrer port — the session's
// runtime in one-shot mode (claude -p, codex exec) or the deterministic
// demo — and hands the answer back to lifecycle, which sets each field only
// while it is still unset. The model call is an activity with a budget (a
// timeout per attempt and a few attempts); when the budget is spent the
// failure is written once on the session's timeline and the session goes
// on: nothing waits for a title.
package infer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/workflowid"
	"github.com/zimmerhq/zimmer/services/runner/internal/domain"
)

// Workflow and activity names, as the Temporal Web UI shows them.
const (
	WorkflowName    = "zimmer.runner.Infer"
	ActivityPending = "zimmer.runner.InferencePending"
	ActivityAsk     = "zimmer.runner.InferTitleAndCategory"
	ActivityRecord  = "zimmer.runner.RecordInference"
	ActivityNote    = "zimmer.runner.InferenceNote"
)

// The budget of one inference: each attempt of the model call is bounded
// by AskTimeout, and AskAttempts attempts are made, AskRetryInterval apart
// at first, before the failure is noted.
const (
	AskTimeout       = 2 * time.Minute
	AskAttempts      = 3
	AskRetryInterval = 5 * time.Second
)

// What of a session a model is shown: enough to name it, little enough to
// be cheap.
const (
	// TranscriptStartLines is how many of the first turn's lines are read.
	TranscriptStartLines = 40
	// MaxContextChars bounds each of the prompt, the goal and the
	// transcript's start in the model's prompt.
	MaxContextChars = 4000
	// TitleWords is how many words the model is asked for.
	TitleWords = 8
)

// WorkflowID is session id's inference: one at a time per session.
func WorkflowID(id int64) string { return workflowid.Inference(id) }

// Input starts an inference.
type Input struct {
	SessionID int64
}

// Choice is a category the model may choose.
type Choice struct {
	ID   int64
	Name string
}

// Request is what a model is asked about one session.
type Request struct {
	SessionID int64
	// Runtime is the session's agent_runtime.
	Runtime string
	// Title and Category say which are still to be inferred.
	Title, Category bool
	Prompt, Goal    string
	// TranscriptStart is the first lines of the session's transcript, as
	// text.
	TranscriptStart string
	Choices         []Choice
}

// Answer is what a model said, before Settle checks it.
type Answer struct {
	Title    string `json:"title"`
	Category string `json:"category"`
	// Usage is what the call used, when the runtime reports it (Claude
	// Code's result); nil otherwise. Never the model's to say.
	Usage *domain.Usage `json:"-"`
}

// Inferrer asks a model for a session's title and category.
type Inferrer interface {
	// Name names the model's runtime, for logs and the timeline.
	Name() string
	Infer(ctx context.Context, req Request) (Answer, error)
}

// Inferred is an answer made fit to record: a clean title ("" for none)
// and the chosen category's id (nil for none).
type Inferred struct {
	Title      string
	CategoryID *int64
	// Category is the chosen category's name, for the log.
	Category string
}

// Settle makes a model's answer fit to record: only what was asked, the
// title cleaned and cut to rules.InferredTitleChars, the category one of
// the choices by name (without regard to case; any other is dropped). An
// answer with nothing usable in it is an error, so the call is retried.
func Settle(req Request, a Answer) (Inferred, error) {
	var out Inferred
	if req.Title {
		out.Title = CleanTitle(a.Title)
	}
	if req.Category {
		want := strings.TrimSpace(strings.Trim(strings.TrimSpace(a.Category), `"'`))
		for _, c := range req.Choices {
			if strings.EqualFold(c.Name, want) {
				id := c.ID
				out.CategoryID, out.Category = &id, c.Name
				break
			}
		}
	}
	if out.Title == "" && out.CategoryID == nil {
		return Inferred{}, fmt.Errorf("the model's answer held no usable title or category (title %s, category %s)",
			strconv.QuoteToASCII(cut(a.Title, 80)), strconv.QuoteToASCII(cut(a.Category, 80)))
	}
	return out, nil
}

// CleanTitle makes a model's title a card's heading: one line, no
// surrounding quotes or final period, control characters dropped, at most
// rules.InferredTitleChars characters (cut at a word when it can be).
func CleanTitle(t string) string {
	t = strings.Map(func(r rune) rune {
		switch {
		case unicode.IsSpace(r):
			return ' '
		case unicode.IsControl(r), r == utf8.RuneError:
			return -1
		}
		return r
	}, t)
	t = strings.Join(strings.Fields(t), " ")
	t = strings.TrimSpace(strings.Trim(t, "\"'`*#"))
	t = strings.TrimSpace(strings.TrimSuffix(t, "."))
	if utf8.RuneCountInString(t) > rules.InferredTitleChars {
		r := []rune(t)[:rules.InferredTitleChars]
		s := string(r)
		if i := strings.LastIndexByte(s, ' '); i > rules.InferredTitleChars/2 {
			s = s[:i]
		}
		t = strings.TrimSpace(s) + "…"
	}
	return t
}

// Prompt is the one-shot prompt a model runtime is given: what to answer
// and in which shape, then the session's task, goal and transcript start,
// each cut to MaxContextChars.
func Prompt(req Request) string {
	var b strings.Builder
	b.WriteString("You file a coding-agent session on an operator's dashboard. Do not use tools and do not do the task. ")
	b.WriteString("Reply with exactly one JSON object on one line and nothing else: ")
	var keys []string
	if req.Title {
		keys = append(keys, fmt.Sprintf(`"title": a title of at most %d words saying what the session works on, no quotes, no final period`, TitleWords))
	}
	if req.Category {
		keys = append(keys, `"category": exactly one of the category names below, as written`)
	}
	b.WriteString(strings.Join(keys, "; ") + ".\n")
	if req.Category {
		names := make([]string, len(req.Choices))
		for i, c := range req.Choices {
			names[i] = strconv.Quote(c.Name)
		}
		b.WriteString("Categories: " + strings.Join(names, ", ") + "\n")
	}
	for _, part := range []struct{ tag, text string }{
		{"task", req.Prompt}, {"goal", req.Goal}, {"transcript-start", req.TranscriptStart},
	} {
		if strings.TrimSpace(part.text) == "" {
			continue
		}
		fmt.Fprintf(&b, "<%s>\n%s\n</%s>\n", part.tag, cut(part.text, MaxContextChars), part.tag)
	}
	return b.String()
}

// ParseAnswer reads the JSON object a model replied with, allowing prose
// or a code fence around it.
func ParseAnswer(text string) (Answer, error) {
	start, end := strings.IndexByte(text, '{'), strings.LastIndexByte(text, '}')
	if start < 0 || end < start {
		return Answer{}, fmt.Errorf("the model replied without a JSON object: %s", strconv.QuoteToASCII(cut(text, 200)))
	}
	var a Answer
	if err := json.Unmarshal([]byte(text[start:end+1]), &a); err != nil {
		return Answer{}, fmt.Errorf("the model's JSON object does not read as {title, category}: %w", err)
	}
	return a, nil
}

// ErrOff is the answer of Inferrers.For when no inferrer serves a runtime.
var ErrOff = errors.New("inference is off for this runtime")

// Inferrers chooses the inferrer of a session: the one of its runtime, or
// one fixed for every session; none when inference is off.
type Inferrers struct {
	byRuntime map[string]Inferrer
	// def is the runtime of a session created without one.
	def   string
	fixed Inferrer
	off   bool
}

// Modes of RUNNER_INFERENCE.
const (
	// ModeSession asks each session's own runtime (the default).
	ModeSession = "session"
	// ModeOff infers nothing.
	ModeOff = "off"
)

// NewInferrers builds the choice for mode: ModeSession, ModeOff or a
// runtime's name, whose inferrer then serves every session.
// defaultRuntime is the runtime of a session created without one
// (RUNNER_DEFAULT_RUNTIME).
func NewInferrers(mode, defaultRuntime string, byRuntime map[string]Inferrer) (Inferrers, error) {
	switch mode {
	case ModeOff:
		return Inferrers{off: true}, nil
	case ModeSession, "":
		return Inferrers{byRuntime: byRuntime, def: defaultRuntime}, nil
	}
	in, ok := byRuntime[mode]
	if !ok {
		names := append([]string{ModeSession, ModeOff}, slices.Sorted(maps.Keys(byRuntime))...)
		return Inferrers{}, fmt.Errorf("RUNNER_INFERENCE %q: want one of %s", mode, strings.Join(names, ", "))
	}
	return Inferrers{fixed: in}, nil
}

// For returns the inferrer for a session of runtime, or ErrOff.
func (i Inferrers) For(runtime string) (Inferrer, error) {
	switch {
	case i.off:
		return nil, ErrOff
	case i.fixed != nil:
		return i.fixed, nil
	}
	if runtime == "" {
		runtime = i.def
	}
	if in, ok := i.byRuntime[runtime]; ok {
		return in, nil
	}
	return nil, fmt.Errorf("%w: no one-shot inferrer for agent_runtime %q", ErrOff, runtime)
}

func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}
