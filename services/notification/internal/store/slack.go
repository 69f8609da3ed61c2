package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zimmerhq/zimmer/services/notification/internal/app"
	"github.com/zimmerhq/zimmer/services/notification/internal/domain"
)

// Slack is the Postgres SlackRepository.
type Slack struct{ pool *pgxpool.Pool }

var _ app.SlackRepository = (*Slack)(nil)

// NewSlack returns a repository over pool.
func NewSlack(pool *pgxpool.Pool) *Slack { return &Slack{pool: pool} }

const triggerColumns = `id, channel, allowed_user_ids, prefix, require_mention, git_root, agent_root, agent_runtime, created_at`

func scanTrigger(row pgx.Row) (domain.SlackTrigger, error) {
	var t domain.SlackTrigger
	err := row.Scan(&t.ID, &t.Channel, &t.AllowedUserIDs, &t.Prefix, &t.RequireMention, &t.GitRoot, &t.AgentRoot, &t.AgentRuntime, &t.CreatedAt)
	t.CreatedAt = utc(t.CreatedAt)
	return t, err
}

// CreateTrigger implements app.SlackRepository.
func (s *Slack) CreateTrigger(ctx context.Context, t domain.SlackTrigger) (domain.SlackTrigger, error) {
	got, err := scanTrigger(s.pool.QueryRow(ctx, `
		INSERT INTO slack_triggers (channel, allowed_user_ids, prefix, require_mention, git_root, agent_root, agent_runtime, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
		RETURNING `+triggerColumns,
		t.Channel, t.AllowedUserIDs, t.Prefix, t.RequireMention, t.GitRoot, t.AgentRoot, t.AgentRuntime, t.CreatedAt))
	if err != nil {
		return domain.SlackTrigger{}, fmt.Errorf("insert slack trigger: %w", err)
	}
	return got, nil
}

// ListTriggers implements app.SlackRepository.
func (s *Slack) ListTriggers(ctx context.Context) ([]domain.SlackTrigger, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+triggerColumns+` FROM slack_triggers ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("list slack triggers: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.SlackTrigger, error) { return scanTrigger(r) })
	if err != nil {
		return nil, fmt.Errorf("list slack triggers: %w", err)
	}
	return out, nil
}

// Trigger implements app.SlackRepository.
func (s *Slack) Trigger(ctx context.Context, id int64) (domain.SlackTrigger, error) {
	t, err := scanTrigger(s.pool.QueryRow(ctx, `SELECT `+triggerColumns+` FROM slack_triggers WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.SlackTrigger{}, fmt.Errorf("slack trigger %d: %w", id, domain.ErrTriggerNotFound)
	}
	if err != nil {
		return domain.SlackTrigger{}, fmt.Errorf("load slack trigger %d: %w", id, err)
	}
	return t, nil
}

