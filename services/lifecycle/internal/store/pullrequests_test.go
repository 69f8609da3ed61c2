package store_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/app"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/events"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/store"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/slogx"
)

// fakeWatcher records the watches started and poked.
type fakeWatcher struct {
	started, poked []app.WatchedPullRequest
	pokeErr        error
}

func (f *fakeWatcher) Watch(_ context.Context, w app.WatchedPullRequest) error {
	f.started = append(f.started, w)
	return nil
}

func (f *fakeWatcher) Poke(_ context.Context, w app.WatchedPullRequest) error {
	if f.pokeErr != nil {
		return f.pokeErr
	}
	f.poked = append(f.poked, w)
	return nil
}

// A recorded pull request is read with its session, once however often it
// is recorded, and starts its watch; the archive line and the PR warning
// read it; an archived session records nothing more.
func TestPullRequestsAreRecordedOnTheSession(t *testing.T) {
	t.Parallel()
	b := trigSetup(t)
	ctx := context.Background()
	repo := store.NewSessions(b.pool, events.Codec{}, nil, slogx.Discard())
	w := &fakeWatcher{}
	record := app.RecordPullRequest{Repo: repo, Watcher: w, Clock: b.clock}
	s := b.sessionIn(t, domain.StatusRunning)

	pr, recorded, err := record.Handle(ctx, s.ID, "turn-1", "https://github.com/acme/app/pull/7")
	require.NoError(t, err)
	require.True(t, recorded)
	require.Equal(t, "acme/app#7", pr.String())
	_, recorded, err = record.Handle(ctx, s.ID, "turn-2", "https://github.com/acme/app/pull/7")
	require.NoError(t, err)
	require.False(t, recorded, "a second record is a no-op")
	require.Len(t, w.started, 2, "the watch is asked to start each time (idempotent there)")

	_, _, err = record.Handle(ctx, s.ID, "", "see https://github.com/acme/app/pull/8")
	require.ErrorContains(t, err, "is not a GitHub pull request address")
	_, _, err = record.Handle(ctx, 999999, "", "https://github.com/acme/app/pull/8")
	require.ErrorIs(t, err, domain.ErrNotFound)

	got, err := b.sessions.Get.Handle(ctx, strconv.FormatInt(s.ID, 10))
	require.NoError(t, err)
	require.Equal(t, []domain.PullRequest{{PullRequestRef: rules.PullRequestRef{Owner: "acme", Repo: "app", Number: 7}, State: domain.PullRequestOpen}},
		got.PullRequests)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM session_timeline WHERE session_id = $1 AND message LIKE '[GitHub] tracking pull request%'`, s.ID))

	watched, err := repo.WatchedPullRequests(ctx)
	require.NoError(t, err)
	require.Len(t, watched, 1)

	_, err = b.sessions.Transition.Fire(ctx, strconv.FormatInt(s.ID, 10), string(domain.EventArchive), domain.Command{})
	require.NoError(t, err)
	var lines []string
	rows, err := b.pool.Query(ctx, `SELECT message FROM session_timeline WHERE session_id = $1 AND kind = 'transition'`, s.ID)
	require.NoError(t, err)
	for rows.Next() {
		var m string
		require.NoError(t, rows.Scan(&m))
		lines = append(lines, m)
	}
	require.Contains(t, strings.Join(lines, "\n"), "1 tracked pull request had not reached a terminal state, so no merge notification will be delivered for it: https://github.com/acme/app/pull/7",
		"the archive line reads the recorded PR under the session's lock")
	_, _, err = record.Handle(ctx, s.ID, "", "https://github.com/acme/app/pull/9")
	require.ErrorIs(t, err, domain.ErrPrecondition)
	watched, err = repo.WatchedPullRequests(ctx)
	require.NoError(t, err)
	require.Empty(t, watched, "an archived session's PRs are watched no more")
	watched, err = repo.WatchedPullRequestsOf(ctx, s.ID)
	require.NoError(t, err)
	require.Empty(t, watched)

	// The unarchive's watches (LC-39): the session's open PRs, its own only.
	_, err = b.sessions.Transition.Handle(ctx, strconv.FormatInt(s.ID, 10), app.VerbUnarchive, domain.Command{})
	require.NoError(t, err)
	watched, err = repo.WatchedPullRequestsOf(ctx, s.ID)
	require.NoError(t, err)
	require.Equal(t, []app.WatchedPullRequest{{SessionID: s.ID, PullRequestRef: rules.PullRequestRef{Owner: "acme", Repo: "app", Number: 7}}}, watched)
	watched, err = repo.WatchedPullRequestsOf(ctx, s.ID+1000)
	require.NoError(t, err)
	require.Empty(t, watched)
}

// A delivery is claimed once; a poke that fails leaves it unclaimed, so
// GitHub's redelivery is acted on.
func TestAGitHubDeliveryIsTakenOnce(t *testing.T) {
	t.Parallel()
	b := trigSetup(t)
	ctx := context.Background()
	repo := store.NewSessions(b.pool, events.Codec{}, nil, slogx.Discard())
	w := &fakeWatcher{}
	s := b.sessionIn(t, domain.StatusRunning)
	_, _, err := app.RecordPullRequest{Repo: repo, Watcher: w, Clock: b.clock}.Handle(ctx, s.ID, "", "https://github.com/Acme/App/pull/7")
	require.NoError(t, err)
	accept := app.AcceptGitHubDelivery{Repo: repo, Watcher: w, Clock: b.clock}
	payload := []byte(`{"action":"closed","pull_request":{"number":7},"repository":{"full_name":"acme/app"}}`)

	w.pokeErr = errors.New("temporal is down")
	_, err = accept.Handle(ctx, "d-1", "pull_request", payload)
	require.ErrorIs(t, err, domain.ErrUnavailable)
	require.Zero(t, b.count(t, `SELECT count(*) FROM github_deliveries`), "nothing claimed")

	w.pokeErr = nil
	out, err := accept.Handle(ctx, "d-1", "pull_request", payload)
	require.NoError(t, err)
	require.Equal(t, app.GitHubDeliveryOutcome{Poked: 1}, out, "names are matched without case")
	require.Equal(t, s.ID, w.poked[0].SessionID)

	out, err = accept.Handle(ctx, "d-1", "pull_request", payload)
	require.NoError(t, err)
	require.True(t, out.Duplicate)
	require.Len(t, w.poked, 1)

	out, err = accept.Handle(ctx, "d-2", "star", []byte(`{}`))
	require.NoError(t, err)
	require.Contains(t, out.Ignored, "not one Zimmer acts on")
	out, err = accept.Handle(ctx, "d-3", "pull_request", []byte(`{"pull_request":{"number":8},"repository":{"full_name":"acme/app"}}`))
	require.NoError(t, err)
	require.Contains(t, out.Ignored, "no session watches")

	_, err = accept.Handle(ctx, "d-4", "pull_request", []byte(`{`))
	require.ErrorContains(t, err, "not JSON")
}

// A watch's state round-trips, and its PR's state reaches the session.
func TestAPullRequestWatchIsSaved(t *testing.T) {
	t.Parallel()
	b := trigSetup(t)
	ctx := context.Background()
	repo := store.NewSessions(b.pool, events.Codec{}, nil, slogx.Discard())
	s := b.sessionIn(t, domain.StatusNeedsInput)
	ref := rules.PullRequestRef{Owner: "acme", Repo: "app", Number: 7}
	_, _, err := app.RecordPullRequest{Repo: repo, Clock: b.clock}.Handle(ctx, s.ID, "", ref.URL())
	require.NoError(t, err)
	w, err := repo.PullRequestWatch(ctx, s.ID, ref)
	require.NoError(t, err)
	require.Equal(t, domain.PullRequestOpen, w.State)
	w.State, w.MergedNotified, w.InConflict, w.Conflicts, w.CommentsSeen, w.IssueCommentsSeen, w.ChecksSeen =
		domain.PullRequestMerged, true, true, 2, 501, 77, []int64{9, 10}
	require.NoError(t, repo.SavePullRequestWatch(ctx, w, b.clock.Now()))
	got, err := repo.PullRequestWatch(ctx, s.ID, ref)
	require.NoError(t, err)
	require.Equal(t, w, got)
	sess, err := b.sessions.Get.Handle(ctx, strconv.FormatInt(s.ID, 10))
	require.NoError(t, err)
	require.Equal(t, domain.PullRequestMerged, sess.PullRequests[0].State)
	_, err = repo.PullRequestWatch(ctx, s.ID, rules.PullRequestRef{Owner: "acme", Repo: "app", Number: 8})
	require.ErrorIs(t, err, domain.ErrNotFound)
}
