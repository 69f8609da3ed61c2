package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"time"

	"github.com/google/uuid"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/zimmerhq/zimmer/services/platform/retention"
	"github.com/zimmerhq/zimmer/services/runner/internal/agent"
	"github.com/zimmerhq/zimmer/services/runner/internal/clients"
	"github.com/zimmerhq/zimmer/services/runner/internal/config"
	"github.com/zimmerhq/zimmer/services/runner/internal/grpcapi"
	"github.com/zimmerhq/zimmer/services/runner/internal/process"
	"github.com/zimmerhq/zimmer/services/runner/internal/store"
	"github.com/zimmerhq/zimmer/services/runner/internal/transcript"
	rw "github.com/zimmerhq/zimmer/services/runner/internal/workflow"
	"github.com/zimmerhq/zimmer/services/runner/internal/workspace"
)

// NewNode is New plus the turns: the session workflows and the shared
// activities on zimmer-runner (the drain as their local activity, calling
// the queue at cfg.QueueAddr), this node's PrepareWorkspace and RunTurn on
// zimmer-runner-<node>, and the consumer of lifecycle's turn requests
// (runner_turns). Without Temporal (component tests) it is New.
func NewNode(ctx context.Context, cfg config.Config, logger *slog.Logger) (*Service, error) {
	svc, err := New(ctx, cfg.Config, logger)
	if err != nil {
		return nil, err
	}
	if svc.Temporal == nil {
		return svc, nil
	}
	keep := retention.Policy{Name: "transcripts", Keep: cfg.TranscriptRetention,
		Prune: func(ctx context.Context, cutoff time.Time) (int64, error) {
			return store.NewTranscripts(svc.Pool, transcript.DefaultLimits).Prune(ctx, cutoff, 1000)
		}}
	if err := retention.Setup(ctx, svc.Temporal, svc.Worker, Name, keep); err != nil {
		svc.Close()
		return nil, err
	}
	turnRecords := retention.Policy{Name: "account-turns", Keep: config.TurnRecordRetention(cfg.Accounts),
		Prune: func(ctx context.Context, cutoff time.Time) (int64, error) {
			return store.NewAccounts(svc.Pool).PruneTurns(ctx, cutoff, 1000)
		}}
	if err := retention.Setup(ctx, svc.Temporal, svc.Worker, Name, turnRecords); err != nil {
		svc.Close()
		return nil, err
	}
	if err := svc.runTurns(ctx, cfg); err != nil {
		svc.Close()
		return nil, err
	}
	return svc, nil
}

func (s *Service) runTurns(ctx context.Context, cfg config.Config) error {
	runtimes, err := agent.NewConfiguredRegistry(cfg.Agents)
	if err != nil {
		return err
	}
	preparer, err := workspace.NewPreparer(store.NewWorkspaces(s.Pool), workspace.Options{Node: cfg.Node, Dir: cfg.WorkspacesDir,
		DataDirs: []string{cfg.Clones.PreservationDir}})
	if err != nil {
		return err
	}
	conn, err := s.Dial(cfg.LifecycleAddr)
	if err != nil {
		return fmt.Errorf("dial lifecycle at %s: %w", cfg.LifecycleAddr, err)
	}
	var queue rw.Queue = rw.NoQueue{}
	if cfg.QueueAddr != "" {
		qconn, err := s.Dial(cfg.QueueAddr)
		if err != nil {
			return fmt.Errorf("dial the queue at %s: %w", cfg.QueueAddr, err)
		}
		queue = clients.NewQueue(qconn)
	}
	lifecycle := clients.NewLifecycle(conn)
	var prompts rw.PromptSources
	if cfg.LineageAddr != "" {
		lconn, err := s.Dial(cfg.LineageAddr)
		if err != nil {
			return fmt.Errorf("dial lineage at %s: %w", cfg.LineageAddr, err)
		}
		prompts = promptSources{Lifecycle: lifecycle, Lineage: clients.NewLineage(lconn)}
	}
	acts := &rw.Activities{
		Lifecycle: lifecycle,
		Prompts:   prompts,
		// The pull requests its agents open are tracked by lifecycle.
		PullRequests: lifecycle,
		Costs:        store.NewCosts(s.Pool),
		Preparer:     preparer,
		Runtimes:     runtimes,
		StateDir:     filepath.Join(cfg.WorkspacesDir, ".state"),
		MCPURL:       cfg.MCPURL,
		Signaler:     s.Temporal,
		Transcripts:  s.Transcripts,
		Queue:        queue,
		Process:      process.Options{Ladder: cfg.Ladder, RecordDir: ProcessRecordDir(cfg)},
		Logger:       s.Logger,
		Node:         cfg.Node,
		Incarnation:  uuid.NewString(),
	}
	if err := acts.ObserveAgents(s.Logger); err != nil {
		return err
	}
	pool := newAccountPool(store.NewAccounts(s.Pool), cfg.Accounts)
	acts.Pool, acts.Refills = pool, refillStarter{client: s.Temporal}
	s.Worker.RegisterWorkflowWithOptions(rw.Session, workflow.RegisterOptions{Name: rw.WorkflowName})
	acts.RegisterShared(s.Worker)
	rw.RegisterRefill(s.Worker)
	s.API.WithAccounts(pool)
	// Costs take a session's slug as every surface does: lifecycle says whose.
	s.API.WithCostSessions(lifecycle)
	if err := observeAccounts(pool, s.Logger); err != nil {
		return err
	}

	// At shutdown RunTurn stops its agent by the ladder and reports so
	// (TurnResult.Shutdown): the worker waits that long for it.
	// Before anything can poll the node's queue (sweeps.go).
	if err := s.takeOverNode(ctx, cfg); err != nil {
		return err
	}
	s.Go(func(ctx context.Context) error {
		s.sweepNodeCredentials(ctx, acts.Lifecycle, cfg.Node, acts.Incarnation)
		return nil
	})
	l := cfg.Ladder
	node := worker.New(s.Temporal, rw.NodeTaskQueue(cfg.Node), worker.Options{
		WorkerStopTimeout: l.TermGrace + l.KillGrace + l.SweepGrace + 5*time.Second,
		// RunTurn heartbeats every 5 s, and at once when it learns what a
		// lost turn's recovery needs (its credential, the runtime's
		// conversation id): the SDK's default throttle (0.8 of the 30 s
		// heartbeat timeout) would hold those back for up to 24 s.
		MaxHeartbeatThrottleInterval: time.Second,
	})
	acts.RegisterNode(node)
	// Every node also takes first clones from the shared queue: the node
	// that makes a session's clone holds its turns.
	clones := worker.New(s.Temporal, rw.ClonesTaskQueue, worker.Options{})
	acts.RegisterClones(clones)
	s.Go(func(ctx context.Context) error {
		// The node takes no clone and runs no turn before lifecycle knows
		// its own limit (LC-38).
		if !reportNodeSlots(ctx, lifecycle, cfg.Node, cfg.TurnSlots, s.Logger) {
			return nil
		}
		if err := node.Start(); err != nil {
			return fmt.Errorf("start the worker on %s: %w", rw.NodeTaskQueue(cfg.Node), err)
		}
		defer node.Stop()
		if err := clones.Start(); err != nil {
			return fmt.Errorf("start the worker on %s: %w", rw.ClonesTaskQueue, err)
		}
		defer clones.Stop()
		<-ctx.Done()
		return nil
	})

	s.API.WithInterrupts(grpcapi.Interrupts{
		Updater: s.Temporal,
		// The ladder's graces, and room for Temporal's round trips and the
		// StopTurn activity's scheduling.
		Bound: l.TermGrace + l.KillGrace + l.SweepGrace + 10*time.Second,
	})

	starter := rw.Starter{Client: s.Temporal, Node: cfg.Node, NodeDeadAfter: cfg.NodeDeadAfter,
		SearchAttributes: s.registerSearchAttributes(ctx, cfg.TemporalNamespace)}
	consumer := grpcapi.NewConsumer(s.Temporal, starter, runtimes.Default(), s.Logger)
	if err := s.runClones(ctx, cfg, preparer, conn, node, consumer); err != nil {
		return err
	}
	if err := s.runInference(cfg, lifecycle); err != nil {
		return err
	}
	consumer.Register(s.GRPC.Server)
	return s.runSweeps(ctx, cfg, conn, starter, node)
}

