// Package service is the lifecycle composition root: the only package that
// knows every adapter.
package service

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"time"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	notificationv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/notification/v1"
	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"
	runnerv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/runner/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/app"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/clients"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/config"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/events"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/github"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/grpcapi"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/prwatch"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/store"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/wake"
	"github.com/zimmerhq/zimmer/services/platform/alert"
	"github.com/zimmerhq/zimmer/services/platform/clock"
	"github.com/zimmerhq/zimmer/services/platform/host"
	"github.com/zimmerhq/zimmer/services/platform/inbox"
	"github.com/zimmerhq/zimmer/services/platform/outbox"
	"github.com/zimmerhq/zimmer/services/platform/periodic"
	"github.com/zimmerhq/zimmer/services/platform/pgdb"
	"github.com/zimmerhq/zimmer/services/platform/retention"
)

// Name is the service's name: its task queue, log field and database suffix.
const Name = "lifecycle"

// MigrationSets is the lifecycle database's schema, in order.
var MigrationSets = []pgdb.MigrationSet{inbox.Migrations, outbox.Migrations, store.Migrations}

// DefaultDeliveryRetention is how long the record of a delivery is kept
// when the configuration names no retention (LIFECYCLE_DELIVERY_RETENTION).
const DefaultDeliveryRetention = 7 * 24 * time.Hour

// DefaultStaleSweepInterval is how often the stale-session sweep runs when
// the configuration names no interval (LIFECYCLE_STALE_SWEEP_INTERVAL).
const DefaultStaleSweepInterval = time.Hour

// DefaultElicitationSweepInterval is how often the expired-elicitation
// sweep runs when the configuration names no interval: the spec's 5 minutes.
const DefaultElicitationSweepInterval = 5 * time.Minute

// DefaultHeartbeatSweepInterval is how often the heartbeat sweep runs when
// the configuration names no interval: the spec's 30 s.
const DefaultHeartbeatSweepInterval = 30 * time.Second

// DefaultSpotSweepInterval is how often the spot scheduler's backstop pass
// runs when the configuration names no interval.
const DefaultSpotSweepInterval = 30 * time.Second

// Service is a runnable lifecycle service.
type Service struct {
	*host.Host
	Sessions app.Sessions
	// Credentials mint, revoke and authenticate session credentials.
	Credentials app.Credentials
	// Triggers arm, list and cancel wake-ups, and refresh sessions.
	Triggers app.Triggers
	// Slots are the turn slots and the spot scheduler.
	Slots app.Slots
	// Relays deliver lifecycle's events, one per subscriber listed in
	// LIFECYCLE_EFFECT_CONSUMERS, each through SessionEventConsumerService.
	Relays map[string]*outbox.Relay

	signal *outbox.Signal
}

