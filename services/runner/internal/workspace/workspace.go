package workspace

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"
)

// State is where a workspace is in its life; the workspaces table's state.
type State string

// The states of a workspace. Prepare moves it provisioning → ready or
// failed; the archive and recovery work owns the rest.
const (
	// Provisioning: the clone is being made, or a crash left it half made.
	Provisioning State = "provisioning"
	// Ready: on disk; the session's agent works in it.
	Ready State = "ready"
	// Failed: the clone could not be made and nothing of it is on disk.
	Failed State = "failed"
	// Retained: on disk while its session is in the trash.
	Retained State = "retained"
	// Preserved: deleted from disk, its unpushed work kept as artifacts.
	Preserved State = "preserved"
	// Reaped: nothing of it is left.
	Reaped State = "reaped"
)

// Spec is what a session asks of its workspace: the fields it was created
// with, which never change afterwards.
type Spec struct {
	SessionID int64
	// GitRoot is anything git clone accepts: a URL, scp-like host:path, or
	// an absolute local path.
	GitRoot string
	// Branch is a branch or tag to check out; "" is the remote's default.
	Branch string
	// Subdirectory is where in the clone the agent works; "" is the clone's
	// root. A relative path that stays inside the repository.
	Subdirectory string
}

// Workspace is one session's clone as the runner's database records it.
type Workspace struct {
	SessionID int64
	// Node is the runner node whose disk holds the clone.
	Node string
	// Path is the clone's directory, absolute, on Node.
	Path         string
	GitRoot      string
	Branch       string
	Subdirectory string
	// CheckedOutBranch is the branch the clone has checked out: Branch, or
	// the remote's default; "" when Branch named a tag.
	CheckedOutBranch string
	// BaseCommit is HEAD when the clone was made; "" for an empty
	// repository.
	BaseCommit string
	State      State
	// FailureReason says why the clone could not be made (state Failed).
	FailureReason string
	// Archive is what the session's archive did with the clone (see
	// preserve.go); zero until then.
	Archive   Archive
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Spec is what the workspace was (or is being) made from.
func (w Workspace) Spec() Spec {
	return Spec{SessionID: w.SessionID, GitRoot: w.GitRoot, Branch: w.Branch, Subdirectory: w.Subdirectory}
}

// Workdir is where the session's agent works: Subdirectory inside the clone.
func (w Workspace) Workdir() string {
	return filepath.Join(w.Path, filepath.FromSlash(w.Subdirectory))
}

// Checkout is what a finished clone has checked out.
type Checkout struct {
	Branch string
	Commit string
}

// NewWorkspace is the row a first Prepare records before cloning.
func NewWorkspace(spec Spec, node, path string) Workspace {
	w := Workspace{SessionID: spec.SessionID, Node: node, Path: path, State: Provisioning}
	w.setSpec(spec)
	return w
}

func (w *Workspace) setSpec(spec Spec) {
	w.GitRoot, w.Branch, w.Subdirectory = spec.GitRoot, spec.Branch, spec.Subdirectory
}

// Reprovision starts the clone over at path: after a crash left it
// provisioning, or after a failed attempt.
func (w *Workspace) Reprovision(spec Spec, path string) error {
	if w.State != Provisioning && w.State != Failed {
		return &TransitionError{From: w.State, To: Provisioning}
	}
	w.State, w.Path, w.FailureReason = Provisioning, path, ""
	w.CheckedOutBranch, w.BaseCommit = "", ""
	w.setSpec(spec)
	return nil
}

// MarkReady records a finished clone.
func (w *Workspace) MarkReady(c Checkout) error {
	if w.State != Provisioning {
		return &TransitionError{From: w.State, To: Ready}
	}
	w.State, w.CheckedOutBranch, w.BaseCommit = Ready, c.Branch, c.Commit
	return nil
}

// MarkFailed records a clone that could not be made, and why.
func (w *Workspace) MarkFailed(reason string) error {
	if w.State != Provisioning {
		return &TransitionError{From: w.State, To: Failed}
	}
	if reason == "" {
		return errors.New("a failed workspace needs a reason")
	}
	w.State, w.FailureReason = Failed, reason
	return nil
}

// Repository stores workspaces: the runner's workspaces table, or
// workspacetest.Memory.
type Repository interface {
	// Get returns the session's workspace, or ErrNotFound.
	Get(ctx context.Context, sessionID int64) (Workspace, error)
	// Create records a new workspace and returns it as stored; ErrAlreadyExists
	// when the session has one, or another workspace on the node holds its
	// path on disk.
	Create(ctx context.Context, w Workspace) (Workspace, error)
	// Update applies fn to the session's workspace under a lock and stores
	// the result (ErrNotFound when there is none; fn's error aborts it).
	Update(ctx context.Context, sessionID int64, fn func(*Workspace) error) (Workspace, error)
}

// Repository errors.
var (
	ErrNotFound      = errors.New("workspace not found")
	ErrAlreadyExists = errors.New("workspace already exists")
)

// TransitionError is a state change the workspace's state does not allow.
type TransitionError struct {
	From, To State
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("a %s workspace cannot become %s", e.From, e.To)
}
