// Package debughttp serves a process's diagnostics — net/http/pprof — on
// a listener of its own, bound to loopback, off unless its variable is set
// (<SERVICE>_DEBUG_ADDR). It is never mounted on a service's gRPC port or
// the gateway's public HTTP server, so no client key or route reaches it
// (PL-23 in docs/contexts/platform.md, which also says where issue 30's
// metrics go).
package debughttp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"time"
)

// ParseAddr checks the value of variable (e.g. RUNNER_DEBUG_ADDR) and
// returns the address to listen on: "" stays "" (the listener is off), an
// empty host becomes 127.0.0.1 (":6060" → "127.0.0.1:6060"), and any host
// but a loopback one is refused — a profile shows the process's memory and
// costs its CPU, so it is reached through the machine (ssh, kubectl
// port-forward), never over the network.
func ParseAddr(variable, value string) (string, error) {
	if value == "" {
		return "", nil
	}
	host, port, err := net.SplitHostPort(value)
	if err != nil {
		return "", fmt.Errorf("%s %q: want a loopback host:port, e.g. 127.0.0.1:6060 (127.0.0.1:0 picks a free port)", variable, value)
	}
	if p, err := net.LookupPort("tcp", port); err != nil || p < 0 || p > 65535 || port == "" {
		return "", fmt.Errorf("%s %q: the port %q is not a number from 0 to 65535", variable, value, port)
	}
	switch host {
	case "":
		host = "127.0.0.1"
	case "localhost":
	default:
		ip, err := netip.ParseAddr(host)
		if err != nil || !ip.IsLoopback() {
			return "", fmt.Errorf("%s %q: the debug listener binds only loopback (127.0.0.1, ::1 or localhost), "+
				"never %q; reach it through the machine (ssh, kubectl port-forward)", variable, value, host)
		}
	}
	return net.JoinHostPort(host, port), nil
}

// Handler serves net/http/pprof under /debug/pprof/ on a mux of its own
// (the package's import registers the same handlers on
// http.DefaultServeMux, which no Zimmer server uses).
func Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// Server is a started side listener: the debug listener, or the metrics
// one (package metrics), each on an address of its own.
type Server struct {
	lis     net.Listener
	name    string // "debug listener", "metrics listener"
	serves  string // "pprof", "metrics": for the log line
	path    string
	handler http.Handler
	logger  *slog.Logger
}

// Listen binds addr (checked by ParseAddr) for pprof. Listening before
// serving lets a bad or taken address fail the process's start, not a
// goroutine later.
func Listen(addr string, logger *slog.Logger) (*Server, error) {
	return ListenFor(addr, "debug listener", "pprof", "/debug/pprof/", Handler(), logger)
}

// ListenFor binds addr for handler, a listener named name that serves
// what under path (for its log line and errors).
func ListenFor(addr, name, serves, path string, handler http.Handler, logger *slog.Logger) (*Server, error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen for the %s on %s: %w", name, addr, err)
	}
	return &Server{lis: lis, name: name, serves: serves, path: path, handler: handler, logger: logger}, nil
}

// Addr is where it listens (the free port 127.0.0.1:0 picked, too).
func (s *Server) Addr() string { return s.lis.Addr().String() }

// Serve answers until ctx is done. A CPU profile or a trace holds its
// request for its whole duration (seconds=30), so the stop closes the
// listener and its connections rather than waiting.
func (s *Server) Serve(ctx context.Context) error {
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.logger.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(s.lis) }()
	s.logger.Info(s.name+" serving "+s.serves, "addr", s.Addr(), "path", s.path)
	select {
	case err := <-errc:
		return fmt.Errorf("serve the %s: %w", s.name, err)
	case <-ctx.Done():
	}
	if err := srv.Close(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("close the %s: %w", s.name, err)
	}
	return nil
}

// Close releases the listener of a server that never served.
func (s *Server) Close() { _ = s.lis.Close() }
