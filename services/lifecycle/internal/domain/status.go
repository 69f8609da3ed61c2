package domain

import (
	"fmt"
	"strings"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

// Status is a session's lifecycle state. The integer values are
// load-bearing: they are the values the spec's data has always stored. The
// words are rules' status words.
type Status int16

const (
	StatusRunning    Status = 0
	StatusWaiting    Status = 1
	StatusNeedsInput Status = 2
	StatusArchived   Status = 3
	StatusFailed     Status = 4
)

// statusWords gives each stored integer its word.
var statusWords = map[Status]string{
	StatusRunning:    rules.StatusRunning,
	StatusWaiting:    rules.StatusWaiting,
	StatusNeedsInput: rules.StatusNeedsInput,
	StatusArchived:   rules.StatusArchived,
	StatusFailed:     rules.StatusFailed,
}

// Statuses lists every status in the order the spec presents them.
var Statuses = func() []Status {
	words := rules.Statuses()
	out := make([]Status, len(words))
	for i, w := range words {
		out[i] = mustParseStatus(w)
	}
	return out
}()

// String returns the spec's word for the status.
func (s Status) String() string {
	if w, ok := statusWords[s]; ok {
		return w
	}
	return fmt.Sprintf("status(%d)", int16(s))
}

// ParseStatus reads one of the spec's words.
func ParseStatus(word string) (Status, error) {
	for s, w := range statusWords {
		if w == word {
			return s, nil
		}
	}
	return 0, fmt.Errorf("unknown status %q; use one of %s", word, strings.Join(rules.Statuses(), ", "))
}

// mustParseStatus reads a word of rules' own table, which always parses.
func mustParseStatus(word string) Status {
	s, err := ParseStatus(word)
	if err != nil {
		panic(fmt.Sprintf("rules names a status the domain has no integer for: %v", err))
	}
	return s
}
