// Package service is the notification's composition root, the only package that
// knows every adapter; main and the component tests build the service here.
package service

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"

	"go.temporal.io/sdk/client"

	"github.com/zimmerhq/zimmer/services/notification/internal/app"
	"github.com/zimmerhq/zimmer/services/notification/internal/clients"
	"github.com/zimmerhq/zimmer/services/notification/internal/config"
	"github.com/zimmerhq/zimmer/services/notification/internal/grpcapi"
	"github.com/zimmerhq/zimmer/services/notification/internal/pager"
	"github.com/zimmerhq/zimmer/services/notification/internal/push"
	"github.com/zimmerhq/zimmer/services/notification/internal/sink"
	"github.com/zimmerhq/zimmer/services/notification/internal/slack"
	"github.com/zimmerhq/zimmer/services/notification/internal/store"
	"github.com/zimmerhq/zimmer/services/platform/clock"
	"github.com/zimmerhq/zimmer/services/platform/host"
	"github.com/zimmerhq/zimmer/services/platform/inbox"
	"github.com/zimmerhq/zimmer/services/platform/outbox"
	"github.com/zimmerhq/zimmer/services/platform/periodic"
	"github.com/zimmerhq/zimmer/services/platform/pgdb"
	"github.com/zimmerhq/zimmer/services/platform/temporalx"
)

// Name is the service's name: its log field, Temporal task queue
// (zimmer-notification) and default database (zimmer_notification).
const Name = "notification"

// MigrationSets is the notification database's schema, in the order it is applied.
var MigrationSets = []pgdb.MigrationSet{inbox.Migrations, outbox.Migrations, store.Migrations}

// Service is a runnable notification service: the platform host (Run, Close, Addr,
// and the Pool and Temporal client tests reach for) with the notification's
// adapters registered on it.
type Service struct {
	*host.Host
	Alerts        app.Alerts
	Notifications app.Notifications
	Slack         app.Slack
}

// New migrates the database, opens the pool, listens for gRPC, connects the
// Temporal worker when cfg names a server, dials lifecycle (lazily: it need
// not be up yet), and registers the notification API and the consumer of
// lifecycle's notification effects. Run starts it; Close releases it. An
// AlertDedupWindow of zero means domain.DefaultDedupWindow.
//
// With Temporal, an opened alert pages through a workflow delivering to
// every sink of the alert route (pager.Temporal), and a notification is
// pushed through one delivering to every sink of the push route, a pause's
// after its debounce (package push). Without it, or when a page workflow
// cannot start, an alert pages to the log (pager.Log); pushes go to the log
// (push.Log) and a pause's push is refused as unavailable, so lifecycle
// keeps the effect until a service with Temporal takes it. With Temporal,
// the schedule notification-redrive starts every page and push whose start
// failed or was lost (RedrivePolicy).
func New(ctx context.Context, cfg config.Config, logger *slog.Logger) (*Service, error) {
	routes, err := sink.New(cfg.Sinks, logger)
	if err != nil {
		return nil, err
	}
	h, err := host.New(ctx, Name, cfg.Config, logger, MigrationSets...)
	if err != nil {
		return nil, err
	}
	svc := &Service{Host: h}
	if err := svc.wire(ctx, cfg, routes, logger); err != nil {
		h.Close()
		return nil, err
	}
	return svc, nil
}

