package service_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"

	runnerv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/runner/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/effect"
	"github.com/zimmerhq/zimmer/services/platform/servicetest"
	"github.com/zimmerhq/zimmer/services/runner/internal/clone"
	"github.com/zimmerhq/zimmer/services/runner/internal/config"
	"github.com/zimmerhq/zimmer/services/runner/internal/service"
	"github.com/zimmerhq/zimmer/services/runner/internal/store"
	"github.com/zimmerhq/zimmer/services/runner/internal/workspace"
)

// TestArchiveAndUnarchiveCarryTheClonesWorkThroughTheTrash runs the clone's
// life on a real runner node, Temporal and Postgres: a clone with unpushed
// commits and untracked files; the archive's effect, after the undo window,
// preserves its work and deletes it (GetClone shows where the artifacts
// are, their sizes and the deadline); the unarchive's effect restores it at
// the same path, the same bytes; the trash reaper's schedule is there.
func TestArchiveAndUnarchiveCarryTheClonesWorkThroughTheTrash(t *testing.T) {
	t.Parallel()
	temporalAddr := servicetest.TemporalAddress(t)
	namespace := servicetest.TemporalNamespace(t, temporalAddr)
	lifecycle := &fakeLifecycle{status: map[string]string{}}
	lifecycleAddr := serve(t, func(s *grpc.Server) { lifecyclev1.RegisterLifecycleServiceServer(s, lifecycle) })
	dir := t.TempDir()
	nodeName := fmt.Sprintf("clones-%d", time.Now().UnixNano())
	cfg, err := config.Load(t.Context(), servicetest.Getenv(map[string]string{
		"RUNNER_NODE":                nodeName,
		"RUNNER_WORKSPACES_DIR":      filepath.Join(dir, "workspaces"),
		"RUNNER_LIFECYCLE_ADDR":      lifecycleAddr,
		"RUNNER_QUEUE_ADDR":          "none",
		"RUNNER_CLONE_UNDO_WINDOW":   "1s",
		"RUNNER_TRASH_REAP_INTERVAL": "30m",
	}))
	require.NoError(t, err)
	cfg.Config = servicetest.Config(t, service.MigrationSets...)
	cfg.TemporalAddress, cfg.TemporalNamespace = temporalAddr, namespace
	svc := servicetest.New(t, service.NewNode, cfg)
	servicetest.RunInBackground(t, svc.Run)
	events := lifecyclev1.NewSessionEventConsumerServiceClient(servicetest.DialAsService(t, svc.Addr(), "lifecycle"))
	api := runnerv1.NewRunnerServiceClient(servicetest.DialOperator(t, svc.Addr()))
	ctx, cancel := context.WithTimeout(t.Context(), servicetest.Timeout)
	defer cancel()

	// The session's clone, made as its first turn makes it, with work in it.
	id := newSessionID()
	preparer, err := workspace.NewPreparer(store.NewWorkspaces(svc.Pool), workspace.Options{Node: nodeName, Dir: cfg.WorkspacesDir})
	require.NoError(t, err)
	w, err := preparer.Prepare(ctx, workspace.Spec{SessionID: id, GitRoot: gitRepo(t), Branch: "main"})
	require.NoError(t, err)
	gitAt(t, w.Path, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "unpushed")
	require.NoError(t, os.WriteFile(filepath.Join(w.Path, "blob.bin"), []byte{0, 1, 2, 0xff, 0, '\n'}, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(w.Path, "README.md"), []byte("changed\n"), 0o644))
	head := gitAt(t, w.Path, "rev-parse", "HEAD")
	status := gitAt(t, w.Path, "status", "--porcelain")

	// Archived: the effect's clean-up waits the undo window, then keeps the
	// work and deletes the clone.
	setStatus(lifecycle, id, "archived")
	trashAfter := time.Now().Add(96 * time.Hour).UTC().Truncate(time.Second)
	consumeEffect(t, events, id, &lifecyclev1.SessionEffect{Kind: &lifecyclev1.SessionEffect_DeferredCleanup{
		DeferredCleanup: &lifecyclev1.DeferredCleanupEffect{TrashAfter: timestamppb.New(trashAfter)}}})
	began := time.Now()
	var report clone.Report
	require.NoError(t, svc.Temporal.GetWorkflow(ctx, clone.CleanupID(id), "").Get(ctx, &report))
	require.GreaterOrEqual(t, time.Since(began), 500*time.Millisecond, "the undo window passed first")
	require.Equal(t, workspace.OutcomePreserved, report.Outcome, report.Detail)
	require.NoDirExists(t, w.Path)

	got, err := api.GetClone(ctx, &runnerv1.GetCloneRequest{SessionId: strconv.FormatInt(id, 10)})
	require.NoError(t, err)
	c := got.GetClone()
	require.Equal(t, "preserved", c.GetState())
	lifecycle.mu.Lock()
	require.Len(t, lifecycle.notes, 1, "the session's timeline says where its work is")
	require.Contains(t, lifecycle.notes[0].GetMessage(), c.GetArtifacts().GetDir())
	lifecycle.mu.Unlock()
	require.Equal(t, nodeName, c.GetNode())
	require.Equal(t, w.Path, c.GetPath())
	require.Equal(t, trashAfter, c.GetTrashAfter().AsTime())
	require.Equal(t, filepath.Join(cfg.Clones.PreservationDir, strconv.FormatInt(id, 10)), c.GetArtifacts().GetDir())
	require.FileExists(t, c.GetArtifacts().GetBundlePath())
	require.FileExists(t, c.GetArtifacts().GetPatchPath())
	require.Positive(t, c.GetArtifacts().GetBundleBytes())
	require.Positive(t, c.GetArtifacts().GetPatchBytes())
	require.Equal(t, head, c.GetArtifacts().GetHead())

	// Unarchived: the clone is back where the session's turns look for it.
	setStatus(lifecycle, id, "needs_input")
	consumeEffect(t, events, id, &lifecyclev1.SessionEffect{Kind: &lifecyclev1.SessionEffect_RestoreClone{
		RestoreClone: &lifecyclev1.RestoreCloneEffect{}}})
	require.NoError(t, svc.Temporal.GetWorkflow(ctx, clone.RestoreID(id), "").Get(ctx, &report))
	require.Equal(t, workspace.OutcomeRestored, report.Outcome, report.Detail)
	require.Equal(t, head, gitAt(t, w.Path, "rev-parse", "HEAD"))
	require.Equal(t, status, gitAt(t, w.Path, "status", "--porcelain"))
	blob, err := os.ReadFile(filepath.Join(w.Path, "blob.bin"))
	require.NoError(t, err)
	require.Equal(t, []byte{0, 1, 2, 0xff, 0, '\n'}, blob)
	got, err = api.GetClone(ctx, &runnerv1.GetCloneRequest{SessionId: strconv.FormatInt(id, 10)})
	require.NoError(t, err)
	require.Equal(t, "ready", got.GetClone().GetState())
	require.Nil(t, got.GetClone().GetArtifacts(), "applied, the artifacts are gone")

	sched, err := svc.Temporal.ScheduleClient().GetHandle(ctx, clone.ReaperScheduleID).Describe(ctx)
	require.NoError(t, err)
	require.Equal(t, 30*time.Minute, sched.Schedule.Spec.Intervals[0].Every)
}

func setStatus(f *fakeLifecycle, id int64, status string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status[strconv.FormatInt(id, 10)] = status
}

// consumeEffect delivers an effect as lifecycle's relay does to the
// subscriber runner.
func consumeEffect(t *testing.T, events lifecyclev1.SessionEventConsumerServiceClient, id int64, e *lifecyclev1.SessionEffect) {
	t.Helper()
	e.Session = &lifecyclev1.Session{Id: id}
	resp, err := events.ConsumeSessionEvent(t.Context(), &lifecyclev1.ConsumeSessionEventRequest{Event: &lifecyclev1.SessionEvent{
		EventId: fmt.Sprintf("%s-%d", effect.Name(e), id), SessionId: id, Payload: &lifecyclev1.SessionEvent_Effect{Effect: e},
	}})
	require.NoError(t, err)
	require.True(t, resp.GetApplied())
}

func gitAt(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
	return strings.TrimSpace(string(out))
}
