package domain

import (
	"fmt"
	"strings"
)

// Status is a session's lifecycle state. The integer values are
// load-bearing: they are the values the spec's data has always stored.
type Status int16

const (
	StatusRunning    Status = 0
	StatusWaiting    Status = 1
	StatusNeedsInput Status = 2
	StatusArchived   Status = 3
	StatusFailed     Status = 4
)

// Statuses lists every status in the order the spec presents them.
var Statuses = []Status{StatusWaiting, StatusRunning, StatusNeedsInput, StatusFailed, StatusArchived}

var statusWords = map[Status]string{
	StatusRunning:    "running",
	StatusWaiting:    "waiting",
	StatusNeedsInput: "needs_input",
	StatusArchived:   "archived",
	StatusFailed:     "failed",
}

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
	words := make([]string, len(Statuses))
	for i, s := range Statuses {
		words[i] = s.String()
	}
	return 0, fmt.Errorf("unknown status %q; use one of %s", word, strings.Join(words, ", "))
}
