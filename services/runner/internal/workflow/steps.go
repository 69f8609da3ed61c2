package workflow

import "time"

// stepTimer times the consecutive steps of an activity's start for one
// debug line (docs/benchmarks.md reads them): each step's milliseconds
// since the previous step ended.
type stepTimer struct {
	last  time.Time
	steps []any
}

func newStepTimer() *stepTimer { return &stepTimer{last: time.Now()} }

// done ends the step named name.
func (s *stepTimer) done(name string) {
	now := time.Now()
	s.steps = append(s.steps, name+"_ms", float64(now.Sub(s.last).Microseconds())/1000)
	s.last = now
}

// attrs are the steps as slog key-value pairs.
func (s *stepTimer) attrs() []any { return s.steps }
