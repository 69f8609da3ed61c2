package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// gitWaitDelay bounds how long a killed git's pipes may stay open (held by
// a child that escaped the kill) before Wait gives up on them.
const gitWaitDelay = 2 * time.Second

// stderrKept is how much of git's stderr is kept: the tail, where its
// verdict is; a server can print any amount of "remote:" lines before it.
const stderrKept = 16 << 10

// gitRun is one finished git command.
type gitRun struct {
	stdout string
	stderr string // the tail of it, stderrKept bytes at most
}

// runGit runs git with args in dir. It returns the output even on failure:
// the failure's words are in stderr.
func runGit(ctx context.Context, git, dir string, args ...string) (gitRun, error) {
	return runGitEnv(ctx, git, dir, nil, args...)
}

// runGitEnv is runGit with extra variables in git's environment (after
// gitEnv's, so they win): a scratch index (GIT_INDEX_FILE), say.
func runGitEnv(ctx context.Context, git, dir string, extra []string, args ...string) (gitRun, error) {
	cmd := exec.CommandContext(ctx, git, args...)
	cmd.Dir = dir
	cmd.Env = append(gitEnv(os.Environ()), extra...)
	// Its own session: no controlling terminal, so neither git nor ssh can
	// open /dev/tty to ask for anything, and one process group, so the
	// kill on ctx's end takes ssh and the remote helpers with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = gitWaitDelay
	var stdout bytes.Buffer
	stderr := &tailBuffer{limit: stderrKept}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	err := cmd.Run()
	return gitRun{stdout: strings.TrimSpace(stdout.String()), stderr: stderr.String()}, err
}

// gitEnv is git's environment: the runner's, without the variables that
// would point git at another repository, and with everything that could
// ask a question turned off.
func gitEnv(environ []string) []string {
	env := make([]string, 0, len(environ)+5)
	sshSet := false
	for _, kv := range environ {
		key, _, _ := strings.Cut(kv, "=")
		switch key {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
			"GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_NAMESPACE", "GIT_PREFIX":
			continue
		case "GIT_SSH", "GIT_SSH_COMMAND":
			sshSet = true
		}
		env = append(env, kv)
	}
	// exec keeps the last value of a repeated key, so these win.
	env = append(env,
		"GIT_TERMINAL_PROMPT=0",  // git: fail instead of asking for a username
		"GCM_INTERACTIVE=never",  // Git Credential Manager: no dialogs
		"LC_ALL=C", "LANGUAGE=C", // git's words are parsed and shown in English
	)
	if !sshSet {
		// ssh: no passphrase, password or host-key questions (an operator's
		// own GIT_SSH_COMMAND is theirs to make non-interactive).
		env = append(env, "GIT_SSH_COMMAND=ssh -o BatchMode=yes")
	}
	return env
}

// tailBuffer keeps the last limit bytes written to it.
type tailBuffer struct {
	limit int
	buf   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.limit; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.buf) }

// Bounds of what gitSaid quotes.
const (
	saidLines    = 3
	saidLineMax  = 300
	saidFallback = "nothing on stderr"
)

// gitBoilerplate is advice git prints under every failure to reach a
// remote; it would crowd out the line that says what happened.
var gitBoilerplate = map[string]bool{
	"Please make sure you have the correct access rights": true,
	"and the repository exists.":                          true,
}

// gitSaid is the last few lines git wrote to stderr, trimmed, with any
// credentials in URLs masked: the words a failure_reason quotes.
func gitSaid(stderr string) string {
	var lines []string
	for _, line := range strings.Split(stderr, "\n") {
		// A progress line rewrites itself with '\r'; its last state counts.
		if i := strings.LastIndexByte(strings.TrimRight(line, "\r"), '\r'); i >= 0 {
			line = line[i+1:]
		}
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "Cloning into ") || gitBoilerplate[line] {
			continue
		}
		if len(line) > saidLineMax {
			line = line[:saidLineMax] + "…"
		}
		lines = append(lines, line)
	}
	if len(lines) == 0 {
		return saidFallback
	}
	lines = lines[max(0, len(lines)-saidLines):]
	return redact(strings.Join(lines, " / "))
}

// urlUserinfo matches the user[:password]@ part of a URL; a token often
// travels there (https://<token>@host/repo).
var urlUserinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)[^/@\s]+@`)

// redact masks the credentials of any URL in s.
func redact(s string) string { return urlUserinfo.ReplaceAllString(s, "${1}***@") }

// Words in git's (or ssh's, or curl's) stderr that say a failure may pass
// by itself, words that say it will not whatever else is there ("the
// remote end hung up unexpectedly" follows "Repository not found" too), and
// words that say it may pass even though a lasting word is there ("Could
// not resolve hostname h: Temporary failure in name resolution"). A failure
// with none of them is taken as lasting.
var (
	diskWords    = []string{"no space left on device", "disk quota exceeded"}
	surelyPassed = []string{"temporary failure in name resolution", "resource temporarily unavailable", "try again"}
	lastingWords = []string{
		"not found", "does not appear to be a git repository", "not a git repository", "does not exist",
		"authentication failed", "could not read username", "could not read password", "terminal prompts disabled",
		"permission denied", "access denied", "host key verification failed", "name or service not known",
		"could not resolve host", "returned error: 4",
	}
	passingWords = []string{
		"timed out", "timeout", "connection reset", "connection refused", "connection closed",
		"failed to connect", "couldn't connect", "broken pipe", "network is unreachable", "no route to host",
		"the remote end hung up unexpectedly", "early eof", "rpc failed", "unexpected disconnect",
		"gnutls", "ssl_read", "ssl_connect", "tls connection", "http/2 stream",
		"returned error: 429", "returned error: 500", "returned error: 502", "returned error: 503", "returned error: 504",
		"service unavailable", "too many open files", "cannot allocate memory", "out of memory",
	}
)

// cloneFailure reads a failed git clone's stderr: whether trying again
// later may succeed, and whether the disk is full.
func cloneFailure(stderr string) (retryable bool, disk bool) {
	low := strings.ToLower(stderr)
	has := func(words []string) bool {
		for _, w := range words {
			if strings.Contains(low, w) {
				return true
			}
		}
		return false
	}
	switch {
	case has(diskWords):
		return true, true
	case has(surelyPassed):
		return true, false
	case has(lastingWords):
		return false, false
	default:
		return has(passingWords), false
	}
}

// gitMissing says whether err is git not being there to run.
func gitMissing(err error) bool {
	return errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist)
}

// describeSource names what a clone was asked for, credentials masked.
func describeSource(spec Spec) string {
	if spec.Branch == "" {
		return fmt.Sprintf("%s (the remote's default branch)", redact(spec.GitRoot))
	}
	return fmt.Sprintf("%s at branch %q", redact(spec.GitRoot), spec.Branch)
}
