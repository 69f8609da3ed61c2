package app

import (
	"context"
	"errors"
	"time"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/clock"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// CategoryRepository stores the deployment's categories. Every change runs
// alone (positions are renumbered over the whole list) and writes nothing
// when it fails.
type CategoryRepository interface {
	// Categories lists them in order.
	Categories(ctx context.Context) ([]domain.Category, error)
	// Category returns one, or a *domain.CategoryNotFoundError.
	Category(ctx context.Context, id int64) (domain.Category, error)
	// CreateCategory inserts one at n.Position (nil: last) and renumbers.
	// A name another has is domain.NameTakenError.
	CreateCategory(ctx context.Context, n domain.NewCategory, now time.Time) (domain.Category, error)
	// UpdateCategory changes one and, with a position, moves it there.
	UpdateCategory(ctx context.Context, id int64, p domain.CategoryPatch, now time.Time) (domain.Category, error)
	// DeleteCategory deletes one: its sessions become uncategorized.
	DeleteCategory(ctx context.Context, id int64, now time.Time) error
}

// Categories manages the categories.
type Categories struct {
	Repo  CategoryRepository
	Clock clock.Clock
}

// List returns the categories in order.
func (uc Categories) List(ctx context.Context) ([]domain.Category, error) {
	return uc.Repo.Categories(ctx)
}

// Create validates n and creates the category.
func (uc Categories) Create(ctx context.Context, n domain.NewCategory) (domain.Category, error) {
	if err := n.Validate(); err != nil {
		return domain.Category{}, err
	}
	return uc.Repo.CreateCategory(ctx, n, uc.Clock.Now())
}

// Update validates p and applies it.
func (uc Categories) Update(ctx context.Context, id int64, p domain.CategoryPatch) (domain.Category, error) {
	if err := p.Validate(); err != nil {
		return domain.Category{}, err
	}
	return uc.Repo.UpdateCategory(ctx, id, p, uc.Clock.Now())
}

// Delete deletes the category.
func (uc Categories) Delete(ctx context.Context, id int64) error {
	return uc.Repo.DeleteCategory(ctx, id, uc.Clock.Now())
}

// PendingInference is what of a session is still to be inferred and what a
// model infers it from.
type PendingInference struct {
	Session         domain.Session
	Title, Category bool
	// Choices are the categories the model may choose from.
	Choices []domain.Category
}

// Inference serves the runner's title and category inference; the rule of
// what is pending and what may be set lives in the domain (Session.
// PendingInference, Inferred.Apply).
type Inference struct {
	Sessions   SessionRepository
	Categories CategoryRepository
	Clock      clock.Clock
}

// Pending reads what session id still needs inferred.
func (uc Inference) Pending(ctx context.Context, id int64) (PendingInference, error) {
	s, err := uc.Sessions.Get(ctx, domain.SessionRef{ID: id})
	if err != nil {
		return PendingInference{}, err
	}
	all, err := uc.Categories.Categories(ctx)
	if err != nil {
		return PendingInference{}, err
	}
	choices := domain.InferenceChoices(all)
	title, category := s.PendingInference(choices)
	return PendingInference{Session: s, Title: title, Category: category, Choices: choices}, nil
}

// Recorded is what RecordInference set.
type Recorded struct {
	Session               domain.Session
	TitleSet, CategorySet bool
}

// Record sets what was inferred on session id, each field only while it
// is still unset, under the session's lock: a human's edit that commits
// first wins. by is the caller, named on the note.
func (uc Inference) Record(ctx context.Context, id int64, title string, categoryID *int64, by string) (Recorded, error) {
	in := domain.Inferred{Title: title}
	if err := in.Validate(); err != nil {
		return Recorded{}, err
	}
	if categoryID != nil {
		c, err := uc.Categories.Category(ctx, *categoryID)
		var nf *domain.CategoryNotFoundError
		if errors.As(err, &nf) {
			return Recorded{}, validation.Invalid("category_id", "no category %d exists; infer one of the categories listed", *categoryID)
		}
		if err != nil {
			return Recorded{}, err
		}
		in.Category = &c
	}
	var rec Recorded
	c, err := uc.Sessions.Update(ctx, domain.SessionRef{ID: id}, func(s domain.Session, _ domain.Wakes) (Change, error) {
		next, titleSet, categorySet, note := in.Apply(s, uc.Clock.Now(), by)
		rec = Recorded{Session: next, TitleSet: titleSet, CategorySet: categorySet}
		if !titleSet && !categorySet {
			return Change{Nothing: true}, nil
		}
		return Change{Edited: &Edit{Session: next, Note: note}}, nil
	})
	if err != nil {
		return Recorded{}, err
	}
	if c.Edited != nil {
		rec.Session = c.Edited.Session // with its committed version
	}
	return rec, nil
}
