// Package store keeps sessions in Postgres.
package store

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/app"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/outbox"
	"github.com/zimmerhq/zimmer/services/platform/pgdb"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Migrations is the lifecycle schema.
var Migrations = pgdb.MigrationSet{Name: "lifecycle", FS: pgdb.MigrationsDir(migrations)}

// Codec is the wire side of the store's events, which the store takes from
// the composition root: Encode turns a fact into outbox events, each with
// the subscribers it is addressed to; Stream reads one of those events back
// as the entries it adds to the session's event stream (none for an event
// that is not part of it).
type Codec interface {
	Encode(domain.Fact) ([]outbox.Addressed, error)
	Stream(topic string, payload []byte) ([]domain.StreamEvent, error)
	// EffectName is the spec's callback name of an effect, as its stream
	// entry and logs show it.
	EffectName(domain.Effect) string
}

// Sessions is the Postgres SessionRepository.
type Sessions struct {
	pool   *pgxpool.Pool
	codec  Codec
	signal *outbox.Signal
	// changed wakes this process's WatchSessionChanges streams (changes.go).
	changed *changeSignal
	logger  *slog.Logger
}

var _ app.SessionRepository = (*Sessions)(nil)

// NewSessions returns a repository over pool. signal is notified after
// every commit that recorded outbox events (nil: relays poll). Bookkeeping
// whose failure must not stop a transition is logged to logger.
func NewSessions(pool *pgxpool.Pool, codec Codec, signal *outbox.Signal, logger *slog.Logger) *Sessions {
	return &Sessions{pool: pool, codec: codec, signal: signal, changed: newChangeSignal(), logger: logger}
}

// columns are a session's columns in the order scanSession reads them.
var columns = []string{"id", "COALESCE(slug, '')", "status", "title", "prompt", "goal", "agent_root", "agent_runtime",
	"git_root", "branch", "subdirectory", "parent_session_id", "genesis", "scheduling_class", "precedence",
	"custom_metadata", "created_at", "updated_at", "markers", "elapsed_since", "archived_at", "archived_from",
	"trash_after", "version", "heartbeat_enabled", "heartbeat_interval_seconds", "notes", "mcp_tool_groups", "push_notifications",
	"category_id", "starred",
	pullRequestsColumn}

// pullRequestsColumn reads a session's tracked pull requests with it, so
// every reader of a session — a transition's decision under its lock
// among them — sees them (LC-33).
const pullRequestsColumn = `COALESCE((SELECT jsonb_agg(jsonb_build_object('owner', p.owner, 'repo', p.repo, 'number', p.number, 'state', p.state)
		ORDER BY p.recorded_at, p.owner, p.repo, p.number) FROM pull_requests p WHERE p.session_id = sessions.id), '[]'::jsonb)`

var sessionColumns = strings.Join(columns, ", ")

// listColumns are the columns as a list reads them: the long free text only
// as long as a preview can be (a character more, so the domain sees the
// cut) and no custom_metadata, so a page of the largest sessions is never
// loaded whole (see domain.Session.Summary).
var listColumns = func() string {
	cols := slices.Clone(columns)
	for i, c := range cols {
		switch c {
		case "prompt", "goal", "notes":
			cols[i] = fmt.Sprintf("left(%s, %d)", c, rules.ListPreviewChars+1)
		case "custom_metadata":
			cols[i] = "'null'::jsonb"
		}
	}
	return strings.Join(cols, ", ")
}()

// Get implements app.SessionRepository.
func (s *Sessions) Get(ctx context.Context, ref domain.SessionRef) (domain.Session, error) {
	var row pgx.Row
	if ref.Slug != "" {
		row = s.pool.QueryRow(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE slug = $1`, ref.Slug)
	} else {
		row = s.pool.QueryRow(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE id = $1`, ref.ID)
	}
	sess, err := scanSession(row)
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.Session{}, &domain.NotFoundError{Ref: ref}
	}
	if err != nil {
		return domain.Session{}, fmt.Errorf("get session %s: %w", ref, err)
	}
	return sess, nil
}

// StatusSummaryForkAtWork implements app.SessionRepository.
func (s *Sessions) StatusSummaryForkAtWork(ctx context.Context, sourceID int64) (domain.Session, bool, error) {
	sess, err := scanSession(s.pool.QueryRow(ctx, `SELECT `+sessionColumns+` FROM sessions
		WHERE custom_metadata ? '`+rules.StatusSummarySourceKey+`' AND status <> $2
			AND custom_metadata ->> '`+rules.StatusSummarySourceKey+`' = $1`,
		strconv.FormatInt(sourceID, 10), int16(domain.StatusArchived)))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return domain.Session{}, false, nil
	case err != nil:
		return domain.Session{}, false, fmt.Errorf("find the status-summary fork of session %d at work: %w", sourceID, err)
	}
	return sess, true, nil
}

