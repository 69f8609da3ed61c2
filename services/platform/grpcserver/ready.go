package grpcserver

import (
	"context"
	"sync"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// Readiness timings: how often a serving server checks what it needs, and
// how long one check may take. A database that stops answering turns the
// health NOT_SERVING within about ProbeInterval+ProbeTimeout.
const (
	ProbeInterval = time.Second
	ProbeTimeout  = 2 * time.Second
)

// LivenessService is the health service name that answers SERVING while
// the server serves, whatever its probes say: an orchestrator's liveness
// check asks for it (deploy/k8s), so that a database outage makes the
// service unready (the overall health, "") without getting it restarted,
// which would not bring the database back.
const LivenessService = "zimmer.liveness"

// Probe checks one thing the service cannot answer without (its database);
// a nil error means it is there.
type Probe struct {
	Name  string
	Check func(context.Context) error
}

// AddProbe makes the server's health depend on p: while Serve runs, the
// overall health ("") is SERVING only while every probe passes, so the
// gateway's /healthz and /readyz tell the truth during an outage instead
// of reporting a server that answers every call with Unavailable as
// serving. Add probes before Serve.
func (s *Server) AddProbe(p Probe) {
	s.probes = append(s.probes, p)
}

// watchProbes checks the probes now and every interval until ctx is done,
// setting the health status from the result and logging each change.
func (s *Server) watchProbes(ctx context.Context, interval, timeout time.Duration) {
	if len(s.probes) == 0 {
		return
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	serving := true
	for {
		failed, err := s.checkProbes(ctx, timeout)
		if ctx.Err() != nil {
			return
		}
		switch {
		case err != nil && serving:
			s.logger.Error("not serving: a dependency does not answer", "dependency", failed, "error", err)
			s.Health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
		case err == nil && !serving:
			s.logger.Info("serving again: every dependency answers")
			s.Health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
		}
		serving = err == nil
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// checkProbes runs every probe at once and returns the first failure.
func (s *Server) checkProbes(ctx context.Context, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var (
		mu     sync.Mutex
		wg     sync.WaitGroup
		failed string
		first  error
	)
	for _, p := range s.probes {
		wg.Go(func() {
			if err := p.Check(ctx); err != nil {
				mu.Lock()
				defer mu.Unlock()
				if first == nil {
					failed, first = p.Name, err
				}
			}
		})
	}
	wg.Wait()
	return failed, first
}
