package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zimmerhq/zimmer/services/runner/internal/domain"
)

// Costs keeps the cost entries (cost_entries) and sums them into reports.
type Costs struct{ pool *pgxpool.Pool }

// NewCosts returns the costs' store.
func NewCosts(pool *pgxpool.Pool) *Costs { return &Costs{pool: pool} }

// Record records entries at at, in one transaction; an entry whose key is
// recorded already is skipped, so a retried activity counts once.
func (s *Costs) Record(ctx context.Context, at time.Time, entries ...domain.CostEntry) error {
	if len(entries) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	for _, e := range entries {
		u := e.Usage
		b.Queue(`INSERT INTO cost_entries (key, session_id, turn_id, kind, tool, bytes,
				input_tokens, output_tokens, cache_read_tokens, cache_creation_tokens, cost_usd, recorded_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
			ON CONFLICT (key) DO NOTHING`,
			e.Key, e.SessionID, e.TurnID, string(e.Kind), e.Tool, e.Bytes,
			u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheCreationTokens, u.CostUSD, at)
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error { return tx.SendBatch(ctx, b).Close() })
	if err != nil {
		return fmt.Errorf("record %d cost entries of session %d: %w", len(entries), entries[0].SessionID, err)
	}
	return nil
}

// Report sums the entries q covers: in total, by UTC day, by session, by
// kind and, for MCP responses, by tool.
func (s *Costs) Report(ctx context.Context, q domain.CostQuery) (domain.CostReport, error) {
	r := domain.CostReport{Query: q}
	// One grouping per line set; GROUPING SETS reads the rows once.
	rows, err := s.pool.Query(ctx, `SELECT
			GROUPING(to_char(recorded_at AT TIME ZONE 'UTC', 'YYYY-MM-DD'), session_id, kind, tool) AS g,
			COALESCE(to_char(recorded_at AT TIME ZONE 'UTC', 'YYYY-MM-DD'), ''), COALESCE(session_id, 0),
			COALESCE(kind, ''), COALESCE(tool, ''),
			COALESCE(sum(bytes), 0), COALESCE(sum(input_tokens), 0), COALESCE(sum(output_tokens), 0),
			COALESCE(sum(cache_read_tokens), 0), COALESCE(sum(cache_creation_tokens), 0), COALESCE(sum(cost_usd), 0), count(*)
		FROM cost_entries
		WHERE recorded_at >= $1 AND recorded_at < $2 AND ($3::bigint = 0 OR session_id = $3::bigint)
		GROUP BY GROUPING SETS ((), (to_char(recorded_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')), (session_id), (kind), (kind, tool))
		ORDER BY 1, 2, 3, 4, 5`, q.From, q.End(), q.SessionID)
	if err != nil {
		return r, fmt.Errorf("sum the costs from %s to %s: %w", q.From.Format(domain.CostDateLayout), q.To.Format(domain.CostDateLayout), err)
	}
	defer rows.Close()
	for rows.Next() {
		var g int
		var l domain.CostLine
		var kind string
		if err := rows.Scan(&g, &l.Day, &l.SessionID, &kind, &l.Tool, &l.Bytes, &l.Usage.InputTokens, &l.Usage.OutputTokens,
			&l.Usage.CacheReadTokens, &l.Usage.CacheCreationTokens, &l.Usage.CostUSD, &l.Entries); err != nil {
			return r, fmt.Errorf("read a cost line: %w", err)
		}
		l.Kind = domain.CostKind(kind)
		// GROUPING's bits, day first: 1 where the column is not grouped.
		switch g {
		case 0b1111:
			r.Total = l
		case 0b0111:
			r.ByDay = append(r.ByDay, l)
		case 0b1011:
			r.BySession = append(r.BySession, l)
		case 0b1101:
			r.ByKind = append(r.ByKind, l)
		case 0b1100:
			if l.Kind == domain.CostMCPResponses || l.Kind == domain.CostProvenanceTool {
				r.ByTool = append(r.ByTool, l)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return r, fmt.Errorf("read the cost lines: %w", err)
	}
	// Kinds in the order a report shows them: the prompt's parts first.
	order := func(l domain.CostLine) int { return slices.Index(domain.CostKinds, l.Kind) }
	slices.SortStableFunc(r.ByKind, func(a, b domain.CostLine) int { return order(a) - order(b) })
	slices.SortStableFunc(r.ByTool, func(a, b domain.CostLine) int { return order(a) - order(b) })
	return r, nil
}
