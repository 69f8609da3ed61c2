// Package load measures request latency distributions against a running
// stack over loopback.
//
// The generator is closed loop: a fixed number of workers each send a
// request, wait for the whole answer, and send the next, so the offered load
// adapts to the server and a slow server is not buried under a queue the
// generator built. Scenarios are interleaved in rounds (A, B, then B, A, …)
// so that whatever else the machine is doing lands on every scenario
// alike, and a run is bounded both by a request count and by wall time: it
// always stops by itself.
package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Scenario is one kind of request.
type Scenario struct {
	Name string
	// Do sends one request and waits for the whole answer; an error counts
	// the request as failed and its latency is not recorded.
	Do func(ctx context.Context) error
}

// Config bounds a run.
type Config struct {
	// Requests is how many measured requests each scenario gets.
	Requests int
	// Warmup is how many unmeasured requests each scenario gets first.
	Warmup int
	// Workers is the concurrency of the closed loop.
	Workers int
	// Round is how many requests a scenario gets before the next one runs.
	Round int
	// MaxDuration bounds the measured rounds; a run that reaches it stops
	// between requests and reports the samples it has (Report.TimedOut).
	MaxDuration time.Duration
}

func (c Config) validate() error {
	switch {
	case c.Requests <= 0:
		return errors.New("load: Requests must be positive")
	case c.Workers <= 0:
		return errors.New("load: Workers must be positive")
	case c.Round <= 0:
		return errors.New("load: Round must be positive")
	case c.MaxDuration <= 0:
		return errors.New("load: MaxDuration must be positive")
	case c.Warmup < 0:
		return errors.New("load: Warmup must not be negative")
	}
	return nil
}

// Result is one scenario's measurements.
type Result struct {
	Name string
	// Latencies of the successful measured requests, sorted.
	Latencies []time.Duration
	Errors    int
	FirstErr  error
	// Busy is the wall time of this scenario's rounds.
	Busy time.Duration
}

// Percentile is the nearest-rank p-th percentile (0 < p ≤ 100) of the
// latencies; zero without samples.
func (r Result) Percentile(p float64) time.Duration {
	n := len(r.Latencies)
	if n == 0 {
		return 0
	}
	i := int(math.Ceil(p/100*float64(n))) - 1
	return r.Latencies[min(max(i, 0), n-1)]
}

// Mean is the mean latency; zero without samples.
func (r Result) Mean() time.Duration {
	if len(r.Latencies) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range r.Latencies {
		sum += d
	}
	return sum / time.Duration(len(r.Latencies))
}

// Throughput is successful requests per second of the scenario's own rounds.
func (r Result) Throughput() float64 {
	if r.Busy <= 0 {
		return 0
	}
	return float64(len(r.Latencies)) / r.Busy.Seconds()
}

// Ratio is a's p-th percentile over b's.
func Ratio(a, b Result, p float64) float64 {
	if b.Percentile(p) == 0 {
		return math.Inf(1)
	}
	return float64(a.Percentile(p)) / float64(b.Percentile(p))
}

// Report is a whole run.
type Report struct {
	Results  []Result // in the order the scenarios were given
	Rounds   int
	Elapsed  time.Duration // the measured rounds, warm-up excluded
	TimedOut bool          // MaxDuration ended the run before Requests
}

// Result returns the named scenario's result.
func (r Report) Result(name string) Result {
	for _, res := range r.Results {
		if res.Name == name {
			return res
		}
	}
	return Result{Name: name}
}

// Table renders the results as a fixed-width table.
func (r Report) Table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-24s %6s %9s %9s %9s %9s %9s %8s %6s\n", "scenario", "n", "mean", "p50", "p90", "p99", "max", "req/s", "errors")
	for _, res := range r.Results {
		fmt.Fprintf(&b, "%-24s %6d %9s %9s %9s %9s %9s %8.0f %6d\n", res.Name, len(res.Latencies),
			ms(res.Mean()), ms(res.Percentile(50)), ms(res.Percentile(90)), ms(res.Percentile(99)), ms(res.Percentile(100)),
			res.Throughput(), res.Errors)
	}
	return b.String()
}

// RatioLine renders a's p50, p90 and p99 over b's.
func (r Report) RatioLine(a, b string) string {
	ra, rb := r.Result(a), r.Result(b)
	return fmt.Sprintf("%s / %s: p50 %.2f×  p90 %.2f×  p99 %.2f×", a, b, Ratio(ra, rb, 50), Ratio(ra, rb, 90), Ratio(ra, rb, 99))
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond)) }

