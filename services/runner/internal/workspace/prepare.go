package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Timings of Prepare's own waits (git's are ctx's).
const (
	lockPollMin = 10 * time.Millisecond
	lockPollMax = 250 * time.Millisecond
	// recordTimeout bounds recording a failure after ctx ended: the
	// failure is worth a row, not an unbounded wait.
	recordTimeout = 10 * time.Second
)

// Options configure a Preparer.
type Options struct {
	// Node is this runner node's name (RUNNER_NODE).
	Node string
	// Dir is where the clones live (RUNNER_WORKSPACES_DIR), absolute.
	Dir string
	// Git is the git binary; "" is git on PATH.
	Git string
	// DataDirs are this node's other data folders (besides Dir), which no
	// git_root may name: RUNNER_PRESERVATION_DIR.
	DataDirs []string
}

// Preparer makes sessions' clones on one runner node and records them.
type Preparer struct {
	repo Repository
	node string
	dir  string
	git  string
	// data are the folders no git_root may lie in: Dir and DataDirs.
	data []string
}

// NewPreparer returns a Preparer recording in repo.
func NewPreparer(repo Repository, opts Options) (*Preparer, error) {
	if opts.Node == "" {
		return nil, errors.New("workspace preparer: a node name is required")
	}
	if !filepath.IsAbs(opts.Dir) {
		return nil, fmt.Errorf("workspace preparer: workspaces directory %q is not absolute", opts.Dir)
	}
	if opts.Git == "" {
		opts.Git = "git"
	}
	data := []string{filepath.Clean(opts.Dir)}
	for _, d := range opts.DataDirs {
		if !filepath.IsAbs(d) {
			return nil, fmt.Errorf("workspace preparer: data directory %q is not absolute", d)
		}
		data = append(data, filepath.Clean(d))
	}
	return &Preparer{repo: repo, node: opts.Node, dir: filepath.Clean(opts.Dir), git: opts.Git, data: data}, nil
}

// Path is where session id's clone lives on this node.
func (p *Preparer) Path(id int64) string { return filepath.Join(p.dir, strconv.FormatInt(id, 10)) }

func (p *Preparer) stagingPath(id int64) string {
	return filepath.Join(p.dir, ".staging", strconv.FormatInt(id, 10))
}

func (p *Preparer) lockPath(id int64) string {
	return filepath.Join(p.dir, ".locks", strconv.FormatInt(id, 10)+".lock")
}

// Prepare makes spec's session's workspace ready on this node and returns
// it; the agent works in its Workdir. A workspace already ready is checked,
// not remade. A *PrepareError says why it cannot be made (see PrepareError);
// any other error is worth retrying.
func (p *Preparer) Prepare(ctx context.Context, spec Spec) (Workspace, error) {
	if spec.SessionID <= 0 {
		return Workspace{}, fmt.Errorf("prepare workspace: session id %d is not a session's", spec.SessionID)
	}
	if reason := spec.Refusal(); reason != "" {
		return Workspace{}, newPrepareError(spec.SessionID, ErrInvalidSpec, false, reason, nil)
	}
	if reason := p.dataRefusal(spec.GitRoot); reason != "" {
		return Workspace{}, newPrepareError(spec.SessionID, ErrInvalidSpec, false, reason, nil)
	}
	for _, dir := range []string{filepath.Dir(p.lockPath(0)), filepath.Dir(p.stagingPath(0))} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return Workspace{}, p.nodeTrouble(spec.SessionID, "cannot create its workspaces directory", err)
		}
	}
	unlock, err := p.lock(ctx, spec.SessionID)
	if err != nil {
		return Workspace{}, err
	}
	defer unlock()

	w, err := p.claim(ctx, spec)
	switch {
	case err != nil:
		return Workspace{}, err
	case w.State == Ready:
		return w, p.checkReady(spec, w)
	}
	return p.provision(ctx, spec)
}

// lock takes the session's flock, waiting for a Prepare that holds it.
// Closing the file (or the holder's death) releases it.
func (p *Preparer) lock(ctx context.Context, id int64) (unlock func(), err error) {
	f, err := os.OpenFile(p.lockPath(id), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, p.nodeTrouble(id, "cannot open the workspace's lock file", err)
	}
	wait := lockPollMin
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return func() { _ = f.Close() }, nil
		case errors.Is(err, syscall.EINTR):
			continue
		case !errors.Is(err, syscall.EWOULDBLOCK):
			_ = f.Close()
			return nil, p.nodeTrouble(id, "cannot lock the workspace's lock file", err)
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			_ = f.Close()
			return nil, fmt.Errorf("wait for another preparation of session %d's workspace: %w", id, ctx.Err())
		case <-timer.C:
		}
		wait = min(2*wait, lockPollMax)
	}
}

