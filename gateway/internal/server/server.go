// Package server is the gateway's composition root: it dials the services
// and serves REST (/api/v1), MCP (/mcp), the operator console (/console/),
// Slack's events (/slack/events), /healthz, /readyz and /openapi.json on
// one HTTP server.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"google.golang.org/grpc"

	"github.com/zimmerhq/zimmer/gateway/internal/auth"
	"github.com/zimmerhq/zimmer/gateway/internal/config"
	"github.com/zimmerhq/zimmer/gateway/internal/console"
	"github.com/zimmerhq/zimmer/gateway/internal/github"
	"github.com/zimmerhq/zimmer/gateway/internal/health"
	"github.com/zimmerhq/zimmer/gateway/internal/jsonhttp"
	"github.com/zimmerhq/zimmer/gateway/internal/mcp"
	"github.com/zimmerhq/zimmer/gateway/internal/rest"
	"github.com/zimmerhq/zimmer/gateway/internal/slack"
	"github.com/zimmerhq/zimmer/gateway/internal/supervisor"
	"github.com/zimmerhq/zimmer/gateway/internal/testboundary"
	"github.com/zimmerhq/zimmer/gateway/openapi"
	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
	notificationv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/notification/v1"
	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"
	runnerv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/runner/v1"
	"github.com/zimmerhq/zimmer/services/platform/apikey"
	"github.com/zimmerhq/zimmer/services/platform/grpcclient"
)

const (
	// HealthTimeout bounds /healthz's checks of the services.
	HealthTimeout = 2 * time.Second
	// ShutdownGrace bounds a graceful stop.
	ShutdownGrace = 10 * time.Second
)

// Server is the gateway.
type Server struct {
	logger  *slog.Logger
	conns   []*grpc.ClientConn
	mcp     *mcp.Handler
	console *console.Handler
	handler http.Handler
}

