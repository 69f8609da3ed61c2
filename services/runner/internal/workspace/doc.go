// Package workspace makes and records a session's clone: the directory its
// agent works in, one per session, on the runner node that made it.
//
// Preparer.Prepare runs before a session's first turn (and again before any
// turn, where it is a cheap check). It is meant to be called from a Temporal
// activity, which may run it twice, concurrently, or after the process that
// started it died; so it is idempotent and decides by two things that
// survive a crash:
//
//   - the workspaces row (Repository): provisioning → ready, or failed. It
//     names the node holding the clone and what the clone was made from, for
//     the turns that run on that node and for the recovery work that later
//     preserves, restores or reaps the clone.
//   - a flock on <dir>/.locks/<session id>.lock, held while preparing. The
//     kernel drops it when its holder dies, so a provisioning row whose lock
//     is free is a crash's leftover, never a clone in progress: it is
//     removed and redone. A second Prepare of the session waits for the
//     lock and then finds the workspace ready. (The row alone could not
//     tell a live clone from a dead one.)
//
// git clones into <dir>/.staging/<session id> and the result is renamed to
// <dir>/<session id> only once it is complete and its subdirectory checked,
// so the session's directory never holds half a clone. The path is the
// same for every turn: runtimes key their own sessions by working directory.
//
// git runs as a CLI (the runtime agents use the same binary and config),
// with nothing it can ask: no terminal (its own session, stdin empty),
// GIT_TERMINAL_PROMPT=0, ssh in BatchMode; with user input never where git
// reads options (git_root after "--", the branch as --branch=<b>, a leading
// '-' refused anyway); in English (LC_ALL=C), because its words end up in
// failure_reason; and killed with its children when ctx ends.
//
// A failure comes back as a *PrepareError: Reason is the session's
// failure_reason (what git said, what to do), and Retryable says whether
// the same request can succeed later with nobody changing anything (see
// PrepareError). Any other error is the runner's own trouble (database,
// context) and is worth retrying.
package workspace