func (s *Service) wire(ctx context.Context, cfg config.Config, routes sink.Routes, logger *slog.Logger) error {
	lifecycleConn, err := s.Dial(cfg.LifecycleAddr)
	if err != nil {
		return err
	}
	queueConn, err := s.Dial(cfg.QueueAddr)
	if err != nil {
		return err
	}
	lineageConn, err := s.Dial(cfg.LineageAddr)
	if err != nil {
		return err
	}
	repo := store.NewNotifications(s.Pool)
	alerts := store.NewAlerts(s.Pool)
	sessions := clients.NewLifecycle(lifecycleConn)
	slackRepo := store.NewSlack(s.Pool)
	sessionURL := func(id int64) string { return cfg.ConsoleURL + "sessions/" + strconv.FormatInt(id, 10) }
	var slackAPI app.SlackWebAPI
	if cfg.SlackBotToken != "" {
		slackAPI = slack.Client{BaseURL: cfg.SlackAPIURL, Token: cfg.SlackBotToken, HTTP: &http.Client{Timeout: cfg.Sinks.Timeout}}
		// A Slack-started session's pushes also go into its thread.
		routes.Push = append(routes.Push, slack.ThreadSink{Post: app.PostToThread{Repo: slackRepo, API: slackAPI}, SessionURL: sessionURL})
	}
	var slackEvents app.SlackEventStarter
	var (
		page      app.Pager  = pager.Log{Logger: logger}
		pusher    app.Pusher = push.Log{Logger: logger, Pushed: app.MarkPushed{Repo: repo, Clock: clock.System{}}.Handle}
		debouncer app.Debouncer
		// redrivePage starts the pages the re-drive finds unstarted: the
		// raise's pager without its fallback to the log, which paged them
		// at the raise already.
		redrivePage app.Pager
		worker      = Name
	)
	if s.Worker != nil {
		if cfg.WorkerName != "" {
			worker = cfg.WorkerName
			s.Worker = temporalx.NewWorker(s.Temporal, worker)
		}
		starts := s.Temporal
		if cfg.BeforeStart != nil {
			starts = hookedStarts{Client: s.Temporal, before: cfg.BeforeStart}
		}
		pager.Register(s.Worker, routes.Alert)
		page = pager.NewTemporal(starts, worker, routes.Alert, page, logger)
		redrivePage = pager.NewTemporal(starts, worker, routes.Alert, nil, logger)
		starter := push.NewStarter(starts, temporalx.TaskQueue(worker), routes.Push, cfg.NeedsInputDebounce)
		pusher, debouncer = starter, starter
		slackEvents = slack.Starter{Client: starts, TaskQueue: temporalx.TaskQueue(worker)}
	}
	s.Alerts = app.NewAlerts(alerts, page, clock.System{}, cfg.AlertDedupWindow)
	s.Notifications = app.NewNotifications(repo, sessions, pusher, debouncer, clock.System{})
	s.Slack = app.Slack{
		Triggers: app.SlackTriggers{Repo: slackRepo, Clock: clock.System{}},
		Accept:   app.AcceptSlackEvent{Repo: slackRepo, Starter: slackEvents, Clock: clock.System{}},
	}
	if s.Worker != nil {
		slack.Register(s.Worker, &slack.Activities{Process: app.ProcessSlackEvent{
			Repo: slackRepo, Boundary: clients.NewSlackBoundary(lifecycleConn, queueConn, lineageConn),
			API: slackAPI, SessionURL: sessionURL, Clock: clock.System{},
		}, Raise: s.Alerts.Raise})
		push.Register(s.Worker, &push.Activities{NeedsInput: s.Notifications.NeedsInput, Pushed: s.Notifications.Pushed, Sinks: routes.Push})
		redrive := app.NewRedrive(alerts, repo, redrivePage, pusher, clock.System{})
		if err := periodic.SetupSweep(ctx, s.Temporal, s.Worker, worker, RedriveSweep(redrive)); err != nil {
			return fmt.Errorf("schedule the re-drive of unstarted pages and pushes: %w", err)
		}
	}
	grpcapi.NewServer(s.Alerts, s.Notifications, s.Slack, logger).Register(s.GRPC.Server)
	grpcapi.NewConsumer(s.Notifications, logger).Register(s.GRPC.Server)
	return nil
}

// redrive names the re-drive's periodic sweep.
const redriveSweep = "redrive"

// RedriveScheduleID names the re-drive's schedule of the service whose
// worker is named worker: notification-redrive.
func RedriveScheduleID(worker string) string { return periodic.ScheduleID(worker, redriveSweep) }

// RedriveSweep runs the re-drive as a periodic sweep: every
// app.RedriveAfter on the worker's task queue, each run starting the pages
// and pushes unstarted since before its time minus app.RedriveAfter (its
// result counts the starts). A page or push whose start failed, or was
// lost with the process, is thus started within about two minutes.
func RedriveSweep(starts app.RedriveStarts) periodic.Sweep {
	return periodic.Sweep{Name: redriveSweep, Window: app.RedriveAfter, Did: "started", Run: starts.Handle}
}

// hookedStarts is the Temporal client with config.BeforeStart in front of
// each workflow start (tests).
type hookedStarts struct {
	client.Client
	before func(workflowID string) error
}

// ExecuteWorkflow fails the start when before says so.
func (c hookedStarts) ExecuteWorkflow(ctx context.Context, options client.StartWorkflowOptions, workflow any, args ...any) (client.WorkflowRun, error) {
	if err := c.before(options.ID); err != nil {
		return nil, err
	}
	return c.Client.ExecuteWorkflow(ctx, options, workflow, args...)
}
