package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/app"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/pgdb"
)

var _ app.PullRequestRepository = (*Sessions)(nil)

// decodePullRequests reads pullRequestsColumn.
func decodePullRequests(b []byte) ([]domain.PullRequest, error) {
	var rows []struct {
		Owner  string `json:"owner"`
		Repo   string `json:"repo"`
		Number int    `json:"number"`
		State  string `json:"state"`
	}
	if err := json.Unmarshal(b, &rows); err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, nil
	}
	out := make([]domain.PullRequest, len(rows))
	for i, r := range rows {
		out[i] = domain.PullRequest{PullRequestRef: rules.PullRequestRef{Owner: r.Owner, Repo: r.Repo, Number: r.Number},
			State: domain.PullRequestState(r.State)}
	}
	return out, nil
}

// RecordPullRequest implements app.PullRequestRepository: the row and the
// timeline line in one transaction, under a key share of the session (a
// delete waits, or wins and the record is NotFound); an archived session
// records nothing.
func (s *Sessions) RecordPullRequest(ctx context.Context, sessionID int64, pr rules.PullRequestRef, line string, at time.Time) (bool, error) {
	var recorded bool
	err := pgdb.InTx(ctx, s.pool, pgx.ReadCommitted, func(tx pgx.Tx) error {
		var status domain.Status
		err := tx.QueryRow(ctx, `SELECT status FROM sessions WHERE id = $1 FOR KEY SHARE`, sessionID).Scan(&status)
		if errors.Is(err, pgx.ErrNoRows) {
			return &domain.NotFoundError{Ref: domain.SessionRef{ID: sessionID}}
		}
		if err != nil {
			return fmt.Errorf("read session %d: %w", sessionID, err)
		}
		if status == domain.StatusArchived {
			return &domain.PreconditionError{Reason: fmt.Sprintf(
				"session %d is archived, which ended the watch of its pull requests: nothing more is recorded on it; unarchive it first", sessionID)}
		}
		tag, err := tx.Exec(ctx, `
			INSERT INTO pull_requests (session_id, owner, repo, number, recorded_at) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT DO NOTHING`, sessionID, pr.Owner, pr.Repo, pr.Number, at)
		if err != nil {
			return fmt.Errorf("record pull request %s on session %d: %w", pr, sessionID, err)
		}
		if recorded = tag.RowsAffected() == 1; !recorded {
			return nil
		}
		if _, err := tx.Exec(ctx, `INSERT INTO session_timeline (session_id, kind, message, created_at) VALUES ($1, 'note', $2, $3)`,
			sessionID, line, at); err != nil {
			return fmt.Errorf("note pull request %s on session %d: %w", pr, sessionID, err)
		}
		return nil
	})
	return recorded, err
}

// PullRequestWatch implements app.PullRequestRepository.
func (s *Sessions) PullRequestWatch(ctx context.Context, sessionID int64, pr rules.PullRequestRef) (domain.PullRequestWatch, error) {
	w := domain.PullRequestWatch{SessionID: sessionID}
	var state string
	var status domain.Status
	err := s.pool.QueryRow(ctx, `
		SELECT p.owner, p.repo, p.number, p.state, p.merged_notified, p.in_conflict, p.conflicts, p.comments_seen, p.issue_comments_seen, p.checks_seen, s.status
		FROM pull_requests p JOIN sessions s ON s.id = p.session_id
		WHERE p.session_id = $1 AND p.owner = $2 AND p.repo = $3 AND p.number = $4`,
		sessionID, pr.Owner, pr.Repo, pr.Number).
		Scan(&w.Owner, &w.Repo, &w.Number, &state, &w.MergedNotified, &w.InConflict, &w.Conflicts, &w.CommentsSeen, &w.IssueCommentsSeen, &w.ChecksSeen, &status)
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.PullRequestWatch{}, fmt.Errorf("pull request %s of session %d: %w", pr, sessionID, domain.ErrNotFound)
	}
	if err != nil {
		return domain.PullRequestWatch{}, fmt.Errorf("read the watch of pull request %s of session %d: %w", pr, sessionID, err)
	}
	w.State = domain.PullRequestState(state)
	w.SessionArchived = status == domain.StatusArchived
	return w, nil
}