// reportNodeSlots tells lifecycle this node's own turn-slot limit
// (RUNNER_TURN_SLOTS, LC-38), retrying until lifecycle answers (it may
// start after the node); false when ctx ended first.
func reportNodeSlots(ctx context.Context, lifecycle *clients.Lifecycle, node string, limit *int, logger *slog.Logger) bool {
	wait := 200 * time.Millisecond
	for {
		err := lifecycle.SetNodeSlots(ctx, node, limit)
		if err == nil {
			logger.InfoContext(ctx, "told lifecycle this node's turn slots", "node", node, "turn_slots", limitWords(limit))
			return true
		}
		logger.WarnContext(ctx, "tell lifecycle this node's turn slots; trying again", "node", node, "error", err, "in", wait)
		select {
		case <-ctx.Done():
			return false
		case <-time.After(wait):
		}
		wait = min(2*wait, 10*time.Second)
	}
}

func limitWords(limit *int) string {
	if limit == nil {
		return "none of its own"
	}
	return strconv.Itoa(*limit)
}

// searchAttributes are the session workflows' search attributes.
var searchAttributes = map[string]enumspb.IndexedValueType{
	rw.SearchSessionID.GetName(): enumspb.INDEXED_VALUE_TYPE_INT,
	rw.SearchStatus.GetName():    enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	rw.SearchRuntime.GetName():   enumspb.INDEXED_VALUE_TYPE_KEYWORD,
}

// registerSearchAttributes adds the session workflows' search attributes to
// the namespace (the dev server lets any client; a managed cluster may
// not) and reports whether they are there to use; without them the
// workflows keep only their memo.
func (s *Service) registerSearchAttributes(ctx context.Context, namespace string) bool {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	ops := s.Temporal.OperatorService()
	_, err := ops.AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace: namespace, SearchAttributes: searchAttributes,
	})
	var exists *serviceerror.AlreadyExists
	if err != nil && !errors.As(err, &exists) {
		s.Logger.Warn("session workflows get a memo but no search attributes: registering them failed", "error", err)
		return false
	}
	for {
		list, err := ops.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
		if err == nil && hasAll(list.GetCustomAttributes()) {
			return true
		}
		select {
		case <-ctx.Done():
			s.Logger.Warn("session workflows get a memo but no search attributes: they never showed up", "error", err)
			return false
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func hasAll(have map[string]enumspb.IndexedValueType) bool {
	for name, typ := range searchAttributes {
		if have[name] != typ {
			return false
		}
	}
	return true
}

// promptSources gathers a turn's prompt from lifecycle (the session) and
// lineage (the blocks).
type promptSources struct {
	*clients.Lifecycle
	*clients.Lineage
}
