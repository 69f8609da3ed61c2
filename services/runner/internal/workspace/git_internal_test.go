package workspace

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestGitSaidQuotesTheLastLinesWithoutCredentials(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, stderr, want string
	}{
		{"nothing", "", saidFallback},
		{"one line", "fatal: repository '/nope' does not exist\n", "fatal: repository '/nope' does not exist"},
		{
			"the last three, blank lines and the clone banner left out",
			"Cloning into '/w/1'...\n\nremote: one\nremote: two\n  remote: three  \nfatal: early EOF\n\n",
			"remote: two / remote: three / fatal: early EOF",
		},
		{
			"git's access advice gives way to the cause",
			"ssh: connect to host h port 22: Connection refused\nfatal: Could not read from remote repository.\n\n" +
				"Please make sure you have the correct access rights\nand the repository exists.\n",
			"ssh: connect to host h port 22: Connection refused / fatal: Could not read from remote repository.",
		},
		{"a progress line counts as its last state", "Receiving objects:  10%\rReceiving objects:  55%\r\nfatal: x\n", "Receiving objects:  55% / fatal: x"},
		{
			"credentials in a URL",
			"fatal: unable to access 'https://bot:ghp_secret@example.com/r.git/': 403",
			"fatal: unable to access 'https://***@example.com/r.git/': 403",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, gitSaid(tc.stderr))
		})
	}
	long := gitSaid(strings.Repeat("x", 1000))
	require.Equal(t, strings.Repeat("x", saidLineMax)+"…", long, "a long line is cut")
}

func TestCloneFailureSaysWhetherItMayPass(t *testing.T) {
	t.Parallel()
	tests := []struct {
		stderr          string
		retryable, disk bool
	}{
		{"fatal: repository '/nope' does not exist", false, false},
		{"fatal: Remote branch nope not found in upstream origin", false, false},
		{"remote: Repository not found.\nfatal: repository 'https://github.com/a/b/' not found", false, false},
		{"fatal: could not read Username for 'https://github.com': terminal prompts disabled", false, false},
		{"git@github.com: Permission denied (publickey).\nfatal: Could not read from remote repository.", false, false},
		{"Host key verification failed.\nfatal: Could not read from remote repository.", false, false},
		{"fatal: unable to access 'https://nope.invalid/': Could not resolve host: nope.invalid", false, false},
		{"fatal: something nobody has seen before", false, false},
		{"ssh: connect to host h port 22: Connection timed out\nfatal: Could not read from remote repository.", true, false},
		{"ssh: Could not resolve hostname h: Temporary failure in name resolution", true, false},
		{"fatal: unable to access 'https://h/': Failed to connect to h port 443 after 0 ms: Couldn't connect to server", true, false},
		{"error: RPC failed; curl 56 GnuTLS recv error (-9)\nfatal: early EOF\nfatal: fetch-pack: invalid index-pack output", true, false},
		{"error: RPC failed; curl 18 transfer closed\nfatal: the remote end hung up unexpectedly\nfatal: early EOF", true, false},
		{"fatal: unable to access 'https://h/': The requested URL returned error: 503", true, false},
		{"fatal: unable to access 'https://h/': The requested URL returned error: 404", false, false},
		{"fatal: write error: No space left on device\nfatal: index-pack failed", true, true},
	}
	for _, tc := range tests {
		retryable, disk := cloneFailure(tc.stderr)
		require.Equal(t, tc.retryable, retryable, "retryable: %s", tc.stderr)
		require.Equal(t, tc.disk, disk, "disk: %s", tc.stderr)
	}
}

func TestGitEnvAsksNothingAndPointsNowhere(t *testing.T) {
	t.Parallel()
	env := gitEnv([]string{"PATH=/bin", "GIT_DIR=/elsewhere/.git", "GIT_WORK_TREE=/elsewhere", "LC_ALL=de_DE.UTF-8", "HOME=/h"})
	last := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		last[k] = v // exec keeps the last value of a key
	}
	require.Equal(t, map[string]string{
		"PATH": "/bin", "HOME": "/h", "LC_ALL": "C", "LANGUAGE": "C",
		"GIT_TERMINAL_PROMPT": "0", "GCM_INTERACTIVE": "never", "GIT_SSH_COMMAND": "ssh -o BatchMode=yes",
	}, last)

	own := gitEnv([]string{"GIT_SSH_COMMAND=ssh -i /keys/deploy -o BatchMode=yes"})
	require.NotContains(t, own, "GIT_SSH_COMMAND=ssh -o BatchMode=yes", "an operator's ssh command is theirs")
}

func TestTailBufferKeepsTheEnd(t *testing.T) {
	t.Parallel()
	b := &tailBuffer{limit: 5}
	for _, s := range []string{"abc", "defg", "h"} {
		n, err := b.Write([]byte(s))
		require.NoError(t, err)
		require.Equal(t, len(s), n)
	}
	require.Equal(t, "defgh", b.String())
}
