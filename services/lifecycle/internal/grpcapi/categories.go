package grpcapi

import (
	"context"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/app"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/wire"
)

// WithCategories serves the categories, stars and the runner's inference
// over c and in.
func (s *Server) WithCategories(c app.Categories, in app.Inference) *Server {
	s.categories, s.inference = c, in
	return s
}

// ListCategories implements lifecyclev1.LifecycleServiceServer.
func (s *Server) ListCategories(ctx context.Context, _ *lifecyclev1.ListCategoriesRequest) (*lifecyclev1.ListCategoriesResponse, error) {
	cats, err := s.categories.List(ctx)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &lifecyclev1.ListCategoriesResponse{Categories: wire.Categories(cats)}, nil
}

// CreateCategory implements lifecyclev1.LifecycleServiceServer.
func (s *Server) CreateCategory(ctx context.Context, req *lifecyclev1.CreateCategoryRequest) (*lifecyclev1.CreateCategoryResponse, error) {
	c, err := s.categories.Create(ctx, domain.NewCategory{Name: req.GetName(), Position: req.Position, Frozen: req.GetFrozen()})
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &lifecyclev1.CreateCategoryResponse{Category: wire.Category(c)}, nil
}

// UpdateCategory implements lifecyclev1.LifecycleServiceServer.
func (s *Server) UpdateCategory(ctx context.Context, req *lifecyclev1.UpdateCategoryRequest) (*lifecyclev1.UpdateCategoryResponse, error) {
	c, err := s.categories.Update(ctx, req.GetCategoryId(),
		domain.CategoryPatch{Name: req.Name, Position: req.Position, Frozen: req.Frozen})
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &lifecyclev1.UpdateCategoryResponse{Category: wire.Category(c)}, nil
}

// DeleteCategory implements lifecyclev1.LifecycleServiceServer.
func (s *Server) DeleteCategory(ctx context.Context, req *lifecyclev1.DeleteCategoryRequest) (*lifecyclev1.DeleteCategoryResponse, error) {
	if err := s.categories.Delete(ctx, req.GetCategoryId()); err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &lifecyclev1.DeleteCategoryResponse{}, nil
}

// StarSession implements lifecyclev1.LifecycleServiceServer.
func (s *Server) StarSession(ctx context.Context, req *lifecyclev1.StarSessionRequest) (*lifecyclev1.StarSessionResponse, error) {
	starred := true
	sess, err := s.update(ctx, req.GetSessionId(), domain.Patch{Starred: &starred})
	if err != nil {
		return nil, err
	}
	return &lifecyclev1.StarSessionResponse{Session: sess}, nil
}

// UnstarSession implements lifecyclev1.LifecycleServiceServer.
func (s *Server) UnstarSession(ctx context.Context, req *lifecyclev1.UnstarSessionRequest) (*lifecyclev1.UnstarSessionResponse, error) {
	starred := false
	sess, err := s.update(ctx, req.GetSessionId(), domain.Patch{Starred: &starred})
	if err != nil {
		return nil, err
	}
	return &lifecyclev1.UnstarSessionResponse{Session: sess}, nil
}

// GetPendingInference implements lifecyclev1.LifecycleServiceServer:
// internal, the runner's inference.
func (s *Server) GetPendingInference(ctx context.Context, req *lifecyclev1.GetPendingInferenceRequest) (*lifecyclev1.GetPendingInferenceResponse, error) {
	p, err := s.inference.Pending(ctx, req.GetSessionId())
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &lifecyclev1.GetPendingInferenceResponse{
		Title: p.Title, Category: p.Category, Prompt: p.Session.Prompt, Goal: p.Session.Goal,
		Categories: wire.Categories(p.Choices), AgentRuntime: p.Session.AgentRuntime,
	}, nil
}

// RecordInference implements lifecyclev1.LifecycleServiceServer: internal,
// the runner's inference.
func (s *Server) RecordInference(ctx context.Context, req *lifecyclev1.RecordInferenceRequest) (*lifecyclev1.RecordInferenceResponse, error) {
	rec, err := s.inference.Record(ctx, req.GetSessionId(), req.GetTitle(), req.CategoryId, auditBy(ctx))
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	msg, err := wire.Session(rec.Session)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &lifecyclev1.RecordInferenceResponse{Session: msg, TitleSet: rec.TitleSet, CategorySet: rec.CategorySet}, nil
}
