package app

import (
	"context"

	"github.com/zimmerhq/zimmer/services/lineage/internal/domain"
)

// UserRepository stores the users roster.
type UserRepository interface {
	// ListUsers returns every user in key order.
	ListUsers(ctx context.Context) ([]domain.User, error)
	// CreateUser stores u: a *domain.UserExistsError when the key is taken,
	// a *domain.SlackIDTakenError when one of its Slack IDs is, a
	// *domain.EmailTakenError when its email is (compared ignoring case).
	CreateUser(ctx context.Context, u domain.User) (domain.User, error)
	// UpdateUser loads key's row for update, lets edit change it and stores
	// the result in the same transaction; errors as CreateUser, and
	// domain.ErrNotFound for a key no row holds. The key never changes.
	UpdateUser(ctx context.Context, key string, edit func(*domain.User) error) (domain.User, error)
}

// HumanMessageRepository stores human messages. It has no update or delete:
// the records are immutable evidence (the database refuses both as well).
type HumanMessageRepository interface {
	// RecordHumanMessage appends m and returns it with its id and
	// recorded_at, created true. When m's idempotency key is held already
	// (a concurrent call with it won), nothing is written: created is false
	// and saved is the row holding the key.
	RecordHumanMessage(ctx context.Context, m domain.HumanMessage) (saved domain.HumanMessage, created bool, err error)
	// HumanMessageByKey returns the message recorded under idempotency key
	// key; found is false when none is.
	HumanMessageByKey(ctx context.Context, key string) (m domain.HumanMessage, found bool, err error)
	// HumanMessagesIn returns every message authored in one of sessionIDs.
	HumanMessagesIn(ctx context.Context, sessionIDs []int64) ([]domain.HumanMessage, error)
}

// HierarchyWalker walks the hierarchy of a session (GetHierarchy).
type HierarchyWalker interface {
	Handle(ctx context.Context, sessionID int64) (domain.Hierarchy, error)
}