// New assembles the service; Run starts it.
func New(ctx context.Context, cfg config.Config, logger *slog.Logger) (*Service, error) {
	h, err := host.New(ctx, Name, cfg.Config, logger, MigrationSets...)
	if err != nil {
		return nil, err
	}
	// Commits wake this process's relays directly; relays in other
	// processes find the messages by polling.
	signal := &outbox.Signal{}
	repo := store.NewSessions(h.Pool, events.Codec{}, signal, logger)
	if err := observeSessions(repo, logger); err != nil {
		h.Close()
		return nil, err
	}
	svc := &Service{Host: h, signal: signal, Sessions: app.NewSessions(repo, clock.System{}, cfg.TrashRetention),
		Credentials: app.NewCredentials(repo, clock.System{})}
	svc.Sessions.Elicitations.Logger = logger
	if cfg.RunnerAddr != "" {
		// A pause or an archive of a running session halts its turn first.
		conn, err := h.Dial(cfg.RunnerAddr)
		if err != nil {
			h.Close()
			return nil, err
		}
		runner := clients.Runner{Client: runnerv1.NewRunnerServiceClient(conn), Timeout: cfg.RunnerTimeout}
		svc.Sessions.Transition.Turns = runner
		svc.Sessions.Transition.Clones = runner
		svc.Sessions.Elicitations.Answerer = runner
		svc.Sessions.List.Transcripts = runner
	}
	// Without a queue, a wake is lifecycle's own delivery to the session
	// once it is idle.
	var wakes app.WakeDelivery = app.LocalWakeDelivery{Deliver: svc.Sessions.Deliver}
	// Without a queue nothing can be pending, so the heartbeat asks nobody;
	// and no pull request's notice can be sent, so none is watched.
	var (
		pending app.PendingMessages
		notices app.NoticeQueue
	)
	if cfg.QueueAddr != "" {
		// An archive (not the raw event) asks the queue's guard first.
		conn, err := h.Dial(cfg.QueueAddr)
		if err != nil {
			h.Close()
			return nil, err
		}
		q := clients.Queue{Client: queuev1.NewQueueServiceClient(conn), Timeout: cfg.QueueTimeout}
		svc.Sessions.Transition.Queue = q
		// A wake's prompt goes through the queue's FollowUp: a turn for an
		// idle session, queued behind a running one's.
		wakes = q
		pending = q
		notices = q
	}
	// After the runner's client: Pause Until halts a running turn first.
	svc.Triggers = app.NewTriggers(repo, svc.Sessions)
	// Other contexts' lines for the sessions' timelines, which lifecycle
	// owns: lineage's events (uncle edges recorded or inverted) and the
	// runner's notes (what became of a clone).
	externalLines := app.AppendExternalTimelineLines{Repo: repo, Clock: clock.System{}}
	// Closed when the service stops, which ends every WatchSessionChanges.
	stopping := make(chan struct{})
	h.Go(func(ctx context.Context) error { <-ctx.Done(); close(stopping); return nil })
	// The turn slots and the spot scheduler (LC-36): the runner asks a slot
	// before each turn's process and gives it back after; each of those,
	// an edit of class or precedence and the schedule below run a pass.
	svc.Slots = app.Slots{Repo: store.NewSlots(h.Pool, cfg.TurnSlots), Clock: clock.System{},
		Transition: svc.Sessions.Transition, Logger: logger}
	if err := observeSlots(svc.Slots, logger); err != nil {
		h.Close()
		return nil, err
	}
	api := grpcapi.NewServer(svc.Sessions, app.ExperimentalSettings{Repo: repo}, logger).WithSlots(svc.Slots).
		WithCredentials(svc.Credentials).WithTriggers(svc.Triggers).
		WithRecoveryCandidates(app.ListRecoveryCandidates{Candidates: repo}).WithExternalLines(externalLines).
		WithSessionChanges(app.WatchSessionChanges{Feed: repo, Stopping: stopping}).
		WithCategories(app.Categories{Repo: repo, Clock: clock.System{}},
			app.Inference{Sessions: repo, Categories: repo, Clock: clock.System{}})
	// The sessions' pull requests are recorded always, watched only with
	// GitHub configured (below); the watcher is set there.
	recordPR := app.RecordPullRequest{Repo: repo, Clock: clock.System{}}
	githubDeliveries := app.AcceptGitHubDelivery{Repo: repo, Clock: clock.System{}}
	watchAgain := &app.WatchAgain{Repo: repo}
	api.Register(h.GRPC.Server)
	api.RegisterTriggers(h.GRPC.Server)
	grpcapi.NewLineageConsumer(externalLines, logger).Register(h.GRPC.Server)

	if cfg.AlertAfterAttempts <= 0 {
		cfg.AlertAfterAttempts = 3
	}
	reporter := clients.FailureReporter{Alerts: alert.Log{Logger: logger}, After: cfg.AlertAfterAttempts, Logger: logger}
	if cfg.NotificationAddr != "" {
		conn, err := h.Dial(cfg.NotificationAddr)
		if err != nil {
			h.Close()
			return nil, err
		}
		reporter.Alerts = alert.Notification{Client: notificationv1.NewNotificationServiceClient(conn)}
	}
	svc.Relays = map[string]*outbox.Relay{}
	for subscriber, addr := range cfg.EffectConsumers {
		if subscriber == events.SubscriberTriggers {
			// Lifecycle's own timers consume these, in-process (below).
			logger.Warn("LIFECYCLE_EFFECT_CONSUMERS lists the triggers subscriber; lifecycle delivers its events itself, so the entry is ignored",
				"addr", addr)
			continue
		}
		conn, err := h.Dial(addr)
		if err != nil {
			h.Close()
			return nil, err
		}
		deliver := clients.ConsumerDeliverer{Client: lifecyclev1.NewSessionEventConsumerServiceClient(conn)}.Deliver
		svc.Relays[subscriber] = svc.relay(subscriber, deliver, cfg, reporter)
	}
	// An unarchive's pull request watches, in-process (LC-39): without
	// GitHub configured the events are taken and nothing is watched.
	svc.Relays[events.SubscriberPullRequestWatches] = svc.relay(events.SubscriberPullRequestWatches,
		prwatch.Again{WatchAgain: watchAgain}.Deliver, cfg, reporter)
	if cfg.SpotSweepInterval <= 0 {
		cfg.SpotSweepInterval = DefaultSpotSweepInterval
	}
	if h.Temporal != nil {
		// The triggers' timers: each armed trigger's Wake workflow is
		// started from the outbox event its arming committed, so a crash
		// between the commit and the start loses nothing. Without
		// Temporal the events wait in the outbox until a lifecycle with
		// Temporal delivers them.
		starter, err := wake.Install(h.Temporal, h.Worker, Name,
			app.FireTrigger{Repo: repo, Clock: clock.System{}, Delivery: wakes})
		if err != nil {
			h.Close()
			return nil, err
		}
		svc.Relays[events.SubscriberTriggers] = svc.relay(events.SubscriberTriggers, starter.Deliver, cfg, reporter)
		if cfg.DeliveryRetention <= 0 {
			cfg.DeliveryRetention = DefaultDeliveryRetention
		}
		if cfg.StaleSweepInterval <= 0 {
			cfg.StaleSweepInterval = DefaultStaleSweepInterval
		}
		if cfg.StaleAfter <= 0 {
			cfg.StaleAfter = domain.DefaultStaleAfter
		}
		if cfg.ElicitationSweepInterval <= 0 {
			cfg.ElicitationSweepInterval = DefaultElicitationSweepInterval
		}
		if cfg.ElicitationExpiry <= 0 {
			cfg.ElicitationExpiry = domain.DefaultElicitationExpiry
		}
		elicitations := app.ExpireElicitationBlocks{Repo: repo, Candidates: repo, Clock: clock.System{},
			Expiry: cfg.ElicitationExpiry, Logger: logger}
		if cfg.HeartbeatSweepInterval <= 0 {
			cfg.HeartbeatSweepInterval = DefaultHeartbeatSweepInterval
		}
		heartbeat := app.NudgeHeartbeats{Repo: repo, Candidates: repo, Clock: clock.System{},
			TrashRetention: svc.Sessions.Transition.TrashRetention, Queue: pending, Logger: logger}
		stale := app.ArchiveStaleSessions{Repo: repo, Candidates: repo, Clock: clock.System{},
			TrashRetention: svc.Sessions.Transition.TrashRetention, After: cfg.StaleAfter, Logger: logger}
		for _, p := range []retention.Policy{
			outbox.RetentionPolicy(h.Pool, cfg.OutboxRetention),
			// lifecycle-deliveries-retention: a delivery's record answers
			// its retries, which come within minutes, for a week.
			{Name: "deliveries", Keep: cfg.DeliveryRetention, Prune: repo.PruneDeliveries},
			// lifecycle-github-deliveries-retention: GitHub redelivers
			// within days; a replay after that only reads a PR again.
			{Name: "github-deliveries", Keep: cfg.DeliveryRetention, Prune: repo.PruneGitHubDeliveries},
		} {
			if err := retention.Setup(ctx, h.Temporal, h.Worker, Name, p); err != nil {
				h.Close()
				return nil, err
			}
		}
		// The sweeps act on what has been left too long
		// (docs/architecture.md, "Sweeps").
		for _, s := range []periodic.Sweep{
			{Name: "stale-sessions", Window: cfg.StaleAfter, Every: cfg.StaleSweepInterval,
				Did: "archived", Run: stale.ArchiveUntouchedSince},
			{Name: "expired-elicitations", Window: cfg.ElicitationExpiry, Every: cfg.ElicitationSweepInterval,
				Did: "expired", Run: elicitations.ExpireBlockedSince},
			// The window is the shortest heartbeat interval: no session
			// that came to rest within it can be due.
			{Name: "heartbeat", Window: domain.MinHeartbeatSeconds * time.Second, Every: cfg.HeartbeatSweepInterval,
				Did: "nudged", Run: heartbeat.NudgeRestingSince},
			// lifecycle-spot-queue: the spot scheduler's backstop pass. A
			// freed slot runs one at once; this one takes abandoned slots
			// back and catches a pass that failed (LC-36).
			{Name: "spot-queue", Window: cfg.SpotSweepInterval, Every: cfg.SpotSweepInterval,
				Did: "granted or resumed", Run: func(ctx context.Context, _ time.Time) (int64, error) {
					n, err := svc.Slots.RunPass(ctx)
					return int64(n), err
				}},
		} {
			if err := periodic.SetupSweep(ctx, h.Temporal, h.Worker, Name, s); err != nil {
				h.Close()
				return nil, err
			}
		}
		if err := installPullRequestWatch(h, cfg, repo, notices, &recordPR, &githubDeliveries, watchAgain, logger); err != nil {
			h.Close()
			return nil, err
		}
	}
	api.WithPullRequests(recordPR, githubDeliveries)
	// The backlog of every relay's subscriber, at zero too (PL-24).
	if err := outbox.ObserveBacklog(h.Pool, Name, slices.Sorted(maps.Keys(svc.Relays)), logger); err != nil {
		h.Close()
		return nil, err
	}
	return svc, nil
}

