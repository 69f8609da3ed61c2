package domain_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

func ptr[T any](v T) *T { return &v }

func valid() domain.NewSession {
	return domain.NewSession{Prompt: "fix the flaky test", GitRoot: "git@example.com:acme/app.git"}
}

func TestNewSessionValidate(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name   string
		edit   func(*domain.NewSession)
		fields []string // the fields named, in order; none means valid
	}{
		{name: "minimal", edit: func(*domain.NewSession) {}},
		// prompt is optional (issue 9, item 9): a session can be created to
		// clone and wait for its first message. It used to be required.
		{name: "no prompt", edit: func(n *domain.NewSession) { n.Prompt = "" }},
		// A blank prompt is no prompt to run (issue 20, item 3): refused,
		// where leaving it out is a session that waits.
		{name: "blank prompt", edit: func(n *domain.NewSession) { n.Prompt = " \n\t" }, fields: []string{"prompt"}},
		{name: "missing git_root", edit: func(n *domain.NewSession) { n.GitRoot = "" }, fields: []string{"git_root"}},
		{name: "blank git_root", edit: func(n *domain.NewSession) { n.GitRoot = " \t\n " }, fields: []string{"git_root"}},
		{name: "prompt at the limit", edit: func(n *domain.NewSession) { n.Prompt = strings.Repeat("é", domain.MaxPromptChars) }},
		{name: "prompt over the limit", edit: func(n *domain.NewSession) { n.Prompt = strings.Repeat("a", domain.MaxPromptChars+1) }, fields: []string{"prompt"}},
		{name: "goal over the limit", edit: func(n *domain.NewSession) { n.Goal = strings.Repeat("a", domain.MaxGoalChars+1) }, fields: []string{"goal"}},
		{name: "good slug", edit: func(n *domain.NewSession) { n.Slug = "fix-ci-2" }},
		{name: "numeric slug", edit: func(n *domain.NewSession) { n.Slug = "123" }, fields: []string{"slug"}},
		{name: "uppercase slug", edit: func(n *domain.NewSession) { n.Slug = "Fix" }, fields: []string{"slug"}},
		{name: "non-positive parent", edit: func(n *domain.NewSession) { n.ParentSessionID = ptr(int64(0)) }, fields: []string{"parent_session_id"}},
		{name: "unknown scheduling class", edit: func(n *domain.NewSession) { n.SchedulingClass = "urgent" }, fields: []string{"scheduling_class"}},
		{name: "spot", edit: func(n *domain.NewSession) { n.SchedulingClass = domain.SchedulingSpot }},
		// Issue 20 item 9: what the clone and the agent are made from is
		// refused at create, naming the field, not when the clone fails.
		{name: "a branch and a subdirectory", edit: func(n *domain.NewSession) { n.Branch, n.Subdirectory = "release/1.2", "services/api" }},
		{name: "each known runtime", edit: func(n *domain.NewSession) { n.AgentRuntime = "claude_code" }},
		{name: "branch as an option", edit: func(n *domain.NewSession) { n.Branch = "--upload-pack=touch /tmp/owned" }, fields: []string{"branch"}},
		{name: "branch with ..", edit: func(n *domain.NewSession) { n.Branch = "a..b" }, fields: []string{"branch"}},
		{name: "branch ending in .lock", edit: func(n *domain.NewSession) { n.Branch = "topic/x.lock" }, fields: []string{"branch"}},
		{name: "git_root as an option", edit: func(n *domain.NewSession) { n.GitRoot = "-c core.sshCommand=touch /tmp/owned" }, fields: []string{"git_root"}},
		{name: "git_root over ext::", edit: func(n *domain.NewSession) { n.GitRoot = "ext::sh -c touch% /tmp/owned" }, fields: []string{"git_root"}},
		{name: "subdirectory out of the clone", edit: func(n *domain.NewSession) { n.Subdirectory = "../../.." }, fields: []string{"subdirectory"}},
		{name: "subdirectory that leaves on the way", edit: func(n *domain.NewSession) { n.Subdirectory = "a/../../b" }, fields: []string{"subdirectory"}},
		{name: "absolute subdirectory", edit: func(n *domain.NewSession) { n.Subdirectory = "/etc" }, fields: []string{"subdirectory"}},
		{name: "subdirectory in .git", edit: func(n *domain.NewSession) { n.Subdirectory = ".git/hooks" }, fields: []string{"subdirectory"}},
		{name: "unknown runtime", edit: func(n *domain.NewSession) { n.AgentRuntime = "../../bin/sh" }, fields: []string{"agent_runtime"}},
		{name: "every bad source field at once", edit: func(n *domain.NewSession) {
			n.GitRoot, n.Branch, n.Subdirectory, n.AgentRuntime = "--x", "-b", "..", "sh"
		}, fields: []string{"git_root", "branch", "subdirectory", "agent_runtime"}},
		{name: "metadata too large", edit: func(n *domain.NewSession) {
			n.CustomMetadata = map[string]any{"k": strings.Repeat("a", domain.MaxMetadataBytes)}
		}, fields: []string{"custom_metadata"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			n := valid()
			tt.edit(&n)
			err := n.Validate()
			if len(tt.fields) == 0 {
				require.NoError(t, err)
				return
			}
			var verr *validation.Error
			require.ErrorAs(t, err, &verr)
			var got []string
			for _, v := range verr.Violations {
				got = append(got, v.Field)
				require.Contains(t, err.Error(), v.Field+": ", "the message names the field")
			}
			require.Empty(t, cmp.Diff(tt.fields, got), "(-want +got)")
		})
	}
}

