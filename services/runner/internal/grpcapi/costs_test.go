package grpcapi_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	runnerv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/runner/v1"
	"github.com/zimmerhq/zimmer/services/runner/internal/domain"
	"github.com/zimmerhq/zimmer/services/runner/internal/grpcapi"
)

type fakeCostStore struct{ asked []domain.CostQuery }

func (f *fakeCostStore) Record(context.Context, time.Time, ...domain.CostEntry) error { return nil }
func (f *fakeCostStore) Report(_ context.Context, q domain.CostQuery) (domain.CostReport, error) {
	f.asked = append(f.asked, q)
	return domain.CostReport{Query: q}, nil
}

// slugs is lifecycle as costs ask it: "router" is session 12.
type slugs struct{}

func (slugs) SessionID(_ context.Context, ref string) (int64, error) {
	switch ref {
	case "router":
		return 12, nil
	case "Bad Slug":
		return 0, status.Error(codes.InvalidArgument, "session_id: not a slug")
	}
	return 0, status.Error(codes.NotFound, "session not found")
}

// A session_id that is a slug is resolved through lifecycle, as every
// surface takes one; an unknown one is NotFound and a malformed one names
// the field. Without lifecycle (a runner that is no node) only ids are
// taken.
func TestGetCostsResolvesASlug(t *testing.T) {
	t.Parallel()
	store := &fakeCostStore{}
	now := func() time.Time { return time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC) }
	s := grpcapi.NewServer().WithCosts(grpcapi.Costs{Store: store, Now: now}).WithCostSessions(slugs{})
	ctx := context.Background()

	_, err := s.GetCosts(ctx, &runnerv1.GetCostsRequest{SessionId: "router"})
	require.NoError(t, err)
	_, err = s.GetCosts(ctx, &runnerv1.GetCostsRequest{SessionId: "12"})
	require.NoError(t, err)
	require.Equal(t, []int64{12, 12}, []int64{store.asked[0].SessionID, store.asked[1].SessionID})

	_, err = s.GetCosts(ctx, &runnerv1.GetCostsRequest{SessionId: "nobody"})
	require.Equal(t, codes.NotFound, status.Code(err))
	require.ErrorContains(t, err, `session_id "nobody" names no session`)
	_, err = s.GetCosts(ctx, &runnerv1.GetCostsRequest{SessionId: "Bad Slug"})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	require.ErrorContains(t, err, `must be a session's numeric id or slug, got "Bad Slug"`)

	bare := grpcapi.NewServer().WithCosts(grpcapi.Costs{Store: store, Now: now})
	_, err = bare.GetCosts(ctx, &runnerv1.GetCostsRequest{SessionId: "router"})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	require.Len(t, store.asked, 2, "nothing refused reached the store")
}
