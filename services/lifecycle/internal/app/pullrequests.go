package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/clock"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// WatchedPullRequest names one watch: a session's pull request.
type WatchedPullRequest struct {
	SessionID int64
	rules.PullRequestRef
}

// PullRequestRepository keeps the sessions' pull requests and their
// watches (LC-33, LC-34).
type PullRequestRepository interface {
	// RecordPullRequest adds pr to the session with the timeline line;
	// false when it was there already. NotFound without the session; a
	// PreconditionError on an archived one.
	RecordPullRequest(ctx context.Context, sessionID int64, pr rules.PullRequestRef, line string, at time.Time) (bool, error)
	PullRequestWatch(ctx context.Context, sessionID int64, pr rules.PullRequestRef) (domain.PullRequestWatch, error)
	SavePullRequestWatch(ctx context.Context, w domain.PullRequestWatch, at time.Time) error
	// WatchedPullRequests are the open pull requests of sessions not
	// archived.
	WatchedPullRequests(ctx context.Context) ([]WatchedPullRequest, error)
	// WatchedPullRequestsOf are the open pull requests of the session,
	// none while it is archived.
	WatchedPullRequestsOf(ctx context.Context, sessionID int64) ([]WatchedPullRequest, error)
	// AcceptGitHubDelivery claims deliveryID and calls poke with the
	// watches of prs, in one transaction: a poke that fails leaves the
	// delivery unclaimed. False when the id was claimed before.
	AcceptGitHubDelivery(ctx context.Context, deliveryID, event string, at time.Time, prs []rules.PullRequestRef,
		poke func([]WatchedPullRequest) error) (bool, []WatchedPullRequest, error)
}

// PullRequestWatcher runs the watches: one Temporal workflow per watch.
type PullRequestWatcher interface {
	// Watch starts the watch unless it runs; idempotent.
	Watch(ctx context.Context, w WatchedPullRequest) error
	// Poke makes a running watch read its pull request now; a watch that
	// has ended is not an error.
	Poke(ctx context.Context, w WatchedPullRequest) error
}

// GitHub reads a pull request through GitHub's REST API.
type GitHub interface {
	// ReadPullRequest reads the pull request, its review comments after
	// reviewAfter and its conversation's comments after issueAfter.
	ReadPullRequest(ctx context.Context, pr rules.PullRequestRef, reviewAfter, issueAfter int64) (domain.PullRequestReading, error)
}

// ErrPullRequestGone is GitHub answering that the pull request does not
// exist (or the token may not see it): the watch ends.
var ErrPullRequestGone = errors.New("the pull request is gone")

// NoticeQueue sends a session a notice through the queue (QueueNotice).
type NoticeQueue interface {
	QueueNotice(ctx context.Context, sessionID int64, n domain.Notice) error
}

// RecordPullRequest tracks a pull request the session's agent opened and
// starts its watch (when GitHub is configured: Watcher is nil otherwise).
type RecordPullRequest struct {
	Repo    PullRequestRepository
	Watcher PullRequestWatcher
	Clock   clock.Clock
}

// Handle records url on session sessionID; turnID names the turn for the
// timeline line.
func (uc RecordPullRequest) Handle(ctx context.Context, sessionID int64, turnID, url string) (domain.PullRequest, bool, error) {
	pr, err := rules.ParsePullRequestURL(url)
	if err != nil {
		return domain.PullRequest{}, false, validation.Invalid("url", "%s", err.Error())
	}
	line := "[GitHub] tracking pull request " + pr.URL() + ", opened by the agent"
	if turnID != "" {
		line += " in turn " + turnID
	}
	recorded, err := uc.Repo.RecordPullRequest(ctx, sessionID, pr, line, uc.Clock.Now())
	if err != nil {
		return domain.PullRequest{}, false, err
	}
	// Started on a repeat too: a start that failed after the first record
	// is made good by the runner's retry. Idempotent.
	if uc.Watcher != nil {
		if err := uc.Watcher.Watch(ctx, WatchedPullRequest{SessionID: sessionID, PullRequestRef: pr}); err != nil {
			return domain.PullRequest{}, false, fmt.Errorf("start watching %s: %w (%w)", pr, err, domain.ErrUnavailable)
		}
	}
	return domain.PullRequest{PullRequestRef: pr, State: domain.PullRequestOpen}, recorded, nil
}

// ReadPullRequest is one reading of a watched pull request: what GitHub
// says, the notices it calls for queued (each under its own key), then the
// watch saved. Done says the watch is over.
type ReadPullRequest struct {
	Repo    PullRequestRepository
	GitHub  GitHub
	Notices NoticeQueue
	Clock   clock.Clock
}

