package workspace

import (
	"errors"
	"fmt"
)

// PrepareError is a workspace Prepare could not make ready.
//
// Retryable is false when the same request cannot succeed until someone
// changes something: a git_root that is not a repository, a branch that
// does not exist, credentials git does not have, a subdirectory the branch
// lacks, a request Zimmer refuses. The workflow fails the session with
// Reason at once. It is true when the trouble is the runner node's or the
// network's and may pass by itself: a timeout, a refused or dropped
// connection, a server error, a full disk, git missing from the node, a
// clone that is not (yet) on disk. The workflow retries those under its
// bounded retry policy and fails the session with Reason when the policy
// gives up. A git failure nobody recognises is not retryable: repeating a
// deterministic failure only delays the reason reaching the operator.
type PrepareError struct {
	SessionID int64
	// Reason is the session's failure_reason: what went wrong, in git's
	// words where git said it, and what to do about it.
	Reason    string
	Retryable bool
	// Err is the failure underneath, one of the Err* kinds below wrapped
	// with detail, or a context error.
	Err error
}

func (e *PrepareError) Error() string {
	return fmt.Sprintf("prepare workspace of session %d: %s", e.SessionID, e.Reason)
}

func (e *PrepareError) Unwrap() error { return e.Err }

// Kinds of PrepareError, for errors.Is.
var (
	// ErrInvalidSpec: git_root, branch or subdirectory is refused before
	// git runs.
	ErrInvalidSpec = errors.New("workspace request refused")
	// ErrCloneFailed: git clone failed.
	ErrCloneFailed = errors.New("git clone failed")
	// ErrSubdirectoryUnusable: the subdirectory is missing from the clone,
	// is not a directory, or leads out of it.
	ErrSubdirectoryUnusable = errors.New("subdirectory unusable")
	// ErrOtherNode: the session's clone is on another runner node, whose
	// task queue its turns belong on.
	ErrOtherNode = errors.New("workspace is on another runner node")
	// ErrNotPreparable: the workspace is retained, preserved or reaped,
	// which only unarchive undoes.
	ErrNotPreparable = errors.New("workspace is archived")
	// ErrSpecMismatch: the session's ready clone was made from another
	// git_root, branch or subdirectory than the request names.
	ErrSpecMismatch = errors.New("workspace made for another request")
	// ErrCloneMissing: the workspace is ready but its directory is not on
	// disk (a volume not mounted yet, or a clone deleted behind Zimmer).
	ErrCloneMissing = errors.New("clone missing from disk")
	// ErrNodeTrouble: the runner node could not do its part (disk, git
	// missing, a directory it could not make or clear).
	ErrNodeTrouble = errors.New("runner node trouble")
)

// newPrepareError builds a PrepareError of kind; cause, when not nil, is
// kept beneath it for errors.Is and logs.
func newPrepareError(id int64, kind error, retryable bool, reason string, cause error) *PrepareError {
	err := fmt.Errorf("%w: %s", kind, reason)
	if cause != nil {
		err = fmt.Errorf("%w: %w", kind, cause)
	}
	return &PrepareError{SessionID: id, Reason: reason, Retryable: retryable, Err: err}
}
