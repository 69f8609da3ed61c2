package service

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/worker"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zimmerhq/zimmer/services/runner/internal/agent"
	"github.com/zimmerhq/zimmer/services/runner/internal/clients"
	"github.com/zimmerhq/zimmer/services/runner/internal/config"
	"github.com/zimmerhq/zimmer/services/runner/internal/domain"
	"github.com/zimmerhq/zimmer/services/runner/internal/process"
	"github.com/zimmerhq/zimmer/services/runner/internal/store"
	"github.com/zimmerhq/zimmer/services/runner/internal/sweep"
	"github.com/zimmerhq/zimmer/services/runner/internal/transcript"
	rw "github.com/zimmerhq/zimmer/services/runner/internal/workflow"
)

// ProcessRecordDir is where a node records the agent processes it starts
// (process.Options.RecordDir): <RUNNER_WORKSPACES_DIR>/.state/processes,
// beside the sessions' state folders, which are named by number.
func ProcessRecordDir(cfg config.Config) string {
	return filepath.Join(cfg.WorkspacesDir, ".state", "processes")
}

// takeOverNode makes this incarnation the node's only one before it serves
// the node's task queue: it becomes the child subreaper of the agents it
// starts, and kills every agent process its previous incarnation left
// running (a runner killed -9 leaves its agents, each in its own group).
// A lost turn's StopTurn on the node's queue proves its process gone only
// because of this: no incarnation serves the queue before the kill.
func (s *Service) takeOverNode(ctx context.Context, cfg config.Config) error {
	if err := process.SetChildSubreaper(); err != nil {
		// Orphaned grandchildren go to init instead: the group sweeps still
		// reach them while they keep their group.
		s.Logger.Warn("the runner is not the subreaper of its agents' orphans", "error", err)
	}
	left, err := process.KillRecorded(ctx, ProcessRecordDir(cfg), s.Logger)
	if len(left) > 0 {
		s.Logger.Info("killed the agent processes the node's previous incarnation left", "count", len(left))
	}
	for _, l := range left {
		s.cutOff(ctx, cfg.Node, l)
	}
	if err != nil {
		return fmt.Errorf("kill the processes the node's previous incarnation left: %w", err)
	}
	return nil
}

