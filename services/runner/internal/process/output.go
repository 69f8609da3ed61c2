package process

import (
	"bufio"
	"errors"
	"io"
	"sync"
)

// Stream names the pipe a line came from.
type Stream uint8

const (
	Stdout Stream = iota + 1
	Stderr
)

func (s Stream) String() string {
	switch s {
	case Stdout:
		return "stdout"
	case Stderr:
		return "stderr"
	default:
		return "unknown"
	}
}

// Line is one line of output, without its newline.
type Line struct {
	Stream Stream
	Text   string
	// Truncated: the line was longer than Options.MaxLineBytes; the rest of
	// it was discarded.
	Truncated bool
	// DroppedBefore counts lines dropped just before this one because the
	// consumer had fallen Options.MaxBufferedBytes behind.
	DroppedBefore int
}

// lineQueue decouples the pipe readers from the consumer: push never blocks,
// and drops (counting) when the buffered text would exceed maxBytes.
type lineQueue struct {
	maxBytes int

	mu       sync.Mutex
	lines    []Line
	bytes    int
	dropped  int // since the last delivered line
	total    int // dropped over the whole run
	open     int // producers still reading
	notify   chan struct{}
	consumer func(Line)
}

func newLineQueue(maxBytes, producers int, consumer func(Line)) *lineQueue {
	return &lineQueue{maxBytes: maxBytes, open: producers, notify: make(chan struct{}, 1), consumer: consumer}
}

func (q *lineQueue) push(l Line) {
	q.mu.Lock()
	if q.bytes+len(l.Text) > q.maxBytes && len(q.lines) > 0 {
		q.dropped++
		q.total++
		q.mu.Unlock()
		return
	}
	l.DroppedBefore, q.dropped = q.dropped, 0
	q.lines = append(q.lines, l)
	q.bytes += len(l.Text)
	q.mu.Unlock()
	q.wake()
}

func (q *lineQueue) closeProducer() {
	q.mu.Lock()
	q.open--
	q.mu.Unlock()
	q.wake()
}

func (q *lineQueue) wake() {
	select {
	case q.notify <- struct{}{}:
	default:
	}
}

// deliver hands queued lines to the consumer, one at a time and in order,
// until every producer closed and the queue is empty. It returns the number
// of lines dropped over the run.
func (q *lineQueue) deliver() int {
	for {
		q.mu.Lock()
		batch := q.lines
		q.lines = nil
		q.bytes = 0
		done := q.open == 0 && len(batch) == 0
		q.mu.Unlock()
		if done {
			q.mu.Lock()
			defer q.mu.Unlock()
			return q.total
		}
		for _, l := range batch {
			q.consumer(l)
		}
		if len(batch) == 0 {
			<-q.notify
		}
	}
}

// readLines splits r into lines of at most maxLen bytes and emits each; a
// longer line is emitted cut, and the rest of it discarded. It returns at EOF
// or on the first read error (a read deadline, a closed pipe).
func readLines(r io.Reader, maxLen int, emit func(text string, truncated bool)) {
	br := bufio.NewReaderSize(r, min(maxLen, 64*1024))
	var buf []byte
	truncated := false
	for {
		chunk, err := br.ReadSlice('\n')
		complete := err == nil
		if complete {
			chunk = chunk[:len(chunk)-1]
		}
		if room := maxLen - len(buf); len(chunk) > room {
			buf = append(buf, chunk[:room]...)
			truncated = true
		} else {
			buf = append(buf, chunk...)
		}
		if complete || (err != nil && !errors.Is(err, bufio.ErrBufferFull) && (len(buf) > 0 || truncated)) {
			emit(string(buf), truncated)
			buf, truncated = buf[:0], false
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}

// tail keeps the last n lines it is given.
type tail struct {
	n     int
	mu    sync.Mutex
	lines []string
}

func (t *tail) add(s string) {
	if t.n <= 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.lines) == t.n {
		copy(t.lines, t.lines[1:])
		t.lines = t.lines[:t.n-1]
	}
	t.lines = append(t.lines, s)
}

func (t *tail) snapshot() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.lines...)
}