func TestBuildInheritsGenesisAndDefaults(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

	root, err := valid().Build(nil, now)
	require.NoError(t, err)
	require.Equal(t, domain.GenesisAPI, root.Genesis)
	require.Equal(t, domain.StatusWaiting, root.Status)
	require.Equal(t, domain.SchedulingPriority, root.SchedulingClass)
	require.NotNil(t, root.CustomMetadata)
	require.Equal(t, now, root.CreatedAt)
	require.False(t, root.PushNotifications, "not pushed unless the operator opts in (issue 23 rule 8)")
	on := valid()
	on.PushNotifications = ptr(true)
	pushed, err := on.Build(nil, now)
	require.NoError(t, err)
	require.True(t, pushed.PushNotifications)

	parent := domain.Session{ID: 7, Genesis: "web_ui", SchedulingClass: domain.SchedulingSpot}
	n := valid()
	n.ParentSessionID = ptr(int64(7))
	child, err := n.Build(&parent, now)
	require.NoError(t, err)
	require.Equal(t, "web_ui", child.Genesis, "genesis comes down the spawn edge")
	require.Equal(t, domain.SchedulingSpot, child.SchedulingClass, "so does a scheduling class not given")
	n.SchedulingClass = domain.SchedulingPriority
	child, err = n.Build(&parent, now)
	require.NoError(t, err)
	require.Equal(t, domain.SchedulingPriority, child.SchedulingClass, "one given is kept")
	n.SchedulingClass = ""

	_, err = n.Build(nil, now)
	var verr *validation.Error
	require.ErrorAs(t, err, &verr, "a parent that does not exist is the caller's error")
	require.Equal(t, "parent_session_id", verr.Violations[0].Field)
	require.Contains(t, err.Error(), "no session 7 exists")
}

func TestParseSessionRef(t *testing.T) {
	t.Parallel()

	ref, err := domain.ParseSessionRef("42")
	require.NoError(t, err)
	require.Equal(t, domain.SessionRef{ID: 42}, ref)
	ref, err = domain.ParseSessionRef("fix-ci")
	require.NoError(t, err)
	require.Equal(t, domain.SessionRef{Slug: "fix-ci"}, ref)
	for _, bad := range []string{"", "0", "99999999999999999999"} {
		_, err := domain.ParseSessionRef(bad)
		require.Error(t, err, bad)
	}
	require.True(t, errors.Is(&domain.NotFoundError{Ref: ref}, domain.ErrNotFound))
}

func TestStatusWordsAndIntegers(t *testing.T) {
	t.Parallel()

	want := map[string]int16{"running": 0, "waiting": 1, "needs_input": 2, "archived": 3, "failed": 4}
	for word, code := range want {
		s, err := domain.ParseStatus(word)
		require.NoError(t, err)
		require.Equal(t, code, int16(s), "the integers are load-bearing")
		require.Equal(t, word, s.String())
	}
	require.Len(t, domain.Statuses, len(want))
	_, err := domain.ParseStatus("paused")
	require.ErrorContains(t, err, "use one of waiting, running, needs_input, failed, archived")
}

