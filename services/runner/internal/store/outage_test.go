package store_test

import (
	"context"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/platform/pgtest"
	"github.com/zimmerhq/zimmer/services/runner/internal/store"
	"github.com/zimmerhq/zimmer/services/runner/internal/transcript"
)

// A line an agent prints while Postgres restarts is kept, not dropped: the
// write waits the outage out (here a proxy in front of the test database
// that cuts every connection and refuses new ones for a second), and the
// turn's end recorded after it lands too. The chaos test lost a turn's
// last words this way when Postgres was killed as the agent printed them.
func TestATranscriptWriteWaitsOutADatabaseOutage(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t, store.Migrations)
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	p := startProxy(t, u.Host)
	u.Host = p.addr
	pool, err := pgxpool.New(t.Context(), u.String())
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	s := store.NewTranscripts(pool, transcript.DefaultLimits)

	require.NoError(t, s.Append(t.Context(), 7, "turn-1", say("before the outage")))
	p.down()
	done := make(chan error, 2)
	go func() {
		if err := s.Append(context.Background(), 7, "turn-1", say("during the outage")); err != nil {
			done <- err
			return
		}
		done <- s.EndTurn(context.Background(), 7, "turn-1", "exit status 0")
	}()
	time.Sleep(time.Second)
	select {
	case err := <-done:
		t.Fatalf("the write ended while the database was unreachable: %v", err)
	default:
	}
	p.up()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("the write never landed after the database came back")
	}
	page, err := s.Page(t.Context(), transcript.Query{SessionID: 7, PageSize: 10})
	require.NoError(t, err)
	require.Equal(t, []string{"turn-1:before the outage", "turn-1:during the outage"}, texts(page.Lines))
	require.Len(t, page.Turns, 1)
	require.Equal(t, "exit status 0", page.Turns[0].Outcome)
}

// proxy forwards loopback connections to a database; down cuts them all
// and refuses new ones until up.
type proxy struct {
	addr, target string
	mu           sync.Mutex
	ln           net.Listener
	conns        []net.Conn
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &proxy{addr: ln.Addr().String(), target: target}
	p.serve(ln)
	t.Cleanup(p.down)
	return p
}

func (p *proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			d, err := net.Dial("tcp", p.target)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, d)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(d, c); _ = d.Close() }()
			go func() { _, _ = io.Copy(c, d); _ = c.Close() }()
		}
	}()
}

func (p *proxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

func (p *proxy) up() {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		panic(err) // the port was ours a second ago
	}
	p.serve(ln)
}