// New dials the services (lazily: nothing needs to be up yet) and builds the
// HTTP handler. Close releases the connections.
func New(ctx context.Context, cfg config.Config, logger *slog.Logger) (_ *Server, err error) {
	s := &Server{logger: logger}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()

	authn := &auth.Authenticator{Operators: apikey.Parse(cfg.APIKeys), Admins: apikey.Parse(cfg.AdminAPIKeys)}
	if authn.Open() {
		logger.Warn("ZIMMER_API_KEYS and ZIMMER_ADMIN_API_KEYS are empty: /api/v1 and /mcp accept every request WITHOUT a key, " +
			"as an admin; development only, never expose this gateway")
	}
	if cfg.InternalToken == "" {
		logger.Warn("ZIMMER_INTERNAL_TOKEN is empty: the services cannot tell the gateway from a client and refuse what it " +
			"forwards; set the token the services have")
	}

	var targets []health.Target
	var lifecycleConn, lineageConn, queueConn, runnerConn, notificationConn *grpc.ClientConn
	for _, svc := range cfg.Services() {
		// As the gateway, forwarding the principal of the request each
		// call is made for.
		conn, err := grpcclient.Dial(svc.Addr, grpcclient.AsService("gateway", cfg.InternalToken),
			grpc.WithChainUnaryInterceptor(auth.ForwardPrincipal), grpc.WithChainStreamInterceptor(auth.ForwardPrincipalStream))
		if err != nil {
			return nil, fmt.Errorf("dial %s service: %w", svc.Name, err)
		}
		s.conns = append(s.conns, conn)
		targets = append(targets, health.Target{Name: svc.Name, Conn: conn})
		switch svc.Name {
		case "lifecycle":
			lifecycleConn = conn
		case "lineage":
			lineageConn = conn
		case "queue":
			queueConn = conn
		case "runner":
			runnerConn = conn
		case "notification":
			notificationConn = conn
		}
	}
	lifecycle := lifecyclev1.NewLifecycleServiceClient(lifecycleConn)
	authn.Sessions, authn.Logger = auth.LifecycleSessions(lifecycle), logger
	provenance := lineagev1.NewProvenanceServiceClient(lineageConn)
	supervisorCreds := supervisor.Credentials{User: cfg.SupervisorUser, Password: cfg.SupervisorPassword}
	if !supervisorCreds.Enabled() {
		logger.Warn("ZIMMER_SUPERVISOR_USER/ZIMMER_SUPERVISOR_PASSWORD unset: /supervisor answers 503")
	}

	api, err := rest.NewHandler(ctx, lifecycleConn, queueConn, notificationConn, runnerConn, logger)
	if err != nil {
		return nil, err
	}
	runner := runnerv1.NewRunnerServiceClient(runnerConn)
	queue := queuev1.NewQueueServiceClient(queueConn)
	s.mcp = mcp.NewHandler(lifecycle, logger, mcp.Options{
		Version: version(), AnyHost: !authn.Open(), Provenance: provenance, Runner: runner, Queue: queue,
		Triggers:      lifecyclev1.NewTriggerServiceClient(lifecycleConn),
		Notifications: notificationv1.NewNotificationServiceClient(notificationConn),
		SessionTTL:    cfg.MCPSessionTTL, MaxSessions: cfg.MCPMaxSessions,
		// Replicas share the key, so a session outlives its replica.
		SessionKey: mcp.SessionKey(cfg.InternalToken),
	})

	mux := http.NewServeMux()
	// One check, two names: /healthz as before, and /readyz, the name a
	// load balancer or orchestrator asks for readiness by. Both answer 503
	// with the report while any service is not SERVING (its database
	// unreachable, say), so neither says ok while calls answer 503.
	checker := health.NewChecker(targets, HealthTimeout, logger)
	mux.Handle("/healthz", checker)
	mux.Handle("/readyz", checker)
	mux.Handle("/openapi.json", openAPIHandler(openapi.Spec))
	mux.Handle("/api/v1/", auth.Require(authn, api))
	// The subtrees' roots without their slash are answered here, not
	// redirected to the slash (net/http's default): the gateway never
	// redirects.
	noRoute := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		jsonhttp.WriteError(w, http.StatusNotFound, rest.NoRouteMessage(r))
	})
	mux.Handle("/api/v1", noRoute)
	// More specific than /api/v1/, so it wins over grpc-gateway's route for
	// the same path: the session composed with its queue and provenance.
	mux.Handle(rest.SessionDetailPattern, auth.Require(authn, rest.NewSessionDetail(lifecycle, provenance, queue, logger)))
	// A slug resolved through lifecycle, then the runner's transcript; with
	// ?follow=true a stream of server-sent events.
	mux.Handle(rest.TranscriptPattern, auth.Require(authn, rest.NewTranscript(lifecycle, runner, logger)))
	// A slug resolved through lifecycle, then where the runner keeps the
	// session's clone and what its archive preserved.
	mux.Handle(rest.ClonePattern, auth.Require(authn, rest.NewClone(lifecycle, runner, logger)))
	// Operator-only, behind its own Basic realm: never the fleet key. Its
	// calls carry no client principal: they are the gateway's own.
	mux.Handle("/supervisor/", supervisor.NewHandler(provenance, supervisorCreds, logger))
	mux.Handle("/supervisor", noRoute)
	if cfg.TestBoundaryToken != "" {
		// Test builds only: a stand-in for the web UI and Slack, behind its
		// own token, calling lineage as the gateway.
		if err := testboundary.Validate(cfg.TestBoundaryToken); err != nil {
			return nil, err
		}
		logger.Warn("GATEWAY_TEST_BOUNDARY_TOKEN set: serving the test-only human boundary", "route", testboundary.Route)
		mux.Handle(testboundary.Route, testboundary.NewHandler(provenance, cfg.TestBoundaryToken, logger))
	}
	// The operator console: its own sign-in (never an API key), its own
	// connections as the service "console" (never a client's principal).
	consoleHandler, err := s.newConsole(cfg, logger)
	if err != nil {
		return nil, err
	}
	s.console = consoleHandler
	mux.Handle(console.Prefix, consoleHandler)
	mux.Handle("/console", consoleHandler)
	// Slack's events: its own signature, its own connection as the service
	// "slack". Without the signing secret the route is not there (404).
	if cfg.SlackSigningSecret != "" {
		conn, err := grpcclient.Dial(cfg.NotificationAddr, grpcclient.AsService("slack", cfg.InternalToken))
		if err != nil {
			return nil, fmt.Errorf("dial notification for slack events: %w", err)
		}
		s.conns = append(s.conns, conn)
		mux.Handle(slack.Route, slack.NewHandler(cfg.SlackSigningSecret, notificationv1.NewNotificationServiceClient(conn), nil, logger.With("component", "slack")))
	} else {
		logger.Info(slack.SigningSecretEnv + " unset: " + slack.Route + " answers 404")
	}
	// GitHub's webhook: its own signature, its own connection as the
	// service "github". Without the secret the route is not there (404).
	if cfg.GitHubWebhookSecret != "" {
		conn, err := grpcclient.Dial(cfg.LifecycleAddr, grpcclient.AsService("github", cfg.InternalToken))
		if err != nil {
			return nil, fmt.Errorf("dial lifecycle for github deliveries: %w", err)
		}
		s.conns = append(s.conns, conn)
		mux.Handle(github.Route, github.NewHandler(cfg.GitHubWebhookSecret, lifecyclev1.NewLifecycleServiceClient(conn), logger.With("component", "github")))
	} else {
		logger.Info(github.SecretEnv + " unset: " + github.Route + " answers 404")
	}
	mux.Handle("/mcp", auth.Require(authn, s.mcp))
	mux.Handle("/mcp/", auth.Require(authn, s.mcp))
	mux.Handle("/", noRoute)
	// otelhttp wraps the mux itself, so it sees the pattern the mux
	// matched (http.route: a bounded label, never a raw path); the server
	// name keeps a client's Host header out of the labels. Its span is
	// the root of a request's trace (PL-26), named by method and pattern.
	measured := otelhttp.NewHandler(mux, "gateway", otelhttp.WithServerName("zimmer-gateway"),
		otelhttp.WithSpanNameFormatter(func(operation string, r *http.Request) string {
			if r.Pattern == "" {
				return r.Method + " " + operation
			}
			return r.Method + " " + r.Pattern
		}))
	s.handler = logRequests(logger, recoverPanics(logger, canonicalPaths(jsonCharset(measured))))
	logger.Info("gateway ready", "config", cfg)
	return s, nil
}

