package infer

import (
	"context"
	"strings"
	"unicode"
)

// Demo is the demo runtime's inferrer: deterministic, no model. The title
// is the first line of the prompt (else the goal, else the transcript's
// start) cut to TitleWords words; the category is the first choice whose
// name appears as a word in that text, else the first choice. make run and
// the tests use it.
type Demo struct{}

// Name implements Inferrer.
func (Demo) Name() string { return "demo" }

// Infer implements Inferrer.
func (Demo) Infer(_ context.Context, req Request) (Answer, error) {
	var text string
	for _, t := range []string{req.Prompt, req.Goal, req.TranscriptStart} {
		if strings.TrimSpace(t) != "" {
			text = t
			break
		}
	}
	var a Answer
	if req.Title {
		line, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
		words := strings.Fields(line)
		if len(words) > TitleWords {
			words = words[:TitleWords]
		}
		a.Title = strings.Join(words, " ")
	}
	if req.Category && len(req.Choices) > 0 {
		a.Category = req.Choices[0].Name
		seen := map[string]bool{}
		for _, w := range strings.FieldsFunc(strings.ToLower(req.Prompt+" "+req.Goal+" "+req.TranscriptStart),
			func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
			seen[w] = true
		}
		for _, c := range req.Choices {
			if seen[strings.ToLower(c.Name)] {
				a.Category = c.Name
				break
			}
		}
	}
	return a, nil
}