// claim returns the session's workspace ready, or provisioning on this
// node for provision to make. Holding the lock, a provisioning row is
// nobody's work in progress.
func (p *Preparer) claim(ctx context.Context, spec Spec) (Workspace, error) {
	id := spec.SessionID
	// Two rounds: a Create that loses to another node's Create reads the
	// winner's row.
	for range 2 {
		w, err := p.repo.Get(ctx, id)
		if errors.Is(err, ErrNotFound) {
			w, err = p.repo.Create(ctx, NewWorkspace(spec, p.node, p.Path(id)))
			if errors.Is(err, ErrAlreadyExists) {
				continue
			}
		}
		if err != nil {
			return Workspace{}, fmt.Errorf("claim workspace of session %d: %w", id, err)
		}
		switch {
		case w.Node != p.node:
			return Workspace{}, newPrepareError(id, ErrOtherNode, false, fmt.Sprintf(
				"the session's clone is on runner node %q, not on %q, where this turn was sent; "+
					"its turns must run on %q", w.Node, p.node, w.Node), nil)
		case w.State == Ready:
			return w, nil
		case w.State == Provisioning && w.Path == p.Path(id) && w.Spec() == spec:
			return w, nil // freshly created, or a crash's leftover that provision clears
		case w.State == Provisioning || w.State == Failed:
			if w.State == Provisioning && w.Path != p.Path(id) {
				// RUNNER_WORKSPACES_DIR moved since the crash.
				if err := os.RemoveAll(w.Path); err != nil {
					return Workspace{}, p.nodeTrouble(id, "cannot remove a half-made clone", err)
				}
			}
			w, err = p.repo.Update(ctx, id, func(w *Workspace) error { return w.Reprovision(spec, p.Path(id)) })
			if err != nil {
				return Workspace{}, fmt.Errorf("claim workspace of session %d: %w", id, err)
			}
			return w, nil
		default:
			return Workspace{}, newPrepareError(id, ErrNotPreparable, false, fmt.Sprintf(
				"the session's workspace is %s: the session was archived; unarchive it to get its clone back", w.State), nil)
		}
	}
	return Workspace{}, fmt.Errorf("claim workspace of session %d: %w twice, yet not found", id, ErrAlreadyExists)
}

// checkReady refuses a ready workspace the session cannot work in.
func (p *Preparer) checkReady(spec Spec, w Workspace) error {
	id := spec.SessionID
	if w.Spec() != spec {
		return newPrepareError(id, ErrSpecMismatch, false, fmt.Sprintf(
			"the session's clone at %s was made from %s, subdirectory %q, not from %s, subdirectory %q; "+
				"a session's repository cannot change after its clone is made; create a new session for it",
			w.Path, describeSource(Spec{GitRoot: w.GitRoot, Branch: w.Branch}), w.Subdirectory,
			describeSource(spec), spec.Subdirectory), nil)
	}
	if _, err := os.Stat(filepath.Join(w.Path, ".git")); err != nil {
		return newPrepareError(id, ErrCloneMissing, true, fmt.Sprintf(
			"the session's clone %s is missing from runner node %q (%v); if its volume is not mounted, mount it "+
				"and restart the session; if it was deleted, its uncommitted work is gone: create a new session "+
				"from the same git_root", w.Path, p.node, pathErr(err)), err)
	}
	if problem := subdirectoryProblem(w.Path, spec.Subdirectory); problem != "" {
		return newPrepareError(id, ErrSubdirectoryUnusable, false, fmt.Sprintf(
			"subdirectory %q of the session's clone %s %s; restore it there (for example with git checkout), "+
				"then restart the session", spec.Subdirectory, w.Path, problem), nil)
	}
	return nil
}