// newConsole dials the services the console calls as the service
// "console", acting as itself, from the web UI surface: no client
// principal is ever forwarded on these connections, so lineage believes
// the human boundary the console declares, and lifecycle's lines say the
// web UI acted (an archive: "moved to trash by a user in the web UI").
func (s *Server) newConsole(cfg config.Config, logger *slog.Logger) (*console.Handler, error) {
	if cfg.ConsolePasswordHash == "" {
		logger.Warn(console.PasswordHashEnv + " unset: the console (/console/) answers 503")
	}
	dial := func(addr string) (*grpc.ClientConn, error) {
		conn, err := grpcclient.Dial(addr, grpcclient.AsService("console", cfg.InternalToken),
			grpc.WithChainUnaryInterceptor(console.DeclareWebUI), grpc.WithChainStreamInterceptor(console.DeclareWebUIStream))
		if err != nil {
			return nil, fmt.Errorf("dial %s for the console: %w", addr, err)
		}
		s.conns = append(s.conns, conn)
		return conn, nil
	}
	lifecycleConn, err := dial(cfg.LifecycleAddr)
	if err != nil {
		return nil, err
	}
	queueConn, err := dial(cfg.QueueAddr)
	if err != nil {
		return nil, err
	}
	runnerConn, err := dial(cfg.RunnerAddr)
	if err != nil {
		return nil, err
	}
	lineageConn, err := dial(cfg.LineageAddr)
	if err != nil {
		return nil, err
	}
	notificationConn, err := dial(cfg.NotificationAddr)
	if err != nil {
		return nil, err
	}
	return console.New(console.Clients{
		Lifecycle:     lifecyclev1.NewLifecycleServiceClient(lifecycleConn),
		Queue:         queuev1.NewQueueServiceClient(queueConn),
		Runner:        runnerv1.NewRunnerServiceClient(runnerConn),
		Provenance:    lineagev1.NewProvenanceServiceClient(lineageConn),
		Triggers:      lifecyclev1.NewTriggerServiceClient(lifecycleConn),
		Notifications: notificationv1.NewNotificationServiceClient(notificationConn),
		SignIns:       lineagev1.NewConsoleSignInServiceClient(lineageConn),
	}, console.Options{AdminUser: cfg.AdminUser, PasswordHash: cfg.ConsolePasswordHash}, logger.With("component", "console"))
}