// Handle reads w's pull request.
func (uc ReadPullRequest) Handle(ctx context.Context, w WatchedPullRequest) (done bool, err error) {
	watch, err := uc.Repo.PullRequestWatch(ctx, w.SessionID, w.PullRequestRef)
	if errors.Is(err, domain.ErrNotFound) {
		return true, nil // the session was deleted
	}
	if err != nil {
		return false, err
	}
	if watch.Done() {
		return true, nil
	}
	reading, err := uc.GitHub.ReadPullRequest(ctx, w.PullRequestRef, watch.CommentsSeen, watch.IssueCommentsSeen)
	if errors.Is(err, ErrPullRequestGone) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	notices, next := watch.Read(reading)
	for _, n := range notices {
		if err := uc.Notices.QueueNotice(ctx, w.SessionID, n); err != nil {
			// The notices before it are queued under their keys, and are
			// sent again as no-ops when the reading is retried.
			return false, fmt.Errorf("send session %d the notice %s: %w", w.SessionID, n.Key, err)
		}
	}
	if err := uc.Repo.SavePullRequestWatch(ctx, next, uc.Clock.Now()); err != nil {
		return false, err
	}
	return next.Done(), nil
}

// AcceptGitHubDelivery takes a verified webhook delivery: the pull
// requests it names are read now by their watches (ReadPullRequest), the
// path the poll takes.
type AcceptGitHubDelivery struct {
	Repo    PullRequestRepository
	Watcher PullRequestWatcher
	Clock   clock.Clock
}

// GitHubDeliveryOutcome is what became of a delivery.
type GitHubDeliveryOutcome struct {
	Duplicate bool
	// Ignored says why nothing is done; empty when watches were poked.
	Ignored string
	Poked   int
}

// Handle takes the delivery.
func (uc AcceptGitHubDelivery) Handle(ctx context.Context, deliveryID, event string, payload []byte) (GitHubDeliveryOutcome, error) {
	var vs validation.Violations
	if deliveryID == "" {
		vs.Add("delivery_id", "is required (X-GitHub-Delivery)")
	}
	if event == "" {
		vs.Add("event", "is required (X-GitHub-Event)")
	}
	if err := vs.Err(); err != nil {
		return GitHubDeliveryOutcome{}, err
	}
	d, err := domain.ReadGitHubDelivery(event, payload)
	if err != nil {
		return GitHubDeliveryOutcome{}, validation.Invalid("payload", "%s", err.Error())
	}
	if uc.Watcher == nil {
		return GitHubDeliveryOutcome{Ignored: "pull requests are not watched here: lifecycle has no GITHUB_TOKEN"}, nil
	}
	poke := func(ws []WatchedPullRequest) error {
		for _, w := range ws {
			if err := uc.Watcher.Poke(ctx, w); err != nil {
				return fmt.Errorf("poke the watch of %s on session %d: %w (%w)", w.PullRequestRef, w.SessionID, err, domain.ErrUnavailable)
			}
		}
		return nil
	}
	fresh, watched, err := uc.Repo.AcceptGitHubDelivery(ctx, deliveryID, event, uc.Clock.Now(), d.PullRequests, poke)
	switch {
	case err != nil:
		return GitHubDeliveryOutcome{}, err
	case !fresh:
		return GitHubDeliveryOutcome{Duplicate: true}, nil
	case !d.Handled:
		return GitHubDeliveryOutcome{Ignored: d.Ignored}, nil
	case len(watched) == 0:
		return GitHubDeliveryOutcome{Ignored: "no session watches the pull request it names"}, nil
	}
	return GitHubDeliveryOutcome{Poked: len(watched)}, nil
}

// WatchAll starts the watch of every open pull request of a session not
// archived, once at start: a watch whose start was lost (a Temporal
// namespace reset, say) is made good. Idempotent.
func WatchAll(ctx context.Context, repo PullRequestRepository, watcher PullRequestWatcher) (int, error) {
	ws, err := repo.WatchedPullRequests(ctx)
	if err != nil {
		return 0, err
	}
	for _, w := range ws {
		if err := watcher.Watch(ctx, w); err != nil {
			return 0, err
		}
	}
	return len(ws), nil
}

// WatchAgain starts again the watches an archive ended (LC-39): those of
// the session's open pull requests, once the session is out of archived
// (an unarchive, a restore from trash). Lifecycle's outbox hands it the
// transition (events.SubscriberPullRequestWatches), so a start that fails
// is retried, and one lost to a crash after the commit is made good.
// Without a Watcher (GitHub not configured) nothing is watched.
type WatchAgain struct {
	Repo    PullRequestRepository
	Watcher PullRequestWatcher
}

// Handle starts the watches of session sessionID's open pull requests and
// says how many; a session archived again meanwhile has none. Idempotent.
func (uc *WatchAgain) Handle(ctx context.Context, sessionID int64) (int, error) {
	if uc.Watcher == nil {
		return 0, nil
	}
	ws, err := uc.Repo.WatchedPullRequestsOf(ctx, sessionID)
	if err != nil {
		return 0, err
	}
	for _, w := range ws {
		if err := uc.Watcher.Watch(ctx, w); err != nil {
			return 0, fmt.Errorf("watch %s of session %d again: %w", w.PullRequestRef, sessionID, err)
		}
	}
	return len(ws), nil
}