// sweepNodeCredentials revokes the turn credentials the node's earlier
// incarnations minted: none of their turns runs any more (takeOverNode
// killed what they left), and a turn's end may not have revoked its own
// (its runner stopped with lifecycle already down, say). This incarnation's
// credentials are kept, so the node serves its queue meanwhile; lifecycle
// is asked until it answers.
func (s *Service) sweepNodeCredentials(ctx context.Context, lifecycle rw.Lifecycle, node, incarnation string) {
	for wait := 200 * time.Millisecond; ; wait = min(2*wait, 30*time.Second) {
		n, err := lifecycle.SweepNodeCredentials(ctx, node, incarnation)
		if err == nil {
			if n > 0 {
				s.Logger.Info("revoked the turn credentials the node's previous incarnations left", "count", n)
			}
			return
		}
		if code := status.Code(err); code == codes.InvalidArgument || code == codes.PermissionDenied {
			s.Logger.Error("lifecycle refused to revoke the turn credentials the node's previous incarnations left; "+
				"their expiry still closes them", "error", err)
			return
		}
		s.Logger.Warn("revoke the turn credentials the node's previous incarnations left; asking lifecycle again", "error", err, "retry_in", wait)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// cutOff gives the turn of a process the node's previous incarnation left
// an ending on its transcript: that runner died while the turn ran (what
// the agent printed after that was read by no one), and this one killed
// what was left of it, or found it ended. A turn already ended keeps its
// ending. A failure is logged: the turn's recovery does not wait on it.
func (s *Service) cutOff(ctx context.Context, node string, l process.Left) {
	turnID := l.Record.Labels["turn"]
	sessionID, err := strconv.ParseInt(l.Record.Labels["session"], 10, 64)
	if turnID == "" || err != nil {
		return // not a turn's process
	}
	outcome, note := cutOffText(node, l)
	ended, err := store.NewTranscripts(s.Pool, transcript.DefaultLimits).CutOff(ctx, sessionID, turnID, outcome,
		agent.Event{Kind: agent.KindSystem, Type: CutOffType, Text: note, IsError: true})
	if err != nil {
		s.Logger.Warn("record on the transcript that the turn was cut off", "session_id", sessionID, "turn", turnID, "error", err)
		return
	}
	if ended {
		s.Transcripts.Notifier.Notify(sessionID)
	}
}

// CutOffType is the Type of the transcript line that ends a turn its runner
// died during (agent.KindSystem).
const CutOffType = "zimmer/cut_off"

// cutOffText is the ending and the last line of a turn cut off by its
// runner's death.
func cutOffText(node string, l process.Left) (outcome, note string) {
	why := fmt.Sprintf("the runner on node %q died while this turn ran (killed, or its machine went down), "+
		"so nothing the agent printed after that was read", node)
	if l.Killed {
		return "cut off: the runner died mid-turn; its next incarnation killed the agent (SIGKILL)",
			fmt.Sprintf("[Zimmer] This turn was cut off: %s. When the runner came back it killed the agent's process group "+
				"(SIGKILL to pid %d); Zimmer recovers the session from here.", why, l.Record.Pid)
	}
	return "cut off: the runner died mid-turn; the agent had ended by the time it came back (exit status unknown)",
		fmt.Sprintf("[Zimmer] This turn was cut off: %s. The agent (pid %d) had ended by the time the runner came back; "+
			"how it ended is unknown. Zimmer recovers the session from here.", why, l.Record.Pid)
}

// runSweeps sets up the runner's sweeps (package sweep): the orphan sweep
// on the shared queue, asking lifecycle over conn and handing requests
// through starter, and this node's zombie reaper on its own queue (node).
func (s *Service) runSweeps(ctx context.Context, cfg config.Config, conn grpc.ClientConnInterface,
	starter rw.Starter, node worker.Registry,
) error {
	lifecycle := clients.NewLifecycle(conn)
	orphans := sweep.OrphanedSessions{
		Lifecycle: lifecycle, Workflows: sweep.TemporalWorkflows{Client: s.Temporal},
		Turns: starter, Logger: s.Logger,
	}
	if err := sweep.SetupOrphanedSessions(ctx, s.Temporal, s.Worker, Name, orphans,
		cfg.OrphanGrace, cfg.OrphanSweepInterval); err != nil {
		return err
	}
	// Zombies are reaped as children end (SIGCHLD): an agent's orphan at
	// once, anything else once it is old enough to be no waiter's. The
	// schedule's passes remain a backstop.
	s.Go(func(ctx context.Context) error {
		process.RunZombieReaper(ctx, func(reaped []process.Reaped, err error) {
			for _, r := range reaped {
				s.Logger.InfoContext(ctx, "reaped a zombie no one was waiting for",
					"pid", r.Pid, "exit_status", r.Status.ExitStatus(), "signal", r.Status.Signal().String())
				s.tellReaped(ctx, lifecycle, r)
			}
			if err != nil {
				s.Logger.WarnContext(ctx, "reap zombies", "error", err)
			}
		})
		return nil
	})
	reaper := sweep.ZombieReaper{Reap: process.ReapZombies, Logger: s.Logger,
		Tell: func(ctx context.Context, r process.Reaped) { s.tellReaped(ctx, lifecycle, r) }}
	return sweep.SetupZombieReaper(ctx, s.Temporal, node, cfg.Node, reaper, cfg.ZombieReapInterval)
}

// tellReaped writes a zombie the runner reaped on the timeline of the
// session whose agent's process group it was in (one line, under a note id
// fixed by the zombie, so the two reapers' passes write it once). A zombie
// of no agent is only logged; lifecycle not answering costs the line.
func (s *Service) tellReaped(ctx context.Context, lifecycle *clients.Lifecycle, r process.Reaped) {
	turnID := r.Labels["turn"]
	sessionID, err := strconv.ParseInt(r.Labels["session"], 10, 64)
	if turnID == "" || err != nil {
		return
	}
	how := fmt.Sprintf("it had exited with status %d", r.Status.ExitStatus())
	if r.Status.Signaled() {
		how = "it had been killed by " + unix.SignalName(r.Status.Signal())
	}
	id := uuid.NewSHA1(uuid.NameSpaceURL, fmt.Appendf(nil, "zimmer:runner/zombie/%s/%d", turnID, r.Pid)).String()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := lifecycle.Note(ctx, sessionID, id, domain.ZombieReapedLine(turnID, r.Pid, how), false); err != nil {
		s.Logger.WarnContext(ctx, "write a reaped zombie on its session's timeline", "session_id", sessionID, "pid", r.Pid, "error", err)
	}
}
