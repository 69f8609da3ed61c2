package e2e_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	notificationv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/notification/v1"
)

// githubAPI stands in for GitHub's REST API on loopback, speaking its
// documented contract for what the watches read: GET
// /repos/{owner}/{repo}/pulls/{n} (state, merged, mergeable,
// mergeable_state, head.sha, base.ref), …/pulls/{n}/comments (review
// comments, paged), …/issues/{n}/comments (the conversation's comments,
// paged) and /repos/{owner}/{repo}/commits/{sha}/check-runs,
// each authorised with the token as a Bearer header (401 "Bad
// credentials" otherwise).
type githubAPI struct {
	token string
	srv   *httptest.Server
	mu    sync.Mutex
	pulls map[string]*fakePull // "owner/repo/n"
}

type fakePull struct {
	merged, conflicted bool
	// comments are the review comments; issueComments the conversation's.
	comments, issueComments []map[string]any
}

var githubPath = regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/(pulls/(\d+)(/comments)?|commits/([^/]+)/check-runs|issues/(\d+)/comments)$`)

func newGitHubAPI(t *testing.T) *githubAPI {
	t.Helper()
	f := &githubAPI{token: "ghp_e2e" + strconv.FormatInt(time.Now().UnixNano(), 10), pulls: map[string]*fakePull{}}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		if r.Header.Get("Authorization") != "Bearer "+f.token {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"message":"Bad credentials","documentation_url":"https://docs.github.com/rest"}`)
			return
		}
		m := githubPath.FindStringSubmatch(r.URL.Path)
		if r.Method != http.MethodGet || m == nil {
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"message":"Not Found"}`)
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if m[6] != "" { // check runs: none fail here
			_, _ = io.WriteString(w, `{"total_count":0,"check_runs":[]}`)
			return
		}
		if m[7] != "" { // a pull request's conversation, as an issue's comments
			p, ok := f.pulls[m[1]+"/"+m[2]+"/"+m[7]]
			if !ok {
				w.WriteHeader(http.StatusNotFound)
				_, _ = io.WriteString(w, `{"message":"Not Found"}`)
				return
			}
			page := p.issueComments
			if r.URL.Query().Get("page") != "1" {
				page = nil
			}
			_ = json.NewEncoder(w).Encode(append([]map[string]any{}, page...))
			return
		}
		p, ok := f.pulls[m[1]+"/"+m[2]+"/"+m[4]]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"message":"Not Found"}`)
			return
		}
		if m[5] != "" {
			page := p.comments
			if r.URL.Query().Get("page") != "1" {
				page = nil
			}
			_ = json.NewEncoder(w).Encode(append([]map[string]any{}, page...))
			return
		}
		n, _ := strconv.Atoi(m[4])
		state, mergeable, mergeableState := "open", true, "clean"
		if p.conflicted {
			mergeable, mergeableState = false, "dirty"
		}
		if p.merged {
			state, mergeableState = "closed", "unknown"
		}
		_ = json.NewEncoder(w).Encode(map[string]any{
			"number": n, "state": state, "merged": p.merged, "mergeable": mergeable, "mergeable_state": mergeableState,
			"html_url": "https://github.com/" + m[1] + "/" + m[2] + "/pull/" + m[4],
			"head":     map[string]any{"sha": "0123456789abcdef0123456789abcdef01234567", "ref": "zimmer-demo"},
			"base":     map[string]any{"ref": "main"},
		})
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *githubAPI) open(repo string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pulls[repo+"/"+strconv.Itoa(n)] = &fakePull{}
}

func (f *githubAPI) change(repo string, n int, do func(*fakePull)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	do(f.pulls[repo+"/"+strconv.Itoa(n)])
}

// githubHook posts webhook deliveries to the gateway as GitHub does:
// X-Hub-Signature-256 = "sha256=" + hex HMAC-SHA256(secret, body).
type githubHook struct {
	url    string
	secret string
}

