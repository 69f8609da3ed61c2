package service_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"
	"github.com/zimmerhq/zimmer/services/platform/servicetest"
	"github.com/zimmerhq/zimmer/services/runner/internal/config"
	"github.com/zimmerhq/zimmer/services/runner/internal/service"
	rw "github.com/zimmerhq/zimmer/services/runner/internal/workflow"
)

// node is a runner node under test on the real Temporal dev server: its
// sessions' turns run the demo agent for real, against an in-process fake
// lifecycle and fake queue.
type node struct {
	svc       *service.Service
	lifecycle *fakeLifecycle
	queue     *fakeQueue
	repo      string
	events    lifecyclev1.SessionEventConsumerServiceClient
}

// startNode builds the demo agent and a one-commit repository, serves the
// fakes, and runs service.NewNode on them with Temporal.
func startNode(t *testing.T, deliver func(from string) *queuev1.DeliverNextMessageResponse) *node {
	t.Helper()
	temporalAddr := servicetest.TemporalAddress(t)
	// A namespace of the test's own, so no other test's runner polls
	// zimmer-runner there and picks up its activities.
	namespace := servicetest.TemporalNamespace(t, temporalAddr)
	dir := t.TempDir()
	agentBin := filepath.Join(dir, "zimmer-demo-agent")
	out, err := exec.Command("go", "build", "-o", agentBin, "github.com/zimmerhq/zimmer/services/runner/cmd/zimmer-demo-agent").CombinedOutput()
	require.NoError(t, err, "build the demo agent: %s", out)

	n := &node{lifecycle: &fakeLifecycle{}, queue: &fakeQueue{deliver: deliver, answered: map[string]*queuev1.DeliverNextMessageResponse{}}, repo: gitRepo(t)}
	lifecycleAddr := serve(t, func(s *grpc.Server) { lifecyclev1.RegisterLifecycleServiceServer(s, n.lifecycle) })
	queueAddr := serve(t, func(s *grpc.Server) { queuev1.RegisterQueueServiceServer(s, n.queue) })

	cfg, err := config.Load(t.Context(), servicetest.Getenv(map[string]string{
		"RUNNER_NODE":            fmt.Sprintf("test-%d", time.Now().UnixNano()),
		"RUNNER_WORKSPACES_DIR":  filepath.Join(dir, "workspaces"),
		"RUNNER_LIFECYCLE_ADDR":  lifecycleAddr,
		"RUNNER_QUEUE_ADDR":      queueAddr,
		"RUNNER_LINEAGE_ADDR":    "none",
		"RUNNER_MCP_URL":         "http://127.0.0.1:1/mcp",
		"RUNNER_DEMO_AGENT_PATH": agentBin,
		"RUNNER_DEFAULT_RUNTIME": "demo",
	}))
	require.NoError(t, err)
	cfg.Config = servicetest.Config(t, service.MigrationSets...)
	cfg.TemporalAddress, cfg.TemporalNamespace = temporalAddr, namespace
	n.svc = servicetest.New(t, service.NewNode, cfg)
	servicetest.RunInBackground(t, n.svc.Run)
	n.events = lifecyclev1.NewSessionEventConsumerServiceClient(servicetest.DialAsService(t, n.svc.Addr(), "lifecycle"))
	return n
}

// newSessionID is a session id no earlier run of these tests used: the
// namespace outlives them.
func newSessionID() int64 { return time.Now().UnixNano() / 1000 }

// create asks for a session's first turn, as lifecycle's relay does.
func (n *node) create(t *testing.T, id int64, prompt string) {
	t.Helper()
	_, err := n.events.ConsumeSessionEvent(t.Context(), &lifecyclev1.ConsumeSessionEventRequest{Event: &lifecyclev1.SessionEvent{
		EventId: fmt.Sprintf("created-%d", id), SessionId: id, Payload: &lifecyclev1.SessionEvent_Created{Created: &lifecyclev1.SessionCreated{
			Session: &lifecyclev1.Session{Id: id, Prompt: prompt, GitRoot: n.repo, Branch: "main", AgentRuntime: "demo"},
		}},
	}})
	require.NoError(t, err)
	t.Cleanup(func() {
		// The namespace outlives the test; its workflow need not.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = n.svc.Temporal.TerminateWorkflow(ctx, rw.ID(id), "", "test over")
	})
}

// resume asks for a resume turn under jobID, as lifecycle's relay does with
// an update carrying a turn.
func (n *node) resume(t testing.TB, id int64, eventID, jobID, prompt string) {
	t.Helper()
	_, err := n.events.ConsumeSessionEvent(t.Context(), &lifecyclev1.ConsumeSessionEventRequest{Event: &lifecyclev1.SessionEvent{
		EventId: eventID, SessionId: id, Payload: &lifecyclev1.SessionEvent_Updated{Updated: &lifecyclev1.SessionUpdated{
			Session: &lifecyclev1.Session{Id: id, GitRoot: n.repo, Branch: "main", AgentRuntime: "demo", Status: "running", RunningJobId: jobID},
			Turn:    &lifecyclev1.TurnRequest{JobId: jobID, Prompt: prompt},
		}},
	}})
	require.NoError(t, err)
}

