package app_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lineage/internal/app"
	"github.com/zimmerhq/zimmer/services/lineage/internal/app/apptest"
	"github.com/zimmerhq/zimmer/services/lineage/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

type testBundle struct {
	apply app.ApplySessionEvent
	get   app.GetSessionNode
}

func setup(t *testing.T) testBundle {
	t.Helper()
	repo := apptest.NewNodes()
	return testBundle{apply: app.NewApplySessionEvent(repo), get: app.NewGetSessionNode(repo)}
}

const eventID = "6f1c2a52-8b0e-4d8e-9a57-3c9f0d2b7e10"

func created(id int64, parent *int64) app.SessionEvent {
	return app.SessionEvent{ID: eventID, SessionID: id, Created: &domain.Node{
		SessionID: id, Title: "t", Status: "waiting", ParentSessionID: parent, UpdatedAt: time.Unix(100, 0),
	}}
}

func TestApplySessionEventRedeliveryAppliesOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()

	applied, err := b.apply.Handle(ctx, created(5, nil))
	require.NoError(t, err)
	require.True(t, applied)

	// The redelivery carries a different snapshot to show it is not applied.
	again := created(5, nil)
	again.Created.Title = "changed"
	again.Created.UpdatedAt = time.Unix(200, 0)
	applied, err = b.apply.Handle(ctx, again)
	require.NoError(t, err)
	require.False(t, applied)

	n, err := b.get.Handle(ctx, 5)
	require.NoError(t, err)
	require.Equal(t, "t", n.Title)
}

func TestApplySessionEventValidation(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name  string
		event func() app.SessionEvent
		field string
	}{
		{"no event id", func() app.SessionEvent { e := created(5, nil); e.ID = ""; return e }, "event.event_id"},
		{"event id not a UUID", func() app.SessionEvent { e := created(5, nil); e.ID = "evt-1"; return e }, "event.event_id"},
		{"no payload", func() app.SessionEvent { e := created(5, nil); e.Created = nil; return e }, "event.payload"},
		{"session without id", func() app.SessionEvent { return created(0, nil) }, "event.created.session.id"},
		{"session spawned itself", func() app.SessionEvent { p := int64(5); return created(5, &p) }, "event.created.session.parent_session_id"},
		{"event for another session", func() app.SessionEvent { e := created(5, nil); e.SessionID = 6; return e }, "event.session_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			applied, err := b.apply.Handle(t.Context(), tt.event())
			var ve *validation.Error
			require.ErrorAs(t, err, &ve)
			require.Len(t, ve.Violations, 1)
			require.Equal(t, tt.field, ve.Violations[0].Field)
			require.False(t, applied)
		})
	}
}

func TestGetSessionNode(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()

	parent := int64(1)
	for i, e := range []app.SessionEvent{created(1, nil), created(3, &parent), created(2, &parent)} {
		e.ID = []string{
			"00000000-0000-4000-8000-000000000001",
			"00000000-0000-4000-8000-000000000002",
			"00000000-0000-4000-8000-000000000003",
		}[i]
		_, err := b.apply.Handle(ctx, e)
		require.NoError(t, err)
	}

	n, err := b.get.Handle(ctx, 1)
	require.NoError(t, err)
	require.Nil(t, n.SpawnParentID())
	require.Equal(t, []int64{2, 3}, n.SpawnChildIDs)
	n, err = b.get.Handle(ctx, 3)
	require.NoError(t, err)
	require.Equal(t, &parent, n.SpawnParentID())
	require.Empty(t, n.SpawnChildIDs)

	_, err = b.get.Handle(ctx, 9)
	require.ErrorIs(t, err, domain.ErrNotFound)
	require.EqualError(t, err, "session 9 is not known to lineage yet")

	_, err = b.get.Handle(ctx, 0)
	var ve *validation.Error
	require.ErrorAs(t, err, &ve)
}

func TestApplySessionEventUpdatedAndDeleted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	ids := []string{
		"00000000-0000-4000-8000-000000000011", "00000000-0000-4000-8000-000000000012",
		"00000000-0000-4000-8000-000000000013", "00000000-0000-4000-8000-000000000014",
	}
	_, err := b.apply.Handle(ctx, created(5, nil))
	require.NoError(t, err)

	upd := created(5, nil)
	upd.ID, upd.Updated, upd.Created = ids[0], upd.Created, nil
	upd.Updated.Title, upd.Updated.UpdatedAt = "newer", time.Unix(300, 0)
	applied, err := b.apply.Handle(ctx, upd)
	require.NoError(t, err)
	require.True(t, applied)
	n, err := b.get.Handle(ctx, 5)
	require.NoError(t, err)
	require.Equal(t, "newer", n.Title)

	applied, err = b.apply.Handle(ctx, app.SessionEvent{ID: ids[1], SessionID: 5, Deleted: true})
	require.NoError(t, err)
	require.True(t, applied)
	_, err = b.get.Handle(ctx, 5)
	require.ErrorIs(t, err, domain.ErrNotFound)

	late := created(5, nil)
	late.ID, late.Updated, late.Created = ids[2], late.Created, nil
	late.Updated.UpdatedAt = time.Unix(900, 0)
	_, err = b.apply.Handle(ctx, late)
	require.NoError(t, err)
	_, err = b.get.Handle(ctx, 5)
	require.ErrorIs(t, err, domain.ErrNotFound, "deletion is final")

	_, err = b.apply.Handle(ctx, app.SessionEvent{ID: ids[3], Deleted: true})
	var ve *validation.Error
	require.ErrorAs(t, err, &ve)
	require.Len(t, ve.Violations, 1)
	require.Equal(t, "event.deleted.session_id", ve.Violations[0].Field)
}