// deliver posts body as event under delivery id, signed with secret ("":
// the hook's own; "-": unsigned).
func (h githubHook) deliver(t *testing.T, event, id, body, secret string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, h.url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "GitHub-Hookshot/e2e")
	req.Header.Set("X-GitHub-Event", event)
	req.Header.Set("X-GitHub-Delivery", id)
	if secret == "" {
		secret = h.secret
	}
	if secret != "-" {
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write([]byte(body))
		req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// pullRequestEvent is a pull_request delivery's fixture.
func pullRequestEvent(action, repo string, n int, merged bool) string {
	b, _ := json.Marshal(map[string]any{
		"action": action, "number": n,
		"pull_request": map[string]any{"number": n, "state": map[bool]string{true: "closed", false: "open"}[merged], "merged": merged,
			"html_url": fmt.Sprintf("https://github.com/%s/pull/%d", repo, n)},
		"repository": map[string]any{"full_name": repo},
		"sender":     map[string]any{"login": "tadasant"},
	})
	return string(b)
}

// noticeMessage is a queued message with its origin.
type noticeMessage struct {
	ID      int64  `json:"id"`
	Status  string `json:"status"`
	Origin  string `json:"origin"`
	Content string `json:"content"`
}

func (c restClient) notices(t *testing.T, id int64) []noticeMessage {
	t.Helper()
	code, body := c.do(t, http.MethodGet, fmt.Sprintf("/api/v1/sessions/%d/enqueued_messages", id), "")
	require.Equal(t, http.StatusOK, code, body)
	var got struct {
		EnqueuedMessages []noticeMessage `json:"enqueued_messages"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &got), body)
	return got.EnqueuedMessages
}

func ofOrigin(ms []noticeMessage, origin string) []noticeMessage {
	var out []noticeMessage
	for _, m := range ms {
		if m.Origin == origin {
			out = append(out, m)
		}
	}
	return out
}

// trackedPR is a session's pull request as REST shows it.
type trackedPR struct {
	URL        string `json:"url"`
	Repository string `json:"repository"`
	Number     int    `json:"number"`
	State      string `json:"state"`
}

func (c restClient) pullRequests(t *testing.T, id int64) []trackedPR {
	t.Helper()
	code, body := c.do(t, http.MethodGet, fmt.Sprintf("/api/v1/sessions/%d", id), "")
	require.Equal(t, http.StatusOK, code, body)
	var got struct {
		Session struct {
			GitHubPullRequests []trackedPR `json:"github_pull_requests"`
		} `json:"session"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &got), body)
	return got.Session.GitHubPullRequests
}

func (c restClient) createWithGoal(t *testing.T, repo, prompt, goal string) int64 {
	t.Helper()
	body, err := json.Marshal(map[string]any{"prompt": prompt, "goal": goal, "git_root": repo, "branch": "main"})
	require.NoError(t, err)
	code, resp := c.do(t, http.MethodPost, "/api/v1/sessions", string(body))
	require.Equal(t, http.StatusCreated, code, resp)
	var got struct{ Session struct{ ID int64 } }
	require.NoError(t, json.Unmarshal([]byte(resp), &got))
	return got.Session.ID
}