func TestListRequestFilter(t *testing.T) {
	t.Parallel()

	f, err := domain.ListRequest{}.Filter()
	require.NoError(t, err)
	require.Equal(t, []domain.Status{domain.StatusWaiting, domain.StatusRunning, domain.StatusNeedsInput, domain.StatusFailed}, f.Statuses,
		"none means every status but archived")
	f, err = domain.ListRequest{ShowArchived: true}.Filter()
	require.NoError(t, err)
	require.Empty(t, f.Statuses, "none with show_archived means every status")
	require.Equal(t, 1, f.Page)
	require.Equal(t, domain.DefaultPerPage, f.PerPage)

	f, err = domain.ListRequest{Statuses: []string{"waiting", "running", "waiting"}}.Filter()
	require.NoError(t, err)
	require.Equal(t, []domain.Status{domain.StatusWaiting, domain.StatusRunning}, f.Statuses)

	_, err = domain.ListRequest{Statuses: []string{"nope"}, Page: -1, PerPage: 1000, SchedulingClass: "x"}.Filter()
	var verr *validation.Error
	require.ErrorAs(t, err, &verr)
	require.Len(t, verr.Violations, 3, "per_page is clamped, not refused")

	require.Equal(t, 3, domain.Page{TotalCount: 51, PerPage: 25}.TotalPages())
	require.Equal(t, 0, domain.Page{TotalCount: 0, PerPage: 25}.TotalPages())
}

func TestPatchValidateAndApply(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	before := domain.Session{ID: 1, Title: "Old", Notes: "old notes", Goal: "g", CustomMetadata: map[string]any{}, PushNotifications: true}

	tests := []struct {
		name   string
		patch  domain.Patch
		fields []string // the fields a refusal names; none means valid
		want   func(*domain.Session)
		note   string
	}{
		{name: "empty", patch: domain.Patch{}, fields: []string{"body"}},
		{name: "notes at the limit", patch: domain.Patch{Notes: ptr(strings.Repeat("é", domain.MaxNotesChars))},
			want: func(s *domain.Session) { s.Notes = strings.Repeat("é", domain.MaxNotesChars) }, note: "[Session] updated notes"},
		{name: "notes over the limit", patch: domain.Patch{Notes: ptr(strings.Repeat("a", domain.MaxNotesChars+1))}, fields: []string{"notes"}},
		{name: "notes cleared", patch: domain.Patch{Notes: ptr("")},
			want: func(s *domain.Session) { s.Notes = "" }, note: "[Session] updated notes"},
		{name: "title and notes", patch: domain.Patch{Title: ptr("New"), Notes: ptr("n")},
			want: func(s *domain.Session) { s.Title, s.Notes = "New", "n" }, note: "[Session] updated title, notes"},
		{name: "same notes", patch: domain.Patch{Notes: ptr("old notes")},
			want: func(*domain.Session) {}, note: "[Session] update changed nothing"},
		{name: "push notifications off", patch: domain.Patch{PushNotifications: ptr(false)},
			want: func(s *domain.Session) { s.PushNotifications = false }, note: "[Session] updated push_notifications"},
		{name: "push notifications already on", patch: domain.Patch{PushNotifications: ptr(true)},
			want: func(*domain.Session) {}, note: "[Session] update changed nothing"},
		{name: "heartbeat out of range", patch: domain.Patch{HeartbeatIntervalSeconds: ptr(int32(29))}, fields: []string{"heartbeat_interval_seconds"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.patch.Validate()
			if len(tt.fields) > 0 {
				var verr *validation.Error
				require.ErrorAs(t, err, &verr)
				var got []string
				for _, v := range verr.Violations {
					got = append(got, v.Field)
				}
				require.Empty(t, cmp.Diff(tt.fields, got), "(-want +got)")
				return
			}
			require.NoError(t, err)
			got, note, err := tt.patch.Apply(before, now, "")
			require.NoError(t, err)
			want := before
			tt.want(&want)
			want.UpdatedAt = now
			require.Empty(t, cmp.Diff(want, got), "(-want +got)")
			require.Equal(t, domain.TimelineEntry{Kind: domain.TimelineNote, Message: tt.note}, note)
		})
	}
}
