package pgtest

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Proxy forwards loopback TCP connections to a database, so a test can
// take the database away (Down: open connections cut, new ones refused)
// and give it back (Up) without touching the server others share.
type Proxy struct {
	// Addr is the proxy's host:port, for the test's database URL.
	Addr   string
	target string

	mu    sync.Mutex
	ln    net.Listener
	conns []net.Conn
}

// NewProxy starts a proxy to target (host:port); it is down when the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen for the database proxy: %v", err)
	}
	p := &Proxy{Addr: ln.Addr().String(), target: target}
	p.serve(ln)
	t.Cleanup(p.Down)
	return p
}

func (p *Proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", p.target)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); _ = up.Close() }()
			go func() { _, _ = io.Copy(c, up); _ = c.Close() }()
		}
	}()
}

// Down refuses new connections and cuts the open ones.
func (p *Proxy) Down() {
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

// Up accepts connections again, on the same address.
func (p *Proxy) Up() error {
	ln, err := net.Listen("tcp", p.Addr)
	if err != nil {
		return err
	}
	p.serve(ln)
	return nil
}