// installPullRequestWatch runs the watches of the sessions' pull requests
// (LC-34) when GitHub is configured and a queue takes their notices, and
// starts, once at start, every watch that should run.
func installPullRequestWatch(h *host.Host, cfg config.Config, repo *store.Sessions, notices app.NoticeQueue,
	record *app.RecordPullRequest, deliveries *app.AcceptGitHubDelivery, again *app.WatchAgain, logger *slog.Logger,
) error {
	switch {
	case !cfg.GitHub.Enabled():
		logger.Info("neither GITHUB_TOKEN nor GITHUB_APP_ID set: pull requests are recorded, not watched")
		return nil
	case notices == nil:
		logger.Warn("GitHub configured but no queue (LIFECYCLE_QUEUE_ADDR=none): pull requests are recorded, not watched")
		return nil
	}
	var tokens github.TokenSource = github.StaticToken(cfg.GitHub.Token)
	if a := cfg.GitHub.App; a.Configured() {
		key, err := github.ParsePrivateKey(a.PrivateKeyPEM)
		if err != nil {
			return fmt.Errorf("GITHUB_APP_PRIVATE_KEY_FILE: %w", err)
		}
		tokens = &github.AppInstallation{BaseURL: cfg.GitHub.APIURL, AppID: a.ID, InstallationID: a.InstallationID, Key: key,
			HTTP: &http.Client{Timeout: cfg.GitHub.Timeout}}
	}
	read := app.ReadPullRequest{Repo: repo, GitHub: github.NewClient(cfg.GitHub.APIURL, tokens, cfg.GitHub.Timeout),
		Notices: notices, Clock: clock.System{}}
	watcher, err := prwatch.Install(h.Temporal, h.Worker, Name, read, cfg.GitHub.PollInterval)
	if err != nil {
		return err
	}
	record.Watcher, deliveries.Watcher, again.Watcher = watcher, watcher, watcher
	h.Go(func(ctx context.Context) error {
		n, err := app.WatchAll(ctx, repo, watcher)
		if err != nil {
			// Each watch starts again with its session's next record; the
			// service is not failed for it.
			logger.ErrorContext(ctx, "start the pull requests' watches", "error", err)
			return nil
		}
		logger.InfoContext(ctx, "pull requests watched", "count", n, "poll_interval", cfg.GitHub.PollInterval)
		return nil
	})
	return nil
}

