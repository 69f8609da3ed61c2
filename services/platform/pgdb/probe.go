package pgdb

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// closeTimeout bounds saying goodbye on a probe's connection, which may
// lead to a server that is gone.
const closeTimeout = time.Second

// Probe checks that the database at url answers, on a connection of its
// own: the pool's connections may all be busy under load, which says
// nothing about whether the database is there, and a probe that queued for
// one would report an outage that is not. The connection is made on the
// first check and again after a failure; Close releases it.
type Probe struct {
	cfg  *pgx.ConnConfig
	mu   sync.Mutex
	conn *pgx.Conn
}

// NewProbe returns a probe of the database at url.
func NewProbe(url string) (*Probe, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse database URL: %w", err)
	}
	return &Probe{cfg: cfg}, nil
}

// Check pings the database within ctx.
func (p *Probe) Check(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conn == nil {
		conn, err := pgx.ConnectConfig(ctx, p.cfg.Copy())
		if err != nil {
			return fmt.Errorf("connect to database %s@%s/%s: %w", p.cfg.User, p.cfg.Host, p.cfg.Database, err)
		}
		p.conn = conn
	}
	if err := p.conn.Ping(ctx); err != nil {
		p.closeLocked()
		return fmt.Errorf("ping database %s@%s/%s: %w", p.cfg.User, p.cfg.Host, p.cfg.Database, err)
	}
	return nil
}

// Close closes the probe's connection.
func (p *Probe) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closeLocked()
}

func (p *Probe) closeLocked() {
	if p.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		_ = p.conn.Close(ctx)
		p.conn = nil
	}
}
