package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/app"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/events"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/store"
	"github.com/zimmerhq/zimmer/services/platform/clock"
	"github.com/zimmerhq/zimmer/services/platform/inbox"
	"github.com/zimmerhq/zimmer/services/platform/outbox"
	"github.com/zimmerhq/zimmer/services/platform/pgtest"
	"github.com/zimmerhq/zimmer/services/platform/slogx"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

func categoriesSetup(t *testing.T) (app.Categories, app.Inference, app.Sessions) {
	t.Helper()
	pool := pgtest.DB(t, inbox.Migrations, outbox.Migrations, store.Migrations)
	repo := store.NewSessions(pool, events.Codec{}, nil, slogx.Discard())
	now := clock.NewStub(time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC))
	return app.Categories{Repo: repo, Clock: now}, app.Inference{Sessions: repo, Categories: repo, Clock: now},
		app.NewSessions(repo, now, app.DefaultTrashRetention)
}

func positions(t *testing.T, c app.Categories) []string {
	t.Helper()
	got, err := c.List(context.Background())
	require.NoError(t, err)
	var out []string
	for i, cat := range got {
		require.EqualValues(t, i+1, cat.Position, "positions stay dense: %v", got)
		out = append(out, cat.Name)
	}
	return out
}

// Concurrent creates keep the positions dense and the names unique; a
// refused change writes nothing.
func TestCategoriesStayDenseAndUnique(t *testing.T) {
	t.Parallel()
	cats, _, _ := categoriesSetup(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, 12)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			one := int32(1)
			_, errs[i] = cats.Create(ctx, domain.NewCategory{Name: fmt.Sprintf("c%02d", i), Position: &one})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	require.Len(t, positions(t, cats), 12)

	_, err := cats.Create(ctx, domain.NewCategory{Name: "C01"})
	var verr *validation.Error
	require.ErrorAs(t, err, &verr)
	require.ErrorContains(t, err, "a category named")
	list, err := cats.List(ctx)
	require.NoError(t, err)
	first := list[0]
	name, to := list[1].Name, int32(12)
	_, err = cats.Update(ctx, first.ID, domain.CategoryPatch{Name: &name, Position: &to})
	require.ErrorAs(t, err, &verr, "a clash is the caller's mistake")
	again, err := cats.List(ctx)
	require.NoError(t, err)
	require.Equal(t, list, again, "the refused update neither renamed nor moved anything")

	require.NoError(t, cats.Delete(ctx, list[5].ID))
	require.Len(t, positions(t, cats), 11)
	_, err = cats.Update(ctx, 999_999, domain.CategoryPatch{Name: &name})
	require.ErrorIs(t, err, domain.ErrNotFound)
}

// RecordInference sets only what is unset, under the session's lock; a
// category deleted since it was offered is refused, naming it.
func TestRecordInferenceNeverOverwrites(t *testing.T) {
	t.Parallel()
	cats, infer, sessions := categoriesSetup(t)
	ctx := context.Background()
	docs, err := cats.Create(ctx, domain.NewCategory{Name: "Docs"})
	require.NoError(t, err)
	gone, err := cats.Create(ctx, domain.NewCategory{Name: "Gone"})
	require.NoError(t, err)
	s, err := sessions.Create.Handle(ctx, domain.NewSession{Prompt: "write the docs", GitRoot: "g", Title: "Mine"})
	require.NoError(t, err)

	p, err := infer.Pending(ctx, s.ID)
	require.NoError(t, err)
	require.False(t, p.Title)
	require.True(t, p.Category)

	rec, err := infer.Record(ctx, s.ID, "Write the docs", &docs.ID, "the runner")
	require.NoError(t, err)
	require.False(t, rec.TitleSet)
	require.True(t, rec.CategorySet)
	require.Equal(t, "Mine", rec.Session.Title)

	rec, err = infer.Record(ctx, s.ID, "Other", &gone.ID, "the runner")
	require.NoError(t, err)
	require.False(t, rec.CategorySet, "a category once set stays")

	require.NoError(t, cats.Delete(ctx, gone.ID))
	other, err := sessions.Create.Handle(ctx, domain.NewSession{Prompt: "p", GitRoot: "g"})
	require.NoError(t, err)
	_, err = infer.Record(ctx, other.ID, "T", &gone.ID, "the runner")
	require.ErrorContains(t, err, fmt.Sprintf("no category %d exists", gone.ID))
	got, err := sessions.Get.Handle(ctx, fmt.Sprint(other.ID))
	require.NoError(t, err)
	require.Empty(t, got.Title, "a refused record writes nothing")
}
