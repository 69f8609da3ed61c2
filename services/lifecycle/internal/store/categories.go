package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/app"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/pgdb"
)

var _ app.CategoryRepository = (*Sessions)(nil)

// categoriesLock is the advisory lock every change of the categories takes
// first: positions are renumbered over the whole list, so changes of it
// run one at a time (they are rare: an operator's edits).
const categoriesLock = 0x7a_63_61_74 // "zcat"

const categoryColumns = `id, name, position, frozen, created_at, updated_at`

// Categories implements app.CategoryRepository.
func (s *Sessions) Categories(ctx context.Context) ([]domain.Category, error) {
	cats, err := listCategories(ctx, s.pool)
	if err != nil {
		return nil, fmt.Errorf("list categories: %w", err)
	}
	return cats, nil
}

// Category implements app.CategoryRepository.
func (s *Sessions) Category(ctx context.Context, id int64) (domain.Category, error) {
	c, err := scanCategory(s.pool.QueryRow(ctx, `SELECT `+categoryColumns+` FROM categories WHERE id = $1`, id))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return domain.Category{}, &domain.CategoryNotFoundError{ID: id}
	case err != nil:
		return domain.Category{}, fmt.Errorf("get category %d: %w", id, err)
	}
	return c, nil
}

// CreateCategory implements app.CategoryRepository.
func (s *Sessions) CreateCategory(ctx context.Context, n domain.NewCategory, now time.Time) (domain.Category, error) {
	var created domain.Category
	err := s.changeCategories(ctx, func(tx pgx.Tx, cats []domain.Category) error {
		name := domain.CategoryName(n.Name)
		// Last for now; moved into place with the others below.
		err := tx.QueryRow(ctx, `INSERT INTO categories (name, position, frozen, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $4) RETURNING `+categoryColumns, name, len(cats)+1, n.Frozen, now).
			Scan(&created.ID, &created.Name, &created.Position, &created.Frozen, &created.CreatedAt, &created.UpdatedAt)
		if err != nil {
			return interpretCategoryWrite("create category", err, name)
		}
		pos := int32(len(cats) + 1)
		if n.Position != nil {
			pos = *n.Position
		}
		placed := domain.Place(append(cats, created), created.ID, pos)
		created = find(placed, created.ID)
		return renumber(ctx, tx, append(cats, domain.Category{ID: created.ID, Position: int32(len(cats) + 1)}), placed, now)
	})
	return created, err
}

// UpdateCategory implements app.CategoryRepository.
func (s *Sessions) UpdateCategory(ctx context.Context, id int64, p domain.CategoryPatch, now time.Time) (domain.Category, error) {
	var updated domain.Category
	err := s.changeCategories(ctx, func(tx pgx.Tx, cats []domain.Category) error {
		cur := find(cats, id)
		if cur.ID == 0 {
			return &domain.CategoryNotFoundError{ID: id}
		}
		next := cur
		if p.Name != nil {
			next.Name = domain.CategoryName(*p.Name)
		}
		if p.Frozen != nil {
			next.Frozen = *p.Frozen
		}
		if next.Name != cur.Name || next.Frozen != cur.Frozen {
			next.UpdatedAt = now
			if _, err := tx.Exec(ctx, `UPDATE categories SET name = $2, frozen = $3, updated_at = $4 WHERE id = $1`,
				id, next.Name, next.Frozen, now); err != nil {
				return interpretCategoryWrite("update category", err, next.Name)
			}
		}
		placed := cats
		if p.Position != nil {
			placed = domain.Place(cats, id, *p.Position)
			if err := renumber(ctx, tx, cats, placed, now); err != nil {
				return err
			}
		}
		updated = find(placed, id)
		updated.Name, updated.Frozen = next.Name, next.Frozen
		if updated.Position != cur.Position {
			updated.UpdatedAt = now
		} else {
			updated.UpdatedAt = next.UpdatedAt
		}
		return nil
	})
	return updated, err
}

// DeleteCategory implements app.CategoryRepository: the sessions in it
// become uncategorized (the foreign key's ON DELETE SET NULL) and the
// categories after it move up one.
func (s *Sessions) DeleteCategory(ctx context.Context, id int64, now time.Time) error {
	return s.changeCategories(ctx, func(tx pgx.Tx, cats []domain.Category) error {
		if find(cats, id).ID == 0 {
			return &domain.CategoryNotFoundError{ID: id}
		}
		if _, err := tx.Exec(ctx, `DELETE FROM categories WHERE id = $1`, id); err != nil {
			return fmt.Errorf("delete category %d: %w", id, err)
		}
		var rest []domain.Category
		for _, c := range cats {
			if c.ID != id {
				rest = append(rest, c)
			}
		}
		return renumber(ctx, tx, rest, domain.Renumber(rest), now)
	})
}

// changeCategories runs change in a transaction holding the categories'
// lock, with the categories in order.
func (s *Sessions) changeCategories(ctx context.Context, change func(pgx.Tx, []domain.Category) error) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, categoriesLock); err != nil {
			return fmt.Errorf("lock the categories: %w", err)
		}
		cats, err := listCategories(ctx, tx)
		if err != nil {
			return fmt.Errorf("read the categories: %w", err)
		}
		return change(tx, cats)
	})
	if pgdb.Retryable(err) {
		return fmt.Errorf("%w: %w", domain.ErrConflict, err)
	}
	return err
}

// renumber writes the positions that differ between before and after.
func renumber(ctx context.Context, tx pgx.Tx, before, after []domain.Category, now time.Time) error {
	was := make(map[int64]int32, len(before))
	for _, c := range before {
		was[c.ID] = c.Position
	}
	for _, c := range after {
		if was[c.ID] == c.Position {
			continue
		}
		if _, err := tx.Exec(ctx, `UPDATE categories SET position = $2, updated_at = $3 WHERE id = $1`, c.ID, c.Position, now); err != nil {
			return fmt.Errorf("move category %d to position %d: %w", c.ID, c.Position, err)
		}
	}
	return nil
}

func find(cats []domain.Category, id int64) domain.Category {
	for _, c := range cats {
		if c.ID == id {
			return c
		}
	}
	return domain.Category{}
}

func listCategories(ctx context.Context, db pgdb.DBTX) ([]domain.Category, error) {
	rows, err := db.Query(ctx, `SELECT `+categoryColumns+` FROM categories ORDER BY position, id`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.Category, error) { return scanCategory(r) })
}

func scanCategory(row pgx.Row) (domain.Category, error) {
	var c domain.Category
	if err := row.Scan(&c.ID, &c.Name, &c.Position, &c.Frozen, &c.CreatedAt, &c.UpdatedAt); err != nil {
		return domain.Category{}, err
	}
	c.CreatedAt, c.UpdatedAt = c.CreatedAt.UTC(), c.UpdatedAt.UTC()
	return c, nil
}

// interpretCategoryWrite answers a name another category has as the
// caller's mistake.
func interpretCategoryWrite(op string, err error, name string) error {
	if pgdb.Code(err) == pgdb.CodeUniqueViolation && pgdb.ConstraintName(err) == "categories_name_key" {
		return domain.NameTakenError(name)
	}
	return fmt.Errorf("%s: %w", op, err)
}