// Handler is the whole HTTP surface; tests serve it with httptest.
func (s *Server) Handler() http.Handler { return s.handler }

// Serve serves on lis until ctx is done, then stops gracefully: new
// connections are refused, MCP sessions closed, and requests in flight get
// ShutdownGrace to finish.
func (s *Server) Serve(ctx context.Context, lis net.Listener) error {
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.logger.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(lis) }()
	s.logger.Info("http serving", "addr", lis.Addr().String())

	select {
	case err := <-errc:
		return fmt.Errorf("serve HTTP: %w", err)
	case <-ctx.Done():
	}
	s.logger.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownGrace)
	defer cancel()
	if err := s.mcp.Shutdown(shutdownCtx); err != nil {
		s.logger.Warn("close MCP sessions", "error", err)
	}
	// Live dashboards never end by themselves: end them, and their
	// browsers reconnect to the next gateway with their Last-Event-ID.
	s.console.StopLive()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		s.logger.Warn("graceful shutdown timed out; closing connections", "error", err)
		_ = srv.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve HTTP: %w", err)
	}
	return nil
}

// Close releases the service connections and stops the MCP session
// sweeper.
func (s *Server) Close() {
	if s.mcp != nil {
		_ = s.mcp.Shutdown(context.Background())
	}
	for _, c := range s.conns {
		_ = c.Close()
	}
}

func openAPIHandler(doc []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			jsonhttp.WriteError(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed on /openapi.json; use GET")
			return
		}
		jsonhttp.WriteRaw(w, http.StatusOK, doc)
	})
}

// version is the module version the binary was built from, for MCP's
// serverInfo.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// statusRecorder remembers the status a handler answered. It keeps
// streaming working (Flush) and exposes the writer underneath (Unwrap) for
// http.ResponseController.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// jsonCharset makes every JSON answer say its charset, whoever wrote it:
// the gateway's own answers already do (jsonhttp.ContentType); MCP's
// library writes a bare "application/json".
func jsonCharset(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&charsetWriter{ResponseWriter: w}, r)
	})
}

// charsetWriter adds the charset to a bare JSON Content-Type when the
// header is written.
type charsetWriter struct {
	http.ResponseWriter
	wrote bool
}

func (w *charsetWriter) WriteHeader(code int) {
	if !w.wrote {
		w.wrote = true
		if h := w.Header(); h.Get("Content-Type") == "application/json" {
			h.Set("Content-Type", jsonhttp.ContentType)
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *charsetWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

func (w *charsetWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *charsetWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// logRequests logs one line per request; health checks only at debug.
func logRequests(logger *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		level := slog.LevelInfo
		switch {
		case (r.URL.Path == "/healthz" || r.URL.Path == "/readyz") && rec.status == http.StatusOK:
			level = slog.LevelDebug
		case rec.status >= 500:
			level = slog.LevelWarn
		}
		logger.Log(r.Context(), level, "http request",
			"method", r.Method, "path", r.URL.Path, "status", rec.status,
			"duration_ms", time.Since(start).Milliseconds(), "remote_addr", r.RemoteAddr)
	})
}

// recoverPanics answers 500 instead of dropping the connection, and logs
// the panic with its stack.
func recoverPanics(logger *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler { //nolint:errorlint // sentinel panic value, compared as net/http does
					panic(p)
				}
				logger.ErrorContext(r.Context(), "panic in HTTP handler", "method", r.Method, "path", r.URL.Path,
					"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				jsonhttp.WriteError(w, http.StatusInternalServerError, "internal error")
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// Listen opens the TCP listener; "127.0.0.1:0" picks a free port.
func Listen(addr string) (net.Listener, error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen for HTTP on %s: %w", addr, err)
	}
	return lis, nil
}
