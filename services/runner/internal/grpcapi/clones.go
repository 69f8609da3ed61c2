package grpcapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	runnerv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/runner/v1"
	"github.com/zimmerhq/zimmer/services/platform/principal"
	"github.com/zimmerhq/zimmer/services/platform/validation"
	"github.com/zimmerhq/zimmer/services/runner/internal/workspace"
)

// CloneStore reads the sessions' workspaces (store.Workspaces).
type CloneStore interface {
	Get(ctx context.Context, sessionID int64) (workspace.Workspace, error)
}

// Clones is what GetClone needs: the workspaces, and a logger for what
// fails reading them.
type Clones struct {
	Store  CloneStore
	Logger *slog.Logger
}

// WithClones serves GetClone from c.
func (s *Server) WithClones(c Clones) *Server {
	s.clones = c
	return s
}

// GetClone implements runnerv1.RunnerServiceServer.
func (s *Server) GetClone(ctx context.Context, req *runnerv1.GetCloneRequest) (*runnerv1.GetCloneResponse, error) {
	if s.clones.Store == nil {
		return nil, toStatus(refuse(codes.Unimplemented, "this runner keeps no clones"))
	}
	ref := strings.TrimSpace(req.GetSessionId())
	id, err := strconv.ParseInt(ref, 10, 64)
	if err != nil || id < 1 {
		return nil, toStatus(validation.Invalid("session_id",
			"must be a session's numeric id (the runner does not resolve slugs; lifecycle's GetSession does), got %q", ref))
	}
	if p, ok := principal.FromContext(ctx); ok && !p.MayRead(id) {
		return nil, toStatus(refuse(codes.PermissionDenied,
			"session #%d's credential may read only its own session's clone, not session #%d's; that needs the sessions.read scope or an operator key",
			p.SessionID, id))
	}
	w, err := s.clones.Store.Get(ctx, id)
	switch {
	case errors.Is(err, workspace.ErrNotFound):
		return nil, toStatus(refuse(codes.NotFound, "session %d has no clone: the runner has not made one for it yet", id))
	case err != nil:
		return nil, toStatus(fmt.Errorf("read the clone of session %d: %w", id, err))
	}
	return &runnerv1.GetCloneResponse{Clone: cloneMessage(w)}, nil
}

func cloneMessage(w workspace.Workspace) *runnerv1.Clone {
	a := w.Archive
	m := &runnerv1.Clone{
		SessionId: w.SessionID, Node: w.Node, Path: w.Path, State: string(w.State),
		GitRoot: w.GitRoot, Branch: w.Branch, Subdirectory: w.Subdirectory,
		CheckedOutBranch: w.CheckedOutBranch, BaseCommit: w.BaseCommit, FailureReason: w.FailureReason,
		Note: a.Note, CloneBytes: a.CloneBytes, DroppedDeletions: int32(min(a.DroppedDeletions, 1<<31-1)),
		UpdatedAt: timestamppb.New(w.UpdatedAt),
	}
	if a.TrashAfter != nil {
		m.TrashAfter = timestamppb.New(*a.TrashAfter)
	}
	if art := a.Artifacts; art.Kept() {
		m.Artifacts = &runnerv1.PreservedArtifacts{
			Dir: art.Dir, BundlePath: art.Bundle, BundleBytes: art.BundleBytes, PatchPath: art.Patch, PatchBytes: art.PatchBytes,
			Head: art.Head, HeadBranch: art.Branch,
		}
	}
	return m
}
