package grpcapi_test

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/timestamppb"

	runnerv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/runner/v1"
	"github.com/zimmerhq/zimmer/services/platform/principal"
	"github.com/zimmerhq/zimmer/services/runner/internal/grpcapi"
	"github.com/zimmerhq/zimmer/services/runner/internal/workspace"
	"github.com/zimmerhq/zimmer/services/runner/internal/workspace/workspacetest"
)

func TestGetCloneShowsWhereTheCloneAndItsArtifactsAre(t *testing.T) {
	t.Parallel()
	repo := workspacetest.NewMemory()
	ctx := context.Background()
	deadline := time.Date(2026, 3, 5, 12, 0, 0, 0, time.UTC)
	_, err := repo.Create(ctx, workspace.NewWorkspace(workspace.Spec{SessionID: 7, GitRoot: "/r", Branch: "main"}, "node-a", "/w/7"))
	require.NoError(t, err)
	_, err = repo.Update(ctx, 7, func(w *workspace.Workspace) error { return w.MarkReady(workspace.Checkout{Branch: "main"}) })
	require.NoError(t, err)
	w, err := repo.Update(ctx, 7, func(w *workspace.Workspace) error {
		return w.Preserve(workspace.Artifacts{Dir: "/p/7", Bundle: "/p/7/unpushed.bundle", BundleBytes: 10,
			Patch: "/p/7/working_tree.patch", PatchBytes: 20, Head: "abc", Branch: "main", Tree: "def"}, deadline, "kept in /p/7")
	})
	require.NoError(t, err)
	var log bytes.Buffer
	s := grpcapi.NewServer().WithClones(grpcapi.Clones{Store: repo, Logger: slog.New(slog.NewTextHandler(&log, nil))})

	got, err := s.GetClone(ctx, &runnerv1.GetCloneRequest{SessionId: "7"})
	require.NoError(t, err)
	want := &runnerv1.Clone{
		SessionId: 7, Node: "node-a", Path: "/w/7", State: "preserved", GitRoot: "/r", Branch: "main", CheckedOutBranch: "main",
		TrashAfter: timestamppb.New(deadline), Note: "kept in /p/7", UpdatedAt: timestamppb.New(w.UpdatedAt),
		Artifacts: &runnerv1.PreservedArtifacts{Dir: "/p/7", BundlePath: "/p/7/unpushed.bundle", BundleBytes: 10,
			PatchPath: "/p/7/working_tree.patch", PatchBytes: 20, Head: "abc", HeadBranch: "main"},
	}
	require.Empty(t, cmp.Diff(want, got.GetClone(), protocmp.Transform()))

	_, err = s.GetClone(ctx, &runnerv1.GetCloneRequest{SessionId: "8"})
	require.Equal(t, codes.NotFound, status.Code(err))
	_, err = s.GetClone(ctx, &runnerv1.GetCloneRequest{SessionId: "my-slug"})
	require.Equal(t, codes.InvalidArgument, status.Code(err))

	own := principal.NewContext(ctx, principal.Principal{Kind: principal.Session, SessionID: 7, Scopes: []string{principal.ScopeSelf}})
	_, err = s.GetClone(own, &runnerv1.GetCloneRequest{SessionId: "7"})
	require.NoError(t, err, "a session reads its own clone")
	other := principal.NewContext(ctx, principal.Principal{Kind: principal.Session, SessionID: 9, Scopes: []string{principal.ScopeSelf}})
	_, err = s.GetClone(other, &runnerv1.GetCloneRequest{SessionId: "7"})
	require.Equal(t, codes.PermissionDenied, status.Code(err))
}