// serve runs a gRPC server on a free loopback port until the test ends.
func serve(t *testing.T, register func(*grpc.Server)) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := grpc.NewServer()
	register(s)
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	return lis.Addr().String()
}

// gitRepo makes a one-commit repository to clone.
func gitRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README.md"), []byte("demo\n"), 0o644))
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"}, {"add", "README.md"},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "first"},
	} {
		out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	return dir
}

// fakeLifecycle is lifecycle as the runner's turns see it: it applies every
// transition it is asked for and records it.
type fakeLifecycle struct {
	lifecyclev1.UnimplementedLifecycleServiceServer
	mu          sync.Mutex
	transitions []*lifecyclev1.TransitionSessionRequest
	status      map[string]string
	notes       []*lifecyclev1.RecordTimelineNoteRequest
	mints       []*lifecyclev1.MintSessionCredentialRequest
	turnRevokes []*lifecyclev1.RevokeTurnCredentialsRequest
	sweeps      []*lifecyclev1.SweepNodeCredentialsRequest
}

func (f *fakeLifecycle) RecordTimelineNote(_ context.Context, req *lifecyclev1.RecordTimelineNoteRequest) (*lifecyclev1.RecordTimelineNoteResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.notes = append(f.notes, req)
	return &lifecyclev1.RecordTimelineNoteResponse{}, nil
}

func (f *fakeLifecycle) TransitionSession(_ context.Context, req *lifecyclev1.TransitionSessionRequest) (*lifecyclev1.TransitionSessionResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.transitions = append(f.transitions, req)
	if f.status == nil {
		f.status = map[string]string{}
	}
	f.status[req.GetSessionId()] = map[string]string{
		rw.EventStart: "running", rw.EventResume: "running", rw.EventPause: "needs_input", rw.EventFail: "failed",
	}[req.GetEvent()]
	return &lifecyclev1.TransitionSessionResponse{}, nil
}

func (f *fakeLifecycle) GetSession(_ context.Context, req *lifecyclev1.GetSessionRequest) (*lifecyclev1.GetSessionResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id, _ := strconv.ParseInt(req.GetSessionId(), 10, 64)
	return &lifecyclev1.GetSessionResponse{Session: &lifecyclev1.Session{Id: id, Status: f.status[req.GetSessionId()]}}, nil
}

func (f *fakeLifecycle) MintSessionCredential(_ context.Context, req *lifecyclev1.MintSessionCredentialRequest) (*lifecyclev1.MintSessionCredentialResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mints = append(f.mints, req)
	return &lifecyclev1.MintSessionCredentialResponse{Credential: &lifecyclev1.MintedSessionCredential{Id: "cred", Token: "zsc_test"}}, nil
}

func (f *fakeLifecycle) RevokeSessionCredential(context.Context, *lifecyclev1.RevokeSessionCredentialRequest) (*lifecyclev1.RevokeSessionCredentialResponse, error) {
	return &lifecyclev1.RevokeSessionCredentialResponse{}, nil
}

func (f *fakeLifecycle) RevokeTurnCredentials(_ context.Context, req *lifecyclev1.RevokeTurnCredentialsRequest) (*lifecyclev1.RevokeTurnCredentialsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.turnRevokes = append(f.turnRevokes, req)
	return &lifecyclev1.RevokeTurnCredentialsResponse{}, nil
}

func (f *fakeLifecycle) SweepNodeCredentials(_ context.Context, req *lifecyclev1.SweepNodeCredentialsRequest) (*lifecyclev1.SweepNodeCredentialsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sweeps = append(f.sweeps, req)
	return &lifecyclev1.SweepNodeCredentialsResponse{}, nil
}

// events are the session's transitions, in order.
func (f *fakeLifecycle) events(sessionID int64) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, tr := range f.transitions {
		if tr.GetSessionId() == strconv.FormatInt(sessionID, 10) {
			out = append(out, tr.GetEvent())
		}
	}
	return out
}

func (f *fakeLifecycle) count(sessionID int64, event string) int {
	n := 0
	for _, e := range f.events(sessionID) {
		if e == event {
			n++
		}
	}
	return n
}

// fakeQueue answers DeliverNextMessage with deliver's answer for the ended
// job, the same one however often it is asked (the queue's idempotence).
type fakeQueue struct {
	queuev1.UnimplementedQueueServiceServer
	deliver  func(from string) *queuev1.DeliverNextMessageResponse
	mu       sync.Mutex
	asked    []string
	answered map[string]*queuev1.DeliverNextMessageResponse
}

func (f *fakeQueue) DeliverNextMessage(_ context.Context, req *queuev1.DeliverNextMessageRequest) (*queuev1.DeliverNextMessageResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, req.GetFromJobId())
	if a, ok := f.answered[req.GetFromJobId()]; ok {
		return a, nil
	}
	a := f.deliver(req.GetFromJobId())
	if a == nil {
		a = &queuev1.DeliverNextMessageResponse{}
	}
	f.answered[req.GetFromJobId()] = a
	return a, nil
}

func (f *fakeQueue) askedAfter() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.asked...)
}
