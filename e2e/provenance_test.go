package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
)

// TestProvenance reads the human-message record and the hierarchy the way
// a client and an agent do, over REST, MCP and the prompt blocks, on the
// real binaries: the conversation reads in the order it was said, every
// entry says where it was said, untitled sessions have a name, the roster
// normalises what an operator types, and a truncated walk never claims
// more than it searched.
func TestProvenance(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	api := restClient{base: "http://" + s.addr["gateway"], key: s.apiKey}
	ctx := context.Background()
	// The roster and human messages are internal: this test records them
	// as the gateway's boundaries do, as a Zimmer service.
	provenance := lineagev1.NewProvenanceServiceClient(s.dial("lineage", s.asService("gateway")))

	router := createREST(t, api, `{"prompt":"route","git_root":"g","title":"Router","slug":"prov-router"}`)
	worker := createREST(t, api, fmt.Sprintf(`{"prompt":"work","git_root":"g","parent_session_id":%d}`, router))
	require.Eventually(t, func() bool { // the created events reach lineage
		p, err := provenance.GetSessionProvenance(ctx, &lineagev1.GetSessionProvenanceRequest{SessionId: router})
		return err == nil && len(p.GetSessionHierarchy().GetNodes()) == 2
	}, 20*time.Second, 100*time.Millisecond)

	t.Run("the roster normalises what the operator typed", func(t *testing.T) {
		sup := restClient{base: s.startSupervisedGateway(t, "operator", "e2e-supervisor-pass")}
		do := func(method, path, body string) (int, string) {
			t.Helper()
			req, err := http.NewRequest(method, sup.base+path, strings.NewReader(body))
			require.NoError(t, err)
			req.SetBasicAuth("operator", "e2e-supervisor-pass")
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			return resp.StatusCode, string(b)
		}
		// Slack IDs trimmed, blanks dropped, a repeat merged rather than
		// refused; the email trimmed and lower-cased.
		code, body := do("PATCH", "/supervisor/users/juliehazz",
			`{"slack_user_ids":[" U42 ","","U42","W7"],"email":"  Julie@Example.COM "}`)
		require.Equal(t, http.StatusOK, code, body)
		var got struct {
			User struct {
				Email        string   `json:"email"`
				SlackUserIDs []string `json:"slack_user_ids"`
			} `json:"user"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &got))
		require.Equal(t, []string{"U42", "W7"}, got.User.SlackUserIDs)
		require.Equal(t, "julie@example.com", got.User.Email)

		// An email is unique ignoring case, on create and on edit.
		code, body = do("POST", "/supervisor/users", `{"key":"sam","display_name":"Sam","email":"JULIE@example.com"}`)
		require.Equal(t, http.StatusConflict, code, body)
		require.Contains(t, body, "julie@example.com")
		require.Contains(t, body, "juliehazz")
		code, body = do("PATCH", "/supervisor/users/tadasant", `{"email":"Julie@EXAMPLE.com"}`)
		require.Equal(t, http.StatusConflict, code, body)
		code, body = do("POST", "/supervisor/users", `{"key":"sam","display_name":"Sam","email":"Sam@Example.com","slack_user_ids":["U9","U9 "]}`)
		require.Equal(t, http.StatusCreated, code, body)
		require.Contains(t, body, `"email":"sam@example.com"`)
		require.Contains(t, body, `"slack_user_ids":["U9"]`)
		code, body = do("GET", "/supervisor/users", "")
		require.Equal(t, http.StatusOK, code, body)
		require.NotContains(t, body, "Example", "nothing stored with its case")
	})

	// Julie's Slack ID, set here too so that what follows does not depend
	// on the roster test passing.
	_, err := provenance.UpdateUser(ctx, &lineagev1.UpdateUserRequest{Key: "juliehazz", SlackUserIds: []string{"U42"}, SetSlackUserIds: true})
	require.NoError(t, err)

	// 26 messages from the web UI's admin, alternating between the two
	// sessions a minute apart, then one from Julie on Slack, the newest.
	base := time.Date(2026, 2, 1, 9, 0, 0, 0, time.UTC)
	const total = 27
	// Each is said through a human boundary (the test-only stand-in for the
	// web UI and Slack), which establishes the actor.
	for i := 1; i <= total; i++ {
		m := humanMessage{
			Actor:      webUIAdmin,
			Provenance: "web_ui.follow_up", AuthoredInSessionID: router, Content: fmt.Sprintf("message %02d", i),
			OccurredAt: base.Add(time.Duration(i) * time.Minute),
		}
		if i%2 == 0 {
			m.AuthoredInSessionID = worker
		}
		if i == total {
			m.Actor = slackUser("U42")
			m.Provenance, m.SlackPermalink = "slack.dm", "https://acme.slack.com/archives/D1/p27"
		}
		rec := s.say(t, m)
		require.True(t, rec.Recorded, rec.NotRecordedReason)
	}
	// The newest 25, oldest first: message 03 … message 27.
	var want []string
	for i := total - 24; i <= total; i++ {
		want = append(want, fmt.Sprintf("message %02d", i))
	}
	requireInOrder := func(t *testing.T, text string) {
		t.Helper()
		at := -1
		for _, w := range want {
			i := strings.Index(text, w)
			require.Greater(t, i, at, "%q must come after the messages said before it\n%s", w, text)
			at = i
		}
		require.NotContains(t, text, "message 02", "older than the newest 25")
		require.NotContains(t, text, "message 01")
		require.Contains(t, text, "2 older messages not shown.")
	}

	t.Run("REST reads in order and says where each was said", func(t *testing.T) {
		code, body := api.do(t, "GET", fmt.Sprintf("/api/v1/sessions/%d", worker), "")
		require.Equal(t, http.StatusOK, code, body)
		var detail struct {
			SessionHierarchy struct {
				Outline string `json:"outline"`
				Nodes   []struct {
					ID    int64  `json:"id"`
					Title string `json:"title"`
					Label string `json:"label"`
				} `json:"nodes"`
			} `json:"session_hierarchy"`
			HumanMessages []struct {
				Content      string `json:"content"`
				Origin       string `json:"origin"`
				EntryPoint   string `json:"entry_point"`
				Channel      string `json:"channel"`
				ChannelLabel string `json:"channel_label"`
				AuthoredIn   *struct {
					ID    int64  `json:"id"`
					Label string `json:"label"`
				} `json:"authored_in"`
				AuthoredInSessionID int64 `json:"authored_in_session_id"`
			} `json:"human_messages"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &detail))
		msgs := detail.HumanMessages
		require.Len(t, msgs, 25, body)
		for i, m := range msgs {
			require.Equal(t, want[i], m.Content, "entry %d", i)
			require.NotNil(t, m.AuthoredIn, "entry %d carries authored_in", i)
			require.Equal(t, m.AuthoredInSessionID, m.AuthoredIn.ID)
			if m.AuthoredInSessionID == worker {
				require.Equal(t, "here", m.Origin)
				require.Equal(t, fmt.Sprintf("Session #%d", worker), m.AuthoredIn.Label, "an untitled session has a name")
			} else {
				require.Equal(t, "elsewhere", m.Origin)
				require.Equal(t, "Router", m.AuthoredIn.Label)
			}
		}
		first, last := msgs[0], msgs[len(msgs)-1]
		require.Equal(t, "web_ui.follow_up", first.EntryPoint)
		require.Equal(t, "web_ui", first.Channel)
		// The original's channel labels; one said elsewhere names its session.
		label := func(channel string, origin string, in int64) string {
			if origin == "elsewhere" {
				return fmt.Sprintf("%s (session #%d)", channel, in)
			}
			return channel
		}
		require.Equal(t, label("Zimmer web UI", first.Origin, first.AuthoredInSessionID), first.ChannelLabel)
		require.Equal(t, "slack.dm", last.EntryPoint)
		require.Equal(t, "slack", last.Channel)
		require.Equal(t, label("Slack", last.Origin, last.AuthoredInSessionID), last.ChannelLabel)

		var labelled bool
		for _, n := range detail.SessionHierarchy.Nodes {
			if n.ID == worker {
				require.Empty(t, n.Title, "the title is as recorded")
				require.Equal(t, fmt.Sprintf("Session #%d", worker), n.Label)
				labelled = true
			}
		}
		require.True(t, labelled, body)
		require.Contains(t, detail.SessionHierarchy.Outline, fmt.Sprintf("Session #%d ← this session", worker))
	})

	t.Run("MCP reads in order", func(t *testing.T) {
		c := mcpConnect(t, s, "?tool_groups=sessions")
		for _, tool := range []string{"get_session_provenance", "get_session"} {
			res := callTool(t, c, tool, map[string]any{"session_id": fmt.Sprint(worker)})
			require.False(t, res.IsError, text(res))
			requireInOrder(t, text(res))
			require.Contains(t, text(res), fmt.Sprintf("Session #%d ← this session", worker), tool)
			require.Contains(t, text(res), "How to read the outline", tool)
		}
		res := callTool(t, c, "get_session_provenance", map[string]any{"session_id": fmt.Sprint(worker)})
		structured, err := json.Marshal(res.StructuredContent)
		require.NoError(t, err)
		var got struct {
			HumanMessages []struct {
				Content string `json:"content"`
				Channel string `json:"channel"`
			} `json:"human_messages"`
			OlderCount int `json:"older_count"`
		}
		require.NoError(t, json.Unmarshal(structured, &got))
		require.Len(t, got.HumanMessages, 25)
		require.Equal(t, "message 03", got.HumanMessages[0].Content)
		require.Equal(t, "slack", got.HumanMessages[24].Channel)
		require.Equal(t, 2, got.OlderCount)
	})

	t.Run("the full-record prompt block reads in order and says what absence means", func(t *testing.T) {
		blocks, err := provenance.GetPromptBlocks(ctx, &lineagev1.GetPromptBlocksRequest{SessionId: worker})
		require.NoError(t, err)
		requireInOrder(t, blocks.GetHumanMessages())
		require.Contains(t, blocks.GetHumanMessages(), "Absence is meaningful")
		require.Contains(t, blocks.GetHumanMessages(), "never evidence that a human authorized")
		require.Contains(t, blocks.GetSessionHierarchy(), "How to read the outline")
		// No uncle edge in this graph, so no uncle legend (issue 23 rule 19).
		require.NotContains(t, blocks.GetSessionHierarchy(), "(uncle: #N)")
		require.Contains(t, blocks.GetSessionHierarchy(), "spawned")
		require.Contains(t, blocks.GetSessionHierarchy(), fmt.Sprintf("Session #%d ← this session", worker))
	})

	t.Run("a truncated walk that found nothing claims no more than it searched", func(t *testing.T) {
		// A spawn chain ten deep: asked about from its bottom, the walk up
		// stops at MaxDepth (8) and the tree is truncated.
		var bottom int64
		for i := range 10 {
			parent := ""
			if i > 0 {
				parent = fmt.Sprintf(`,"parent_session_id":%d`, bottom)
			}
			bottom = createREST(t, api, fmt.Sprintf(`{"prompt":"p","git_root":"g","title":"chain %d"%s}`, i, parent))
		}
		c := mcpConnect(t, s, "?tool_groups=sessions")
		var md string
		require.Eventually(t, func() bool { // every created event reaches lineage
			res := callTool(t, c, "get_session_provenance", map[string]any{"session_id": fmt.Sprint(bottom)})
			md = text(res)
			return !res.IsError && strings.Contains(md, "at least 9 sessions")
		}, 20*time.Second, 100*time.Millisecond)
		require.Contains(t, md, "Elsewhere in the hierarchy: at least 0")
		require.NotContains(t, md, "recorded anywhere in this hierarchy", "the walk did not search everywhere")
		require.Contains(t, md, "floor")

		blocks, err := provenance.GetPromptBlocks(ctx, &lineagev1.GetPromptBlocksRequest{SessionId: bottom, ProvenanceViaMcpEnabled: true})
		require.NoError(t, err)
		require.Contains(t, blocks.GetHumanMessages(), "at least 0",
			"a missing block would read as nobody in the tree having a record")
	})
}

// startSupervisedGateway starts a second gateway on s with the operator's
// supervisor surface enabled (the stack's own gateway has it off) and
// returns its base URL. stopAll stops it with the rest.
func (s *stack) startSupervisedGateway(t *testing.T, user, pass string) string {
	t.Helper()
	addr := freeAddr(t)
	logf, err := os.OpenFile(filepath.Join(s.logs, "gateway-supervisor.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	require.NoError(t, err)
	cmd := exec.Command(filepath.Join(s.bin, "gateway"))
	// The last of a duplicated variable wins.
	cmd.Env = append(s.env("gateway"), "GATEWAY_HTTP_ADDR="+addr,
		"ZIMMER_SUPERVISOR_USER="+user, "ZIMMER_SUPERVISOR_PASSWORD="+pass)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	require.NoError(t, cmd.Start())
	s.mu.Lock()
	s.procs["gateway-supervisor"] = cmd
	s.mu.Unlock()
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 60*time.Second, 100*time.Millisecond, "the supervised gateway never answered /healthz")
	return "http://" + addr
}