// Run warms every scenario up (within a MaxDuration of its own), then
// measures them in interleaved rounds until each has cfg.Requests measured
// requests or cfg.MaxDuration has passed. Failed requests are counted, not
// retried; Run itself fails only on a bad config or a cancelled ctx.
func Run(ctx context.Context, cfg Config, scenarios ...Scenario) (Report, error) {
	if err := cfg.validate(); err != nil {
		return Report{}, err
	}
	warm := time.Now().Add(cfg.MaxDuration)
	for _, s := range scenarios {
		if cfg.Warmup > 0 {
			runSlot(ctx, s, cfg.Warmup, cfg.Workers, warm)
		}
	}
	if err := ctx.Err(); err != nil {
		return Report{}, err
	}

	rep := Report{Results: make([]Result, len(scenarios))}
	for i, s := range scenarios {
		rep.Results[i].Name = s.Name
	}
	start := time.Now()
	deadline := start.Add(cfg.MaxDuration)
	order := make([]int, len(scenarios))
	for i := range order {
		order[i] = i
	}
	for {
		left := false
		for _, i := range order {
			res := &rep.Results[i]
			n := min(cfg.Round, cfg.Requests-len(res.Latencies)-res.Errors)
			if n <= 0 {
				continue
			}
			if !time.Now().Before(deadline) {
				rep.TimedOut = true
				break
			}
			left = true
			slot := runSlot(ctx, scenarios[i], n, cfg.Workers, deadline)
			res.Latencies = append(res.Latencies, slot.latencies...)
			res.Errors += slot.errors
			if res.FirstErr == nil {
				res.FirstErr = slot.firstErr
			}
			res.Busy += slot.elapsed
		}
		if err := ctx.Err(); err != nil {
			return Report{}, err
		}
		if !left || rep.TimedOut {
			break
		}
		rep.Rounds++
		slices.Reverse(order)
	}
	rep.Elapsed = time.Since(start)
	for i := range rep.Results {
		slices.Sort(rep.Results[i].Latencies)
		if len(rep.Results[i].Latencies)+rep.Results[i].Errors < cfg.Requests {
			rep.TimedOut = true
		}
	}
	return rep, nil
}

type slot struct {
	latencies []time.Duration
	errors    int
	firstErr  error
	elapsed   time.Duration
}

// runSlot sends n requests of s from workers concurrent loops. A request is
// not started after deadline or once ctx is done; one in flight finishes.
func runSlot(ctx context.Context, s Scenario, n, workers int, deadline time.Time) slot {
	var (
		next atomic.Int64
		mu   sync.Mutex
		out  slot
		wg   sync.WaitGroup
	)
	start := time.Now()
	for range min(workers, n) {
		wg.Go(func() {
			var lat []time.Duration
			var errs int
			var firstErr error
			for next.Add(1) <= int64(n) && ctx.Err() == nil && time.Now().Before(deadline) {
				t0 := time.Now()
				err := s.Do(ctx)
				d := time.Since(t0)
				if err != nil {
					errs++
					if firstErr == nil {
						firstErr = err
					}
					continue
				}
				lat = append(lat, d)
			}
			mu.Lock()
			defer mu.Unlock()
			out.latencies = append(out.latencies, lat...)
			out.errors += errs
			if out.firstErr == nil {
				out.firstErr = firstErr
			}
		})
	}
	wg.Wait()
	out.elapsed = time.Since(start)
	return out
}

// NewHTTPClient is a keep-alive client that holds an idle connection for
// every worker, so that a measured request never pays for a TCP handshake.
func NewHTTPClient(workers int) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = 2 * workers
	tr.MaxIdleConnsPerHost = 2 * workers
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// Get returns a Do that GETs url with header and reads the whole body. An
// answer other than 200, or one check refuses, is an error.
func Get(client *http.Client, url string, header http.Header, check func(*http.Response, []byte) error) func(context.Context) error {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return fmt.Errorf("GET %s: read body: %w", url, err)
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %d %s", url, resp.StatusCode, body)
		}
		if check != nil {
			if err := check(resp, body); err != nil {
				return fmt.Errorf("GET %s: %w", url, err)
			}
		}
		return nil
	}
}