// DeleteTrigger implements app.SlackRepository. Its threads keep their
// sessions (pushes still reach them) and lose their trigger (ON DELETE SET
// NULL): nobody may follow up in them any more.
func (s *Slack) DeleteTrigger(ctx context.Context, id int64) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM slack_triggers WHERE id = $1`, id)
	if err != nil {
		return fmt.Errorf("delete slack trigger %d: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("slack trigger %d: %w", id, domain.ErrTriggerNotFound)
	}
	return nil
}

// AcceptEvent implements app.SlackRepository: the primary key decides, so
// of two concurrent deliveries of one event exactly one is accepted.
func (s *Slack) AcceptEvent(ctx context.Context, e domain.SlackEvent) (bool, error) {
	tag, err := s.pool.Exec(ctx, `
		INSERT INTO slack_events (event_id, payload, received_at) VALUES ($1, $2, $3)
		ON CONFLICT (event_id) DO NOTHING`, e.EventID, e.Payload, e.ReceivedAt)
	if err != nil {
		return false, err
	}
	return tag.RowsAffected() == 1, nil
}

// Event implements app.SlackRepository.
func (s *Slack) Event(ctx context.Context, id string) (domain.SlackEvent, error) {
	var (
		e                                   domain.SlackEvent
		session                             *int64
		followedUp, captured, replied, done *time.Time
	)
	err := s.pool.QueryRow(ctx, `
		SELECT event_id, payload, received_at, session_id, followed_up_at, follow_up_answer, captured_at, replied_at, processed_at, outcome
		FROM slack_events WHERE event_id = $1`, id).
		Scan(&e.EventID, &e.Payload, &e.ReceivedAt, &session, &followedUp, &e.FollowUpAnswer, &captured, &replied, &done, &e.Outcome)
	if err != nil {
		return domain.SlackEvent{}, err
	}
	e.ReceivedAt = utc(e.ReceivedAt)
	if session != nil {
		e.SessionID = *session
	}
	e.FollowedUp, e.Captured, e.Replied, e.Processed = followedUp != nil, captured != nil, replied != nil, done != nil
	return e, nil
}

// SetEventSession implements app.SlackRepository.
func (s *Slack) SetEventSession(ctx context.Context, id string, sessionID int64) error {
	_, err := s.pool.Exec(ctx, `UPDATE slack_events SET session_id = $2 WHERE event_id = $1`, id, sessionID)
	return err
}

// MarkFollowedUp implements app.SlackRepository; the first mark stands.
func (s *Slack) MarkFollowedUp(ctx context.Context, id, answer string, at time.Time) error {
	_, err := s.pool.Exec(ctx, `
		UPDATE slack_events SET followed_up_at = $2, follow_up_answer = $3 WHERE event_id = $1 AND followed_up_at IS NULL`, id, at, answer)
	return err
}

// MarkEventStep implements app.SlackRepository.
func (s *Slack) MarkEventStep(ctx context.Context, id string, step app.SlackEventStep, at time.Time) error {
	var column string
	switch step {
	case app.StepCaptured:
		column = "captured_at"
	case app.StepReplied:
		column = "replied_at"
	default:
		return fmt.Errorf("unknown slack event step %q", step)
	}
	_, err := s.pool.Exec(ctx, `UPDATE slack_events SET `+column+` = coalesce(`+column+`, $2) WHERE event_id = $1`, id, at)
	return err
}

// FinishEvent implements app.SlackRepository.
func (s *Slack) FinishEvent(ctx context.Context, id, outcome string, at time.Time) error {
	_, err := s.pool.Exec(ctx, `
		UPDATE slack_events SET processed_at = coalesce(processed_at, $2), outcome = $3 WHERE event_id = $1`, id, at, outcome)
	return err
}

// BindThread implements app.SlackRepository.
func (s *Slack) BindThread(ctx context.Context, t domain.SlackThread, at time.Time) error {
	_, err := s.pool.Exec(ctx, `
		INSERT INTO slack_threads (channel_id, thread_ts, session_id, trigger_id, created_at)
		VALUES ($1, $2, $3, nullif($4::bigint, 0), $5)
		ON CONFLICT DO NOTHING`, t.ChannelID, t.ThreadTS, t.SessionID, t.TriggerID, at)
	if err != nil {
		return fmt.Errorf("bind thread %s/%s to session %d: %w", t.ChannelID, t.ThreadTS, t.SessionID, err)
	}
	return nil
}

const threadColumns = `channel_id, thread_ts, session_id, coalesce(trigger_id, 0)`

func scanThread(row pgx.Row) (domain.SlackThread, bool, error) {
	var t domain.SlackThread
	err := row.Scan(&t.ChannelID, &t.ThreadTS, &t.SessionID, &t.TriggerID)
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.SlackThread{}, false, nil
	}
	if err != nil {
		return domain.SlackThread{}, false, err
	}
	return t, true, nil
}

// Thread implements app.SlackRepository.
func (s *Slack) Thread(ctx context.Context, channelID, threadTS string) (domain.SlackThread, bool, error) {
	return scanThread(s.pool.QueryRow(ctx, `SELECT `+threadColumns+` FROM slack_threads WHERE channel_id = $1 AND thread_ts = $2`, channelID, threadTS))
}

// ThreadOfSession implements app.SlackRepository.
func (s *Slack) ThreadOfSession(ctx context.Context, sessionID int64) (domain.SlackThread, bool, error) {
	return scanThread(s.pool.QueryRow(ctx, `SELECT `+threadColumns+` FROM slack_threads WHERE session_id = $1`, sessionID))
}
