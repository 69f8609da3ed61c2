package workflow_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zimmerhq/zimmer/services/runner/internal/agent"
	"github.com/zimmerhq/zimmer/services/runner/internal/domain"
	"github.com/zimmerhq/zimmer/services/runner/internal/prompt"
	rw "github.com/zimmerhq/zimmer/services/runner/internal/workflow"
)

// fakePromptSources answers a session with a goal and notes, and lineage's
// blocks, failing the blocks' first blockFailures calls with blockErr.
type fakePromptSources struct {
	mu            sync.Mutex
	session       rw.PromptSession
	blocks        prompt.Blocks
	blockFailures int
	blockErr      error
	asked         []bool // the viaMCP of each PromptBlocks call
	notes         []string
}

func (f *fakePromptSources) PromptSession(context.Context, int64) (rw.PromptSession, error) {
	return f.session, nil
}

func (f *fakePromptSources) PromptBlocks(_ context.Context, _ int64, notes string, viaMCP bool) (prompt.Blocks, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked, f.notes = append(f.asked, viaMCP), append(f.notes, notes)
	if f.blockFailures != 0 {
		f.blockFailures--
		return prompt.Blocks{}, f.blockErr
	}
	return f.blocks, nil
}

const hierarchyBlock = "<session-hierarchy>\nSession #7 is one of 2 sessions in its hierarchy; the origin is session #1.\n</session-hierarchy>\n"

func newPromptFixture(t *testing.T) (*turnFixture, *fakePromptSources) {
	t.Helper()
	f := newTurnFixture(t)
	src := &fakePromptSources{
		session: rw.PromptSession{Goal: "CI is green", Notes: "step 1 done", ProvenanceViaMCP: true},
		blocks: prompt.Blocks{
			SessionNotes:     "<session-notes>\n  > step 1 done\n</session-notes>\n",
			SessionHierarchy: hierarchyBlock,
		},
	}
	f.acts.Prompts = src
	return f, src
}

// promptLine is the turn's first transcript line: the prompt it sent.
func (f *turnFixture) promptLine(t *testing.T) agent.Event {
	t.Helper()
	require.NotEmpty(t, f.sink.events)
	first := f.sink.events[0]
	require.Equal(t, rw.TranscriptTypePrompt, first.Type, "the prompt is the turn's first line: %+v", f.sink.events)
	require.Equal(t, agent.KindUser, first.Kind)
	return first
}

func (f *turnFixture) said(t *testing.T) string {
	t.Helper()
	var said []string
	for _, e := range f.sink.events {
		if e.Kind == agent.KindAssistant {
			said = append(said, e.Text)
		}
	}
	return strings.Join(said, "\n")
}

func TestRunTurnSendsTheComposedPrompt(t *testing.T) {
	t.Parallel()
	f, src := newPromptFixture(t)
	result := f.run(t, "Fix the bug")
	require.Zero(t, result.ExitCode)

	want := "Fix the bug\n\nYour goal for this session:\nCI is green\n\n" +
		"<session-notes>\n  > step 1 done\n</session-notes>\n\n" + strings.TrimSuffix(hierarchyBlock, "\n")
	line := f.promptLine(t)
	require.Equal(t, want, line.Raw, "the transcript keeps exactly what the agent received")
	require.Contains(t, line.Text, "goal 39, session_notes 48, session_hierarchy 116")
	require.Contains(t, f.said(t), "CI is green", "the demo agent echoes what it received")
	require.Contains(t, f.said(t), "<session-hierarchy>")
	require.Equal(t, []bool{true}, src.asked, "in the setting's mode")
	require.Equal(t, []string{"step 1 done"}, src.notes, "the notes go to lineage's sanitiser")
}

func TestRunTurnWaitsOutALineageThatDoesNotAnswer(t *testing.T) {
	t.Parallel()
	f, src := newPromptFixture(t)
	src.blockFailures, src.blockErr = 3, status.Error(codes.Unavailable, "lineage is restarting")
	result := f.run(t, "@demo say after the outage")
	require.Zero(t, result.ExitCode)
	require.Len(t, src.asked, 4, "asked until it answered")
	require.Contains(t, f.promptLine(t).Raw, "<session-hierarchy>\nSession #7", "never sent without its provenance")
}

func TestRunTurnRefusedItsBlocksDoesNotStart(t *testing.T) {
	t.Parallel()
	f, src := newPromptFixture(t)
	src.blockFailures, src.blockErr = -1, status.Error(codes.PermissionDenied, "not a service")
	_, err := f.env.ExecuteActivity(rw.ActivityRunTurn, rw.RunTurnRequest{
		Session: rw.SessionSpec{ID: 7, Runtime: "demo"}, TurnID: "session-7/turn-1", Prompt: "@demo say must not run",
		Workspace: rw.Workspace{Workdir: t.TempDir(), StateDir: t.TempDir()},
	})
	require.ErrorContains(t, err, "read the prompt blocks of session 7")
	require.Empty(t, f.lifecycle.minted, "no credential, no process")
	require.NotContains(t, f.said(t), "must not run")
}

// A recovery nudge does not wait for lineage: it goes, saying the blocks
// are missing rather than letting their absence read as "nobody spoke".
func TestRecoveryNudgeGoesWithoutLineage(t *testing.T) {
	t.Parallel()
	f, src := newPromptFixture(t)
	src.blockFailures, src.blockErr = -1, status.Error(codes.PermissionDenied, "not a service")
	result := f.run(t, domain.SystemRecoveryPrompt+"\nRecovery path: orphan sweep.")
	require.Zero(t, result.ExitCode)
	line := f.promptLine(t)
	require.Contains(t, line.Raw, "Your goal for this session:\nCI is green")
	require.Contains(t, line.Raw, "could not read this session's hierarchy and human messages")
	require.True(t, domain.IsSystemRecovery(domain.SystemRecoveryPrompt))
	require.False(t, domain.IsSystemRecovery(domain.ContinuePrompt))
}
