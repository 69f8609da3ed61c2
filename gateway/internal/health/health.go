// Package health reports whether the services behind the gateway serve, by
// their standard gRPC health service.
package health

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/zimmerhq/zimmer/gateway/internal/jsonhttp"
)

// Unreachable is reported for a service whose health check failed (not
// listening, timed out, no health service).
const Unreachable = "UNREACHABLE"

// Target is one service to check.
type Target struct {
	Name string
	Conn grpc.ClientConnInterface
}

// Report is the /healthz and /readyz body.
type Report struct {
	// Status is "ok" when every service is SERVING, else "unavailable": a
	// service reports NOT_SERVING while its database does not answer.
	Status   string            `json:"status"`
	Services map[string]string `json:"services"`
}

// Checker checks every target's overall health (service "").
type Checker struct {
	targets []Target
	timeout time.Duration
	logger  *slog.Logger
}

// NewChecker returns a checker giving each check at most timeout.
func NewChecker(targets []Target, timeout time.Duration, logger *slog.Logger) *Checker {
	return &Checker{targets: targets, timeout: timeout, logger: logger}
}

// Check asks every service at once.
func (c *Checker) Check(ctx context.Context) Report {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	rep := Report{Status: "ok", Services: make(map[string]string, len(c.targets))}
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for _, t := range c.targets {
		wg.Go(func() {
			state := Unreachable
			resp, err := healthpb.NewHealthClient(t.Conn).Check(ctx, &healthpb.HealthCheckRequest{})
			if err != nil {
				c.logger.WarnContext(ctx, "health check failed", "target", t.Name, "error", err)
			} else {
				state = resp.GetStatus().String()
			}
			mu.Lock()
			defer mu.Unlock()
			rep.Services[t.Name] = state
			if state != healthpb.HealthCheckResponse_SERVING.String() {
				rep.Status = "unavailable"
			}
		})
	}
	wg.Wait()
	return rep
}

// ServeHTTP answers 200 when every service serves, else 503, with the
// Report either way.
func (c *Checker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		jsonhttp.WriteError(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed on "+r.URL.Path+"; use GET")
		return
	}
	rep := c.Check(r.Context())
	status := http.StatusOK
	if rep.Status != "ok" {
		status = http.StatusServiceUnavailable
	}
	w.Header().Set("Cache-Control", "no-store")
	jsonhttp.Write(w, status, rep)
}