// SavePullRequestWatch implements app.PullRequestRepository.
func (s *Sessions) SavePullRequestWatch(ctx context.Context, w domain.PullRequestWatch, at time.Time) error {
	checks := w.ChecksSeen
	if checks == nil {
		checks = []int64{}
	}
	_, err := s.pool.Exec(ctx, `
		UPDATE pull_requests SET state = $5, merged_notified = $6, in_conflict = $7, conflicts = $8, comments_seen = $9,
			checks_seen = $10, read_at = $11, issue_comments_seen = $12
		WHERE session_id = $1 AND owner = $2 AND repo = $3 AND number = $4`,
		w.SessionID, w.Owner, w.Repo, w.Number, string(w.State), w.MergedNotified, w.InConflict, w.Conflicts, w.CommentsSeen,
		checks, at, w.IssueCommentsSeen)
	if err != nil {
		return fmt.Errorf("save the watch of pull request %s of session %d: %w", w.PullRequestRef, w.SessionID, err)
	}
	return nil
}

// WatchedPullRequests implements app.PullRequestRepository: the pull
// requests still open on sessions not archived.
func (s *Sessions) WatchedPullRequests(ctx context.Context) ([]app.WatchedPullRequest, error) {
	ws, err := s.watchedPullRequests(ctx, 0)
	if err != nil {
		return nil, fmt.Errorf("list the watched pull requests: %w", err)
	}
	return ws, nil
}

// WatchedPullRequestsOf implements app.PullRequestRepository.
func (s *Sessions) WatchedPullRequestsOf(ctx context.Context, sessionID int64) ([]app.WatchedPullRequest, error) {
	ws, err := s.watchedPullRequests(ctx, sessionID)
	if err != nil {
		return nil, fmt.Errorf("list the watched pull requests of session %d: %w", sessionID, err)
	}
	return ws, nil
}

// watchedPullRequests lists the open pull requests of sessions not
// archived: session sessionID's, or every session's for 0.
func (s *Sessions) watchedPullRequests(ctx context.Context, sessionID int64) ([]app.WatchedPullRequest, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT p.session_id, p.owner, p.repo, p.number
		FROM pull_requests p JOIN sessions s ON s.id = p.session_id
		WHERE p.state = 'open' AND s.status <> $1 AND ($2 = 0 OR p.session_id = $2)
		ORDER BY p.recorded_at`, int16(domain.StatusArchived), sessionID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (app.WatchedPullRequest, error) {
		var w app.WatchedPullRequest
		err := r.Scan(&w.SessionID, &w.Owner, &w.Repo, &w.Number)
		return w, err
	})
}

// AcceptGitHubDelivery implements app.PullRequestRepository: the delivery
// id is claimed, the open pull requests it names are listed and poke is
// called with them, all in one transaction, so a failed poke leaves the
// delivery unclaimed for GitHub's redelivery, and a claimed one was acted
// on.
func (s *Sessions) AcceptGitHubDelivery(ctx context.Context, deliveryID, event string, at time.Time, prs []rules.PullRequestRef,
	poke func([]app.WatchedPullRequest) error,
) (bool, []app.WatchedPullRequest, error) {
	var (
		fresh   bool
		watched []app.WatchedPullRequest
	)
	err := pgdb.InTx(ctx, s.pool, pgx.ReadCommitted, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO github_deliveries (delivery_id, event, received_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
			deliveryID, event, at)
		if err != nil {
			return fmt.Errorf("claim GitHub delivery %s: %w", deliveryID, err)
		}
		if fresh = tag.RowsAffected() == 1; !fresh {
			return nil
		}
		watched = nil
		for _, pr := range prs {
			rows, err := tx.Query(ctx, `
				SELECT p.session_id, p.owner, p.repo, p.number
				FROM pull_requests p JOIN sessions s ON s.id = p.session_id
				WHERE lower(p.owner) = lower($1) AND lower(p.repo) = lower($2) AND p.number = $3 AND p.state = 'open' AND s.status <> $4`,
				pr.Owner, pr.Repo, pr.Number, int16(domain.StatusArchived))
			if err != nil {
				return fmt.Errorf("find the watchers of %s: %w", pr, err)
			}
			ws, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (app.WatchedPullRequest, error) {
				var w app.WatchedPullRequest
				err := r.Scan(&w.SessionID, &w.Owner, &w.Repo, &w.Number)
				return w, err
			})
			if err != nil {
				return fmt.Errorf("find the watchers of %s: %w", pr, err)
			}
			watched = append(watched, ws...)
		}
		return poke(watched)
	})
	if err != nil {
		return false, nil, err
	}
	return fresh, watched, nil
}

// PruneGitHubDeliveries deletes the record of deliveries taken before
// cutoff (lifecycle-github-deliveries-retention): GitHub redelivers within
// days, and a delivery acted on twice only reads its pull request again.
func (s *Sessions) PruneGitHubDeliveries(ctx context.Context, cutoff time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM github_deliveries WHERE received_at < $1`, cutoff)
	if err != nil {
		return 0, fmt.Errorf("prune GitHub deliveries: %w", err)
	}
	return tag.RowsAffected(), nil
}