// List implements app.SessionRepository.
func (s *Sessions) List(ctx context.Context, f domain.ListFilter) (domain.Page, error) {
	where, args := listFilter(f)
	// The page's bounds follow the filter's arguments, so the count below
	// can share the filter as it is.
	q := `SELECT ` + listColumns + `, count(*) OVER () FROM sessions` + where +
		" ORDER BY id DESC LIMIT $" + strconv.Itoa(len(args)+1) + " OFFSET $" + strconv.Itoa(len(args)+2)

	rows, err := s.pool.Query(ctx, q, append(slices.Clone(args), f.PerPage, (f.Page-1)*f.PerPage)...)
	if err != nil {
		return domain.Page{}, fmt.Errorf("list sessions: %w", err)
	}
	page := domain.Page{Page: f.Page, PerPage: f.PerPage, Sessions: []domain.Session{}}
	for rows.Next() {
		sess, err := scanSession(rows, &page.TotalCount)
		if err != nil {
			return domain.Page{}, fmt.Errorf("list sessions: %w", err)
		}
		page.Sessions = append(page.Sessions, sess)
	}
	if err := rows.Err(); err != nil {
		return domain.Page{}, fmt.Errorf("list sessions: %w", err)
	}
	if len(page.Sessions) == 0 && f.Page > 1 {
		// Past the last page the window function has no row to report the
		// total on; count separately so the pagination stays truthful.
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM sessions`+where, args...).Scan(&page.TotalCount); err != nil {
			return domain.Page{}, fmt.Errorf("count sessions: %w", err)
		}
	}
	return page, nil
}

// listFilter is f's WHERE clause (empty, or starting with a space) and its
// arguments, $1 onwards: built once for both the page and the count.
func listFilter(f domain.ListFilter) (string, []any) {
	var (
		where []string
		args  []any
	)
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if len(f.Statuses) > 0 {
		codes := make([]int16, len(f.Statuses))
		for i, st := range f.Statuses {
			codes[i] = int16(st)
		}
		where = append(where, "status = ANY("+arg(codes)+")")
	}
	if f.Query != "" {
		p := arg("%" + escapeLike(f.Query) + "%")
		where = append(where, "(title ILIKE "+p+" OR prompt ILIKE "+p+" OR slug ILIKE "+p+" OR notes ILIKE "+p+")")
	}
	if f.AgentRoot != "" {
		where = append(where, "agent_root = "+arg(f.AgentRoot))
	}
	if f.Genesis != "" {
		where = append(where, "genesis = "+arg(f.Genesis))
	}
	if f.SchedulingClass != "" {
		where = append(where, "scheduling_class = "+arg(f.SchedulingClass))
	}
	if f.Starred != nil {
		where = append(where, "starred = "+arg(*f.Starred))
	}
	switch {
	case f.CategoryID == nil:
	case *f.CategoryID == 0:
		where = append(where, "category_id IS NULL")
	default:
		where = append(where, "category_id = "+arg(*f.CategoryID))
	}
	if f.SessionIDs != nil {
		where = append(where, "id = ANY("+arg(f.SessionIDs)+")")
	}
	if f.SkipFrozenCategories {
		where = append(where, "(category_id IS NULL OR category_id NOT IN (SELECT id FROM categories WHERE frozen))")
	}
	if len(where) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(where, " AND "), args
}

func scanSession(row pgx.Row, extra ...any) (domain.Session, error) {
	var (
		s           domain.Session
		md, mk, prs []byte
	)
	dest := append([]any{&s.ID, &s.Slug, &s.Status, &s.Title, &s.Prompt, &s.Goal, &s.AgentRoot,
		&s.AgentRuntime, &s.GitRoot, &s.Branch, &s.Subdirectory, &s.ParentSessionID, &s.Genesis,
		&s.SchedulingClass, &s.Precedence, &md, &s.CreatedAt, &s.UpdatedAt, &mk, &s.ElapsedSince,
		&s.ArchivedAt, &s.ArchivedFrom, &s.TrashAfter, &s.Version, &s.HeartbeatEnabled,
		&s.HeartbeatIntervalSeconds, &s.Notes, &s.MCPToolGroups, &s.PushNotifications,
		&s.CategoryID, &s.Starred, &prs}, extra...)
	if err := row.Scan(dest...); err != nil {
		return domain.Session{}, err
	}
	err := json.Unmarshal(md, &s.CustomMetadata)
	if err != nil {
		return domain.Session{}, fmt.Errorf("decode custom_metadata of session %d: %w", s.ID, err)
	}
	if s.PullRequests, err = decodePullRequests(prs); err != nil {
		return domain.Session{}, fmt.Errorf("decode pull requests of session %d: %w", s.ID, err)
	}
	if s.Markers, err = decodeMarkers(mk); err != nil {
		return domain.Session{}, fmt.Errorf("decode markers of session %d: %w", s.ID, err)
	}
	s.CreatedAt, s.UpdatedAt = s.CreatedAt.UTC(), s.UpdatedAt.UTC()
	for _, t := range []*time.Time{s.ElapsedSince, s.ArchivedAt, s.TrashAfter} {
		if t != nil {
			*t = t.UTC()
		}
	}
	return s, nil
}

// interpretWrite turns constraint violations of op (e.g. "insert session")
// into domain errors, once.
func interpretWrite(op string, err error, s domain.Session) error {
	switch pgdb.Code(err) {
	case pgdb.CodeUniqueViolation:
		if strings.Contains(pgdb.ConstraintName(err), "slug") {
			return fmt.Errorf("slug %q is taken by another session; choose another: %w", s.Slug, domain.ErrAlreadyExists)
		}
		if strings.Contains(pgdb.ConstraintName(err), "status_summary_fork") {
			return fmt.Errorf("a status-summary fork of session %v is at work already: %w", s.CustomMetadata[rules.StatusSummarySourceKey], domain.ErrAlreadyExists)
		}
	case pgdb.CodeForeignKeyViolation:
		if strings.Contains(pgdb.ConstraintName(err), "category") && s.CategoryID != nil {
			// Deleted since the caller listed them, or never one.
			return validation.Invalid("category_id", "no category %d exists; pass the id of an existing category, or 0 for uncategorized", *s.CategoryID)
		}
		// The parent was checked under FOR KEY SHARE, so this cannot happen
		// unless that invariant breaks; say so rather than guess.
		return fmt.Errorf("%s: parent %v vanished: %w", op, s.ParentSessionID, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

func escapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}