// TestGitHubPullRequests drives issue 27 on the real binaries with the
// demo agent, a loopback fake of GitHub's REST API and signed fixture
// deliveries. The poll interval is an hour, so whatever happens within
// seconds of a change was the webhook's doing (the polling itself is
// prwatch's TestAWatchPollsAtItsInterval). A PR the agent's own tool
// opened is recorded, one it merely mentions is not, and the pause hook
// says nothing; its merge while the session runs queues exactly one
// automated_pr_merged notice, delivered after the turn, and never again
// (a replayed delivery, a restarted lifecycle); a conflict and a review
// comment arrive as their own messages (the comment as a caller's
// artifact text, no human message); a forced archive over a merge notice
// pages nobody, over a conflict notice it pages once; unsigned, wrongly
// signed and API-keyed deliveries are refused, an unhandled event ignored.
func TestGitHubPullRequests(t *testing.T) {
	t.Parallel()
	gh := newGitHubAPI(t)
	secret := "e2e-github-webhook-secret"
	s := newStackWith(t, stackOptions{turns: true, env: map[string][]string{
		"gateway":   {"GITHUB_WEBHOOK_SECRET=" + secret},
		"lifecycle": {"GITHUB_TOKEN=" + gh.token, "GITHUB_API_URL=" + gh.srv.URL, "GITHUB_POLL_INTERVAL=1h"},
	}})
	api := restClient{base: "http://" + s.addr["gateway"], key: s.apiKey}
	hook := githubHook{url: api.base + "/github/webhook", secret: secret}
	repo := gitRepo(t)
	const ghRepo = "acme/widgets"
	for _, n := range []int{7, 8, 9, 11} {
		gh.open(ghRepo, n)
	}
	prURL := func(n int) string { return fmt.Sprintf("https://github.com/%s/pull/%d", ghRepo, n) }

	merged := api.createWithGoal(t, repo, "@demo pr-create "+prURL(7)+"\n@demo say I also looked at "+prURL(8)+"\n@demo sleep 10s",
		"Fix the bug and open a pull request")
	t.Run("the PR the agent's tool opened is recorded, the one it mentions is not", func(t *testing.T) {
		require.Eventually(t, func() bool { return len(api.pullRequests(t, merged)) > 0 }, 30*time.Second, 100*time.Millisecond,
			"the created PR was never recorded")
		require.Equal(t, []trackedPR{{URL: prURL(7), Repository: ghRepo, Number: 7, State: "open"}}, api.pullRequests(t, merged))
		require.Contains(t, strings.Join(timeline(t, api, merged, "note"), "\n"), "[GitHub] tracking pull request "+prURL(7))
		res := callTool(t, mcpConnect(t, s, "?tool_groups=sessions"), "get_session", map[string]any{"session_id": merged})
		require.False(t, res.IsError, text(res))
		require.Contains(t, text(res), "### Pull requests\n\n- "+prURL(7)+" — open")
	})

	t.Run("the webhook's signature", func(t *testing.T) {
		body := pullRequestEvent("synchronize", ghRepo, 7, false)
		code, resp := hook.deliver(t, "pull_request", uuid.NewString(), body, "-")
		require.Equal(t, http.StatusUnauthorized, code, "unsigned: %s", resp)
		require.Contains(t, resp, "not signed")
		code, resp = hook.deliver(t, "pull_request", uuid.NewString(), body, "not-the-secret")
		require.Equal(t, http.StatusUnauthorized, code, "wrongly signed: %s", resp)
		require.Contains(t, resp, "does not match")
		for _, c := range []restClient{{base: api.base, key: s.apiKey}, {base: api.base, bearer: s.apiKey}} {
			code, resp := c.do(t, http.MethodPost, "/github/webhook", body)
			require.Equal(t, http.StatusUnauthorized, code, "an API key opens nothing: %s", resp)
		}
		code, resp = hook.deliver(t, "ping", uuid.NewString(), `{"zen":"Keep it logically awesome.","hook_id":1}`, "")
		require.Equal(t, http.StatusOK, code, resp)
		code, resp = hook.deliver(t, "star", uuid.NewString(), `{"action":"created","repository":{"full_name":"acme/widgets"}}`, "")
		require.Equal(t, http.StatusAccepted, code, resp)
		require.Contains(t, resp, `"outcome":"ignored"`)
	})

	t.Run("a merge while the session runs is one notice, delivered after the turn", func(t *testing.T) {
		require.Equal(t, "running", api.session(t, merged).Status)
		gh.change(ghRepo, 7, func(p *fakePull) { p.merged = true })
		delivery := uuid.NewString()
		body := pullRequestEvent("closed", ghRepo, 7, true)
		sent := time.Now()
		code, resp := hook.deliver(t, "pull_request", delivery, body, "")
		require.Equal(t, http.StatusOK, code, resp)
		require.Contains(t, resp, `"outcome":"accepted"`)
		require.Eventually(t, func() bool { return len(ofOrigin(api.notices(t, merged), "automated_pr_merged")) == 1 },
			10*time.Second, 50*time.Millisecond, "the merge was never noticed")
		t.Logf("noticed %s after the delivery", time.Since(sent))
		require.Equal(t, "running", api.session(t, merged).Status, "queued behind the running turn")
		notice := ofOrigin(api.notices(t, merged), "automated_pr_merged")[0]
		require.Contains(t, notice.Content, prURL(7)+" was merged")

		// GitHub redelivers it; it was taken once.
		code, resp = hook.deliver(t, "pull_request", delivery, body, "")
		require.Equal(t, http.StatusOK, code, resp)
		require.Contains(t, resp, `"outcome":"duplicate"`)

		require.Eventually(t, func() bool {
			ms := ofOrigin(api.notices(t, merged), "automated_pr_merged")
			return len(ms) == 1 && ms[0].Status == "sent"
		}, 60*time.Second, 200*time.Millisecond, "the notice was never delivered after the turn")
		require.Eventually(t, func() bool { return api.pullRequests(t, merged)[0].State == "merged" }, 10*time.Second, 100*time.Millisecond)

		// The watcher's owner restarts; a fresh delivery about the PR comes.
		s.kill("lifecycle")
		s.start("lifecycle")
		s.waitHealthy("lifecycle")
		code, resp = hook.deliver(t, "pull_request", uuid.NewString(), pullRequestEvent("closed", ghRepo, 7, true), "")
		require.Equal(t, http.StatusAccepted, code, "a merged PR is watched no more: %s", resp)
		time.Sleep(2 * time.Second)
		require.Len(t, ofOrigin(api.notices(t, merged), "automated_pr_merged"), 1, "never sent again")
		require.Eventually(t, func() bool { return api.session(t, merged).Status == "needs_input" }, 60*time.Second, 200*time.Millisecond)
		for _, l := range timeline(t, api, merged, "warning") {
			require.NotContains(t, l, "no PR URL", "the goal's PR was recorded: the pause hook says nothing")
		}
	})

	conflicted := api.createWithGoal(t, repo, "@demo pr-create "+prURL(9)+"\n@demo sleep 120s", "open a PR")
	t.Run("a conflict, then a review comment, arrive as their own messages", func(t *testing.T) {
		require.Eventually(t, func() bool { return len(api.pullRequests(t, conflicted)) == 1 }, 30*time.Second, 100*time.Millisecond)
		gh.change(ghRepo, 9, func(p *fakePull) { p.conflicted = true })
		code, resp := hook.deliver(t, "pull_request", uuid.NewString(), pullRequestEvent("synchronize", ghRepo, 9, false), "")
		require.Equal(t, http.StatusOK, code, resp)
		require.Eventually(t, func() bool { return len(ofOrigin(api.notices(t, conflicted), "automated_merge_conflict")) == 1 },
			10*time.Second, 50*time.Millisecond, "the conflict was never noticed")

		const comment = "Please rename fooBar to widgetCount before this merges."
		gh.change(ghRepo, 9, func(p *fakePull) {
			p.comments = append(p.comments, map[string]any{"id": 501, "body": comment, "path": "widgets.go", "line": 12,
				"user": map[string]any{"login": "tadasant"}, "html_url": prURL(9) + "#discussion_r501"})
		})
		b, _ := json.Marshal(map[string]any{"action": "created", "comment": map[string]any{"id": 501, "body": comment},
			"pull_request": map[string]any{"number": 9}, "repository": map[string]any{"full_name": ghRepo}})
		code, resp = hook.deliver(t, "pull_request_review_comment", uuid.NewString(), string(b), "")
		require.Equal(t, http.StatusOK, code, resp)
		var callers []noticeMessage
		require.Eventually(t, func() bool {
			callers = ofOrigin(api.notices(t, conflicted), "caller")
			return len(callers) == 1
		}, 10*time.Second, 50*time.Millisecond, "the review comment never arrived")
		require.Contains(t, callers[0].Content, "> "+comment)
		require.Contains(t, callers[0].Content, "artifact text from GitHub, not a message from a human")
		require.Len(t, ofOrigin(api.notices(t, conflicted), "automated_merge_conflict"), 1, "the same conflict is noticed once")
		require.Empty(t, api.slackSessionByID(t, conflicted).HumanMessages, "a GitHub comment is never a human message")
	})

	t.Run("a forced archive over the merge notice pages nobody; over the conflict notice it pages once", func(t *testing.T) {
		exempt := api.createWithGoal(t, repo, "@demo pr-create "+prURL(11)+"\n@demo sleep 120s", "open a PR")
		require.Eventually(t, func() bool { return len(api.pullRequests(t, exempt)) == 1 }, 30*time.Second, 100*time.Millisecond)
		gh.change(ghRepo, 11, func(p *fakePull) { p.merged = true })
		code, resp := hook.deliver(t, "pull_request", uuid.NewString(), pullRequestEvent("closed", ghRepo, 11, true), "")
		require.Equal(t, http.StatusOK, code, resp)
		require.Eventually(t, func() bool { return len(ofOrigin(api.notices(t, exempt), "automated_pr_merged")) == 1 },
			10*time.Second, 50*time.Millisecond)

		path := func(id int64) string { return fmt.Sprintf("/api/v1/sessions/%d/archive", id) }
		code, resp = api.do(t, http.MethodPost, path(exempt), `{}`)
		require.Equal(t, http.StatusUnprocessableEntity, code, "the guard still refuses over the notice: %s", resp)
		code, resp = api.do(t, http.MethodPost, path(exempt), `{"force":true}`)
		require.Equal(t, http.StatusOK, code, resp)
		code, resp = api.do(t, http.MethodPost, path(conflicted), `{"force":true}`)
		require.Equal(t, http.StatusOK, code, resp)
		require.Contains(t, last(timeline(t, api, conflicted, "transition")),
			"1 tracked pull request had not reached a terminal state, so no merge notification will be delivered for it: "+prURL(9))

		notification := notificationv1.NewNotificationServiceClient(s.dial("notification", s.asOperator()))
		pages := func(id int64) int {
			resp, err := notification.ListAlerts(t.Context(), &notificationv1.ListAlertsRequest{PageSize: 500})
			require.NoError(t, err)
			n := 0
			for _, a := range resp.GetAlerts() {
				if a.GetDedupKey() == fmt.Sprintf("queue_messages_retired/%d", id) {
					n++
				}
			}
			return n
		}
		// The conflict's archive came second; once it paged, the merge
		// notice's retirement (relayed before it) has had its say.
		require.Eventually(t, func() bool { return pages(conflicted) == 1 }, 30*time.Second, 100*time.Millisecond,
			"a conflict notice discarded by force pages")
		require.Eventually(t, func() bool {
			ms := ofOrigin(api.notices(t, exempt), "automated_pr_merged")
			return len(ms) == 1 && ms[0].Status == "undelivered"
		}, 20*time.Second, 100*time.Millisecond, "the merge notice is retired, not hidden")
		require.Zero(t, pages(exempt), "a merge notice discarded by force pages nobody")
	})
}