// independentAggregates are the subscribers to which one aggregate's events
// never wait on another's: the runner's turns (each session's workflow
// orders its own) and the triggers' timers (each trigger's Wake workflow).
// Their relays may hand cfg.TurnRelayConcurrency aggregates over at once
// (default one): on a persistence that takes concurrent workflow starts, a
// burst of creations is then not paced by one SignalWithStart at a time
// (docs/temporal.md). The lineage's and the effects' subscribers keep the
// serial, id-ordered relay: a child's events may assume its parent's
// arrived first.
var independentAggregates = map[string]bool{events.SubscriberRunnerTurns: true, events.SubscriberTriggers: true}

// relay runs an outbox relay for one subscriber for the life of the service.
func (s *Service) relay(subscriber string, deliver outbox.DeliverFunc, cfg config.Config, reporter clients.FailureReporter) *outbox.Relay {
	r := &outbox.Relay{
		Pool:         s.Pool,
		Subscriber:   subscriber,
		Deliver:      deliver,
		Signal:       s.signal,
		OnFailure:    reporter.OnFailure,
		OnDead:       outbox.DeadLetterAlert(Name, reporter.Alerts, s.Logger),
		Logger:       s.Logger,
		PollInterval: cfg.RelayPollInterval,
		DeadAfter:    cfg.DeadAfterAttempts,
	}
	if independentAggregates[subscriber] {
		r.Concurrency = cfg.TurnRelayConcurrency
	}
	s.Go(r.Run)
	return r
}