// provision makes the clone: whatever is on disk for the session is a
// crash's leftover and goes first; git clones into staging; the checked
// result moves into place; the row says ready. On failure nothing stays on
// disk and the row says failed, and why.
func (p *Preparer) provision(ctx context.Context, spec Spec) (Workspace, error) {
	id := spec.SessionID
	final, staging := p.Path(id), p.stagingPath(id)
	for _, dir := range []string{staging, final} {
		if err := os.RemoveAll(dir); err != nil {
			return Workspace{}, p.fail(ctx, p.nodeTrouble(id, "cannot remove a half-made clone", err))
		}
	}
	checkout, perr := p.clone(ctx, spec, staging)
	if perr == nil {
		if problem := subdirectoryProblem(staging, spec.Subdirectory); problem != "" {
			perr = newPrepareError(id, ErrSubdirectoryUnusable, false, fmt.Sprintf(
				"subdirectory %q %s in the clone of %s; check that it is a directory committed on that branch "+
					"(a path inside the repository); then restart the session", spec.Subdirectory, problem,
				describeSource(spec)), nil)
		}
	}
	if perr == nil {
		if err := os.Rename(staging, final); err != nil {
			perr = p.nodeTrouble(id, "cannot move the finished clone into place", err)
		}
	}
	if perr != nil {
		_ = os.RemoveAll(staging) // what is left of it is nobody's work; a failure here is the next attempt's to clear
		return Workspace{}, p.fail(ctx, perr)
	}
	w, err := p.repo.Update(ctx, id, func(w *Workspace) error { return w.MarkReady(checkout) })
	if err != nil {
		return Workspace{}, fmt.Errorf("record workspace of session %d ready: %w", id, err)
	}
	return w, nil
}

// fail records perr on the session's row, even after ctx ended, and
// returns it. A row that cannot be updated stays provisioning, which the
// next Prepare takes for a leftover: nothing is lost but the reason.
func (p *Preparer) fail(ctx context.Context, perr *PrepareError) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	if _, err := p.repo.Update(ctx, perr.SessionID, func(w *Workspace) error { return w.MarkFailed(perr.Reason) }); err != nil {
		return errors.Join(perr, fmt.Errorf("record workspace of session %d failed: %w", perr.SessionID, err))
	}
	return perr
}

// clone runs git clone into staging and reads what it checked out.
func (p *Preparer) clone(ctx context.Context, spec Spec, staging string) (Checkout, *PrepareError) {
	// ext:: and fd:: would run commands or talk over descriptors named by
	// the URL; no repository needs them.
	args := []string{"-c", "protocol.ext.allow=never", "-c", "protocol.fd.allow=never", "clone", "--quiet"}
	if spec.Branch != "" {
		args = append(args, "--branch="+spec.Branch)
	}
	args = append(args, "--", spec.GitRoot, staging)
	run, err := runGit(ctx, p.git, p.dir, args...)
	if err != nil {
		return Checkout{}, p.cloneError(ctx, spec, run, err)
	}
	return p.readCheckout(ctx, spec.SessionID, staging)
}

// readCheckout reads what a fresh clone checked out: one git process for
// the usual clone (a commit, on a branch or detached), two for a clone of
// an empty repository, which has no commit for the first to name.
func (p *Preparer) readCheckout(ctx context.Context, id int64, clone string) (Checkout, *PrepareError) {
	// One process prints both: the commit, then the branch by its full
	// name ("HEAD" when detached; the short name would be "heads/main" if
	// a tag were called main too). It fails on a clone without a commit
	// (or a file called HEAD in it): the two-process reading answers then.
	run, err := runGit(ctx, p.git, clone, "rev-parse", "HEAD^{commit}", "--symbolic-full-name", "HEAD")
	if commit, ref, ok := strings.Cut(run.stdout, "\n"); err == nil && ok {
		branch := ""
		if ref != "HEAD" {
			branch = strings.TrimPrefix(ref, "refs/heads/")
		}
		return Checkout{Branch: branch, Commit: commit}, nil
	}
	return p.readCheckoutByParts(ctx, id, clone)
}