// TestGitHubWatchesAfterUnarchiveAndConversationComments drives the last
// gaps of issue 27 by polling alone (no webhook; a one-second interval):
// an archive ends the watch of a session's open pull request, and the
// unarchive starts it again (LC-39), so a merge after it is noticed, once;
// a merge notice to a failed session is queued there, pending, and its
// restart's turn takes it (QU-21); a comment in a pull request's
// conversation tab (GitHub's issue comments) reaches its session as a
// caller's message of artifact text, once, never as a human message.
func TestGitHubWatchesAfterUnarchiveAndConversationComments(t *testing.T) {
	t.Parallel()
	gh := newGitHubAPI(t)
	s := newStackWith(t, stackOptions{turns: true, env: map[string][]string{
		"lifecycle": {"GITHUB_TOKEN=" + gh.token, "GITHUB_API_URL=" + gh.srv.URL, "GITHUB_POLL_INTERVAL=1s"},
	}})
	api := restClient{base: "http://" + s.addr["gateway"], key: s.apiKey}
	repo := gitRepo(t)
	const ghRepo = "acme/gadgets"
	for _, n := range []int{21, 22, 23} {
		gh.open(ghRepo, n)
	}
	prURL := func(n int) string { return fmt.Sprintf("https://github.com/%s/pull/%d", ghRepo, n) }

	t.Run("an unarchive watches the session's open pull requests again", func(t *testing.T) {
		t.Parallel()
		id := api.createWithGoal(t, repo, "@demo pr-create "+prURL(21), "open a pull request")
		require.Eventually(t, func() bool { return len(api.pullRequests(t, id)) == 1 }, 30*time.Second, 100*time.Millisecond)
		api.waitStatus(t, id, "needs_input")
		code, resp := api.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/archive", id), `{}`)
		require.Equal(t, http.StatusOK, code, resp)
		// The watch's next reading finds the session archived and ends;
		// a merge now is not the archived session's business.
		time.Sleep(3 * time.Second)
		code, resp = api.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/unarchive", id), `{}`)
		require.Equal(t, http.StatusOK, code, resp)
		gh.change(ghRepo, 21, func(p *fakePull) { p.merged = true })
		require.Eventually(t, func() bool { return api.pullRequests(t, id)[0].State == "merged" },
			30*time.Second, 200*time.Millisecond, "the unarchived session's pull request is not watched")
		// The session is at rest: the notice is its turn at once.
		merged := func() int {
			n := 0
			for _, p := range api.prompts(t, id) {
				if strings.Contains(p.Prompt, prURL(21)+" was merged") {
					n++
				}
			}
			return n
		}
		require.Eventually(t, func() bool { return merged() == 1 }, 30*time.Second, 200*time.Millisecond,
			"the merge notice never became the session's turn")
		time.Sleep(3 * time.Second)
		require.Equal(t, 1, merged(), "noticed once")
	})

	t.Run("a failed session's merge notice waits in its queue for the restart (QU-21)", func(t *testing.T) {
		t.Parallel()
		id := api.createWithGoal(t, repo, "@demo pr-create "+prURL(23)+"\n@demo exit 3", "open a pull request")
		require.Eventually(t, func() bool { return len(api.pullRequests(t, id)) == 1 }, 30*time.Second, 100*time.Millisecond)
		api.waitStatus(t, id, "failed")
		gh.change(ghRepo, 23, func(p *fakePull) { p.merged = true })
		var notices []noticeMessage
		require.Eventually(t, func() bool {
			notices = ofOrigin(api.notices(t, id), "automated_pr_merged")
			return len(notices) == 1
		}, 30*time.Second, 200*time.Millisecond, "the merge notice was never queued on the failed session")
		require.Equal(t, "pending", notices[0].Status, "nothing delivers to a failed session")
		require.Eventually(t, func() bool { return api.pullRequests(t, id)[0].State == "merged" }, 10*time.Second, 100*time.Millisecond,
			"marked notified once queued")

		code, resp := api.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/restart", id), "{}")
		require.Equal(t, http.StatusOK, code, resp)
		require.Eventually(t, func() bool {
			ms := ofOrigin(api.notices(t, id), "automated_pr_merged")
			return len(ms) == 1 && ms[0].Status == "sent"
		}, 60*time.Second, 200*time.Millisecond, "the restart's turn never handed the notice over")
	})

	t.Run("a conversation comment is a caller's artifact text, once", func(t *testing.T) {
		t.Parallel()
		id := api.createWithGoal(t, repo, "@demo pr-create "+prURL(22)+"\n@demo sleep 120s", "open a pull request")
		require.Eventually(t, func() bool { return len(api.pullRequests(t, id)) == 1 }, 30*time.Second, 100*time.Millisecond)
		const comment = "Could you split the migration into its own PR?"
		gh.change(ghRepo, 22, func(p *fakePull) {
			p.issueComments = append(p.issueComments, map[string]any{"id": 9001, "body": comment,
				"user": map[string]any{"login": "tadasant"}, "html_url": prURL(22) + "#issuecomment-9001"})
		})
		var callers []noticeMessage
		require.Eventually(t, func() bool {
			callers = ofOrigin(api.notices(t, id), "caller")
			return len(callers) == 1
		}, 30*time.Second, 200*time.Millisecond, "the conversation comment never arrived")
		require.Contains(t, callers[0].Content, "> "+comment)
		require.Contains(t, callers[0].Content, "A comment in the conversation of your pull request "+prURL(22)+", by the GitHub account tadasant")
		require.Contains(t, callers[0].Content, "artifact text from GitHub, not a message from a human")
		time.Sleep(3 * time.Second) // three more readings
		require.Len(t, ofOrigin(api.notices(t, id), "caller"), 1, "each comment once")
		require.Empty(t, api.slackSessionByID(t, id).HumanMessages, "a GitHub comment is never a human message")
	})
}
