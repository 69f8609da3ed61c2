package transcript

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/zimmerhq/zimmer/services/runner/internal/agent"
)

// Notifier tells followers in this process that a session has new lines.
// A notification carries nothing: the follower reads what is new, so a
// missed or merged one loses nothing.
type Notifier struct {
	mu      sync.Mutex
	waiters map[int64]map[chan struct{}]struct{}
}

// NewNotifier returns a notifier with no followers.
func NewNotifier() *Notifier {
	return &Notifier{waiters: map[int64]map[chan struct{}]struct{}{}}
}

// Subscribe returns a channel that receives (without blocking the
// notifier) after session sessionID has new lines, and the function that
// ends the subscription.
func (n *Notifier) Subscribe(sessionID int64) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	n.mu.Lock()
	if n.waiters[sessionID] == nil {
		n.waiters[sessionID] = map[chan struct{}]struct{}{}
	}
	n.waiters[sessionID][ch] = struct{}{}
	n.mu.Unlock()
	return ch, func() {
		n.mu.Lock()
		delete(n.waiters[sessionID], ch)
		if len(n.waiters[sessionID]) == 0 {
			delete(n.waiters, sessionID)
		}
		n.mu.Unlock()
	}
}

// Notify wakes the session's followers.
func (n *Notifier) Notify(sessionID int64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for ch := range n.waiters[sessionID] {
		select {
		case ch <- struct{}{}:
		default: // one pending wake-up is enough
		}
	}
}

// Appender is the store's side of a Sink.
type Appender interface {
	Append(ctx context.Context, sessionID int64, turnID string, e agent.Event) error
	// EndTurn records how a turn ended (its outcome in words); the first
	// ending recorded stays.
	EndTurn(ctx context.Context, sessionID int64, turnID, outcome string) error
}

// Recorder is the Sink a turn uses: the store, then a wake-up for this
// process's followers once the line is committed.
type Recorder struct {
	Store    Appender
	Notifier *Notifier
}

var _ Sink = Recorder{}

// Append implements Sink.
func (r Recorder) Append(ctx context.Context, sessionID int64, turnID string, e agent.Event) error {
	if err := r.Store.Append(ctx, sessionID, turnID, e); err != nil {
		return err
	}
	r.Notifier.Notify(sessionID)
	return nil
}

// EndTurn records how the turn ended, e.g. "exited 0" or "killed by
// SIGKILL", shown with the turn's transcript.
func (r Recorder) EndTurn(ctx context.Context, sessionID int64, turnID, outcome string) error {
	return r.Store.EndTurn(ctx, sessionID, turnID, outcome)
}

// Reader is what following a transcript reads.
type Reader interface {
	// LinesAfter returns up to limit of the session's lines with an id
	// above afterID, in id order.
	LinesAfter(ctx context.Context, sessionID, afterID int64, limit int) ([]Line, error)
	// StartOfNewestTurn is the id just before the newest turn's first line
	// (0 when the session has no transcript), where a follow starts.
	StartOfNewestTurn(ctx context.Context, sessionID int64) (int64, error)
}

// FollowOptions tune Follow.
type FollowOptions struct {
	// AfterID starts after this line id; 0 starts at the newest turn's
	// first line, so a follower sees the running turn from its beginning.
	AfterID int64
	// Poll is how often the store is read without a wake-up, for lines
	// appended by another process. Zero means DefaultPoll.
	Poll time.Duration
	// Batch bounds the lines read at once. Zero means 200.
	Batch int
}

// DefaultPoll is the follow's fallback read interval.
const DefaultPoll = time.Second

// Follow sends the session's lines to send as they are appended, until ctx
// ends (nil: a follower that went away is not an error) or send or a read
// fails.
func Follow(ctx context.Context, r Reader, n *Notifier, sessionID int64, opts FollowOptions, send func(Line) error) error {
	poll, batch := opts.Poll, opts.Batch
	if poll <= 0 {
		poll = DefaultPoll
	}
	if batch <= 0 {
		batch = 200
	}
	// Subscribed before the first read, so a line appended between the read
	// and the wait still wakes us.
	wake, stop := n.Subscribe(sessionID)
	defer stop()
	after := opts.AfterID
	if after == 0 {
		start, err := r.StartOfNewestTurn(ctx, sessionID)
		if err != nil {
			return followErr(ctx, err)
		}
		after = start
	}
	ticker := time.NewTicker(poll)
	defer ticker.Stop()
	for {
		lines, err := r.LinesAfter(ctx, sessionID, after, batch)
		if err != nil {
			return followErr(ctx, err)
		}
		for _, l := range lines {
			if err := send(l); err != nil {
				return followErr(ctx, err)
			}
			after = l.ID
		}
		if len(lines) == batch {
			continue // more may be waiting
		}
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
		case <-ticker.C:
		}
	}
}

// followErr is err, unless the follower went away: then whatever failed
// failed because of that, and following simply ended.
func followErr(ctx context.Context, err error) error {
	select {
	case <-ctx.Done():
		return nil
	default:
		return fmt.Errorf("follow transcript: %w", err)
	}
}