// readCheckoutByParts is readCheckout in two git processes, which also
// answer for a clone without a commit.
func (p *Preparer) readCheckoutByParts(ctx context.Context, id int64, clone string) (Checkout, *PrepareError) {
	// Exit 1 with nothing printed: no commit yet (an empty repository) and
	// a detached HEAD (a tag) respectively.
	commit, err := p.gitOptional(ctx, clone, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	if err != nil {
		return Checkout{}, p.nodeTrouble(id, "cannot read the clone's HEAD", err)
	}
	branch, err := p.gitOptional(ctx, clone, "symbolic-ref", "--quiet", "HEAD")
	if err != nil {
		return Checkout{}, p.nodeTrouble(id, "cannot read the clone's branch", err)
	}
	return Checkout{Branch: strings.TrimPrefix(branch, "refs/heads/"), Commit: commit}, nil
}

// gitOptional runs a git query whose exit status 1 means "none".
func (p *Preparer) gitOptional(ctx context.Context, dir string, args ...string) (string, error) {
	run, err := runGit(ctx, p.git, dir, args...)
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 1 && ctx.Err() == nil {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("git %s: %w (%s)", strings.Join(args, " "), err, gitSaid(run.stderr))
	}
	return run.stdout, nil
}

// cloneError turns a failed git clone into the session's failure_reason.
func (p *Preparer) cloneError(ctx context.Context, spec Spec, run gitRun, err error) *PrepareError {
	id, source := spec.SessionID, describeSource(spec)
	if ctxErr := ctx.Err(); ctxErr != nil {
		how := "was stopped"
		if errors.Is(ctxErr, context.DeadlineExceeded) {
			how = "did not finish in the time allowed"
		}
		return newPrepareError(id, ErrCloneFailed, true, fmt.Sprintf(
			"git clone of %s %s on runner node %q; check that git_root is reachable from the runner node "+
				"and can be cloned in time; then restart the session", source, how, p.node), ctxErr)
	}
	if gitMissing(err) {
		return newPrepareError(id, ErrNodeTrouble, true, fmt.Sprintf(
			"git cannot run on runner node %q (%v); install git there; then restart the session", p.node, err), err)
	}
	said := strings.TrimRight(gitSaid(run.stderr), ".")
	cause := fmt.Errorf("%w: %s", err, said)
	retryable, disk := cloneFailure(run.stderr)
	if disk {
		return newPrepareError(id, ErrNodeTrouble, true, fmt.Sprintf(
			"git could not clone %s: runner node %q is out of disk space in %s (git said: %s); "+
				"free space there; then restart the session", source, p.node, p.dir, said), cause)
	}
	return newPrepareError(id, ErrCloneFailed, retryable, fmt.Sprintf(
		"git could not clone %s: %s. Check that git_root is reachable from runner node %q and that the branch "+
			"exists; then restart the session", source, said, p.node), cause)
}

// nodeTrouble is this node failing to do its part with its own disk.
func (p *Preparer) nodeTrouble(id int64, what string, err error) *PrepareError {
	return newPrepareError(id, ErrNodeTrouble, true, fmt.Sprintf(
		"runner node %q %s (%v); check its disk at %s; then restart the session", p.node, what, pathErr(err), p.dir), err)
}

// subdirectoryProblem says what is wrong with sub inside clone, or "". It
// resolves symbolic links: a subdirectory that is a link out of the clone
// would put the agent outside it.
func subdirectoryProblem(clone, sub string) string {
	if sub == "" {
		return ""
	}
	target, err := filepath.EvalSymlinks(filepath.Join(clone, filepath.FromSlash(sub)))
	if errors.Is(err, fs.ErrNotExist) {
		return "does not exist"
	}
	if err != nil {
		return fmt.Sprintf("cannot be read (%v)", pathErr(err))
	}
	root, err := filepath.EvalSymlinks(clone)
	if err != nil {
		return fmt.Sprintf("cannot be read (%v)", pathErr(err))
	}
	if rel, err := filepath.Rel(root, target); err != nil || !filepath.IsLocal(rel) {
		return "leads out of the clone through a symbolic link"
	}
	info, err := os.Stat(target)
	switch {
	case err != nil:
		return fmt.Sprintf("cannot be read (%v)", pathErr(err))
	case !info.IsDir():
		return "is a file, not a directory"
	}
	return ""
}

// pathErr is err without the path a *fs.PathError repeats.
func pathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// dataRefusal refuses a git_root that lies in this node's own data: the
// workspaces folder holds every session's clone (and what archives
// preserve), so cloning from there would hand one session another's work.
// Links are followed, so a path that only leads there is refused too.
func (p *Preparer) dataRefusal(root string) string {
	local, ok := localGitRoot(root)
	if !ok {
		return ""
	}
	for _, dir := range p.data {
		if within(resolved(local), resolved(dir)) || within(local, dir) {
			return fmt.Sprintf("git_root %q lies inside this runner node's own data folder %s, where sessions' clones live; "+
				"give the repository's own URL or path; %s", root, dir, createAgain)
		}
	}
	return ""
}

// localGitRoot is the path on this node git would clone root from: a
// local path or a file:// URL's path (decoded, as git decodes it; taken
// as written when it does not parse, which errs toward refusing).
func localGitRoot(root string) (string, bool) {
	if rest, ok := strings.CutPrefix(root, "file://"); ok {
		path := rest
		if u, err := url.Parse(root); err == nil && u.Path != "" {
			path = u.Path
		}
		return filepath.Clean(path), filepath.IsAbs(path)
	}
	if !isLocalPath(root) || !filepath.IsAbs(root) {
		return "", false
	}
	return filepath.Clean(root), true
}

// resolved is path with its links followed as far as it exists.
func resolved(path string) string {
	rest := ""
	for dir := path; ; dir = filepath.Dir(dir) {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(real, rest)
		}
		if dir == filepath.Dir(dir) {
			return path
		}
		rest = filepath.Join(filepath.Base(dir), rest)
	}
}

// within reports whether path is dir or lies under it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && filepath.IsLocal(rel)
}
