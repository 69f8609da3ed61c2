package app

import (
	"context"
	"fmt"
	"time"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
)

// SessionChangeFeed reads the sessions' changes in the order they
// committed.
type SessionChangeFeed interface {
	// LatestSessionChange is the newest event-stream entry's id (0 when
	// there is none): where a watch from now starts.
	LatestSessionChange(ctx context.Context) (int64, error)
	// SessionChangesAfter returns up to limit changes with an id past
	// after, oldest first. It never skips one: an entry with a smaller id
	// than one it returns has committed already (or never will).
	SessionChangesAfter(ctx context.Context, after int64, limit int) ([]domain.SessionChange, error)
	// SessionChanged returns a channel closed once this process commits a
	// change after the call; the watch polls as well, for the changes
	// other processes commit.
	SessionChanged() <-chan struct{}
}

const (
	// WatchPageSize bounds what one read of the feed holds in memory: a
	// watcher that reads slowly holds at most one page, however far behind
	// it is.
	WatchPageSize = 500
	// DefaultWatchPoll is how often a watch looks for changes committed by
	// another lifecycle process, which its own process's signal does not
	// see.
	DefaultWatchPoll = 500 * time.Millisecond
)

// WatchSessionChanges streams the sessions' changes to one watcher.
type WatchSessionChanges struct {
	Feed SessionChangeFeed
	// Poll is DefaultWatchPoll when zero.
	Poll time.Duration
	// Stopping is closed when the service stops: every watch ends then,
	// cleanly (its watcher resumes from the last position it got), so an
	// open watch does not hold the server's graceful stop for its grace.
	Stopping <-chan struct{}
}

// Handle sends the watch's starting position (change nil), then every
// change after it as it commits, each with the position it moves the
// watcher to, until ctx ends, the service stops or send fails. after nil, or past the newest
// change, starts at the newest.
func (uc WatchSessionChanges) Handle(ctx context.Context, after *int64, send func(position int64, c *domain.SessionChange) error) error {
	latest, err := uc.Feed.LatestSessionChange(ctx)
	if err != nil {
		return fmt.Errorf("read the newest session change: %w", err)
	}
	position := latest
	if after != nil && *after >= 0 && *after < latest {
		position = *after
	}
	if err := send(position, nil); err != nil {
		return err
	}
	poll := uc.Poll
	if poll <= 0 {
		poll = DefaultWatchPoll
	}
	ticker := time.NewTicker(poll)
	defer ticker.Stop()
	for {
		// Taken before the read, so a change committed while reading
		// wakes the next wait rather than being slept through.
		changed := uc.Feed.SessionChanged()
		changes, err := uc.Feed.SessionChangesAfter(ctx, position, WatchPageSize)
		if err != nil {
			return fmt.Errorf("read session changes after %d: %w", position, err)
		}
		for i := range changes {
			position = changes[i].EventID
			if err := send(position, &changes[i]); err != nil {
				return err
			}
		}
		if len(changes) == WatchPageSize {
			continue
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-uc.Stopping:
			return nil
		case <-changed:
		case <-ticker.C:
		}
	}
}
