package app

import (
	"context"
	"fmt"

	"github.com/zimmerhq/zimmer/services/lineage/internal/domain"
)

// ListUsers reads the roster.
type ListUsers struct{ repo UserRepository }

// NewListUsers returns the use case over repo.
func NewListUsers(repo UserRepository) ListUsers { return ListUsers{repo: repo} }

// Handle returns every user in key order.
func (uc ListUsers) Handle(ctx context.Context) ([]domain.User, error) {
	users, err := uc.repo.ListUsers(ctx)
	if err != nil {
		return nil, fmt.Errorf("list users: %w", err)
	}
	return users, nil
}

// CreateUser adds a human to the roster.
type CreateUser struct{ repo UserRepository }

// NewCreateUser returns the use case over repo.
func NewCreateUser(repo UserRepository) CreateUser { return CreateUser{repo: repo} }

// Handle validates and stores u.
func (uc CreateUser) Handle(ctx context.Context, u domain.User) (domain.User, error) {
	u.Normalize()
	if err := u.Validate(); err != nil {
		return domain.User{}, err
	}
	created, err := uc.repo.CreateUser(ctx, u)
	if err != nil {
		return domain.User{}, fmt.Errorf("create user %q: %w", u.Key, err)
	}
	return created, nil
}

// UpdateUser edits a roster row; the key is immutable.
type UpdateUser struct{ repo UserRepository }

// NewUpdateUser returns the use case over repo.
func NewUpdateUser(repo UserRepository) UpdateUser { return UpdateUser{repo: repo} }

// Handle applies patch to key's row.
func (uc UpdateUser) Handle(ctx context.Context, key string, patch domain.UserPatch) (domain.User, error) {
	if err := domain.ValidateUserKey(key); err != nil {
		return domain.User{}, err
	}
	u, err := uc.repo.UpdateUser(ctx, key, patch.Apply)
	if err != nil {
		return domain.User{}, fmt.Errorf("update user %q: %w", key, err)
	}
	return u, nil
}
