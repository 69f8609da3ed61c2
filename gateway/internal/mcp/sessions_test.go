package mcp_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/gateway/internal/grpctest"
	"github.com/zimmerhq/zimmer/gateway/internal/lifecyclefake"
	"github.com/zimmerhq/zimmer/gateway/internal/mcp"
	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/platform/slogx"
)

// sessionsBundle serves an MCP handler whose sessions end after ttl idle
// and of which at most max are open.
type sessionsBundle struct {
	url     string
	handler *mcp.Handler
}

func setupSessions(t *testing.T, ttl time.Duration, maxOpen int) *sessionsBundle {
	t.Helper()
	return setupReplica(t, ttl, maxOpen, nil)
}

// setupReplica is a gateway replica's MCP handler whose session ids are
// signed with key (random when nil).
func setupReplica(t *testing.T, ttl time.Duration, maxOpen int, key []byte) *sessionsBundle {
	t.Helper()
	fake := lifecyclefake.New()
	conn := grpctest.DialAsService(t, grpctest.Serve(t, fake.Register))
	h := mcp.NewHandler(lifecyclev1.NewLifecycleServiceClient(conn), slogx.Discard(),
		mcp.Options{Version: "test", SessionTTL: ttl, MaxSessions: maxOpen, SessionKey: key})
	t.Cleanup(func() { _ = h.Shutdown(t.Context()) })
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return &sessionsBundle{url: ts.URL, handler: h}
}

// post sends one JSON-RPC message, in session (when not ""), and returns
// the status, the session id the answer names and the body.
func (b *sessionsBundle) post(t *testing.T, session, message string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, b.url, strings.NewReader(message))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(body)
}

const (
	initializeMessage = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",` +
		`"capabilities":{},"clientInfo":{"name":"flood","version":"1"}}}`
	listToolsMessage = `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`
)

func (b *sessionsBundle) initialize(t *testing.T) string {
	t.Helper()
	code, session, body := b.post(t, "", initializeMessage)
	require.Equal(t, http.StatusOK, code, body)
	require.NotEmpty(t, session)
	return session
}

// requireGone checks session's next request is refused with 404 and a
// JSON-RPC error telling the client to initialize again.
func (b *sessionsBundle) requireGone(t *testing.T, session string) {
	t.Helper()
	code, _, body := b.post(t, session, listToolsMessage)
	require.Equal(t, http.StatusNotFound, code, body)
	var got struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &got), body)
	require.Equal(t, "2.0", got.JSONRPC)
	require.JSONEq(t, "7", string(got.ID))
	require.Equal(t, -32001, got.Error.Code)
	require.Contains(t, got.Error.Message, "MCP session not found")
	require.Contains(t, got.Error.Message, "send initialize again, without an Mcp-Session-Id header, to start a new session")
}

// Many initializes never grow the gateway past the cap, the session closed
// to make room is told to initialize again, and once the TTL passes every
// session's state is gone.
func TestMCPSessionsAreCappedAndExpire(t *testing.T) {
	t.Parallel()
	const maxOpen = 20
	b := setupSessions(t, time.Second, maxOpen)

	first := b.initialize(t)
	code, _, body := b.post(t, first, listToolsMessage)
	require.Equal(t, http.StatusOK, code, body)
	var last string
	for range 2000 {
		last = b.initialize(t)
		require.LessOrEqual(t, b.handler.OpenSessions(), maxOpen, "the state held stays under the cap")
	}
	require.Equal(t, maxOpen, b.handler.OpenSessions())
	b.requireGone(t, first)
	code, _, body = b.post(t, last, listToolsMessage)
	require.Equal(t, http.StatusOK, code, "the newest sessions are open: %s", body)

	// The TTL passes without a request: every session ends and its state
	// is freed by the sweeper.
	require.Eventually(t, func() bool { return b.handler.OpenSessions() == 0 }, 5*time.Second, 50*time.Millisecond,
		"open sessions after the TTL: %d", b.handler.OpenSessions())
	b.requireGone(t, last)

	// A session in use stays open past the TTL.
	busy := b.initialize(t)
	for range 6 {
		time.Sleep(300 * time.Millisecond)
		code, _, body := b.post(t, busy, listToolsMessage)
		require.Equal(t, http.StatusOK, code, body)
	}
}

// A client following the MCP transport starts over after its session
// expired: the expired session's call fails, a new initialize works.
func TestMCPClientInitializesAgainAfterItsSessionExpired(t *testing.T) {
	t.Parallel()
	b := setupSessions(t, time.Second, 10)

	c, err := client.NewStreamableHttpClient(b.url, transport.WithHTTPHeaders(map[string]string{"X-API-Key": testKey}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.Start(t.Context()))
	init := mcpgo.InitializeRequest{}
	// Sessions belong to the initialize handshake; the stateless protocol
	// (2026-07-28) has none to keep.
	init.Params.ProtocolVersion = mcpgo.LATEST_LEGACY_PROTOCOL_VERSION
	init.Params.ClientInfo = mcpgo.Implementation{Name: "mcp-test", Version: "1"}
	_, err = c.Initialize(t.Context(), init)
	require.NoError(t, err)
	require.NotEmpty(t, toolNames(t, c))
	require.Equal(t, 1, b.handler.OpenSessions())

	require.Eventually(t, func() bool { return b.handler.OpenSessions() == 0 }, 5*time.Second, 50*time.Millisecond)
	_, err = c.ListTools(t.Context(), mcpgo.ListToolsRequest{})
	require.ErrorIs(t, err, transport.ErrSessionTerminated)

	_, err = c.Initialize(t.Context(), init)
	require.NoError(t, err)
	require.NotEmpty(t, toolNames(t, c))
	require.Equal(t, 1, b.handler.OpenSessions())
}

// An initialize that still carries an old session's header starts a new
// session rather than being refused.
func TestMCPInitializeWithAStaleSessionHeaderStartsOver(t *testing.T) {
	t.Parallel()
	b := setupSessions(t, time.Hour, 10)

	code, session, body := b.post(t, "no-such-session", initializeMessage)
	require.Equal(t, http.StatusOK, code, body)
	require.NotEmpty(t, session)
	require.NotEqual(t, "no-such-session", session)
	b.requireGone(t, "no-such-session")
}

// Gateway replicas sharing ZIMMER_INTERNAL_TOKEN serve each other's
// sessions: a client's requests may land on either, and its session
// survives the death of the replica that opened it. An id no replica
// signed, or one signed under another token, is refused as before, and a
// replica refuses the sessions it ended itself.
func TestMCPSessionsOutliveTheirReplica(t *testing.T) {
	t.Parallel()
	key := mcp.SessionKey("the deployment's internal token")
	a := setupReplica(t, time.Hour, 2, key)
	b := setupReplica(t, time.Hour, 2, key)

	session := a.initialize(t)
	for _, replica := range []*sessionsBundle{b, a, b} {
		code, _, body := replica.post(t, session, listToolsMessage)
		require.Equal(t, http.StatusOK, code, body)
		require.Contains(t, body, "get_session")
	}
	// a dies; its successor (a new run, the same key) takes the session up.
	a2 := setupReplica(t, time.Hour, 2, key)
	code, _, body := a2.post(t, session, listToolsMessage)
	require.Equal(t, http.StatusOK, code, body)

	other := setupReplica(t, time.Hour, 2, mcp.SessionKey("another deployment's token"))
	other.requireGone(t, session)
	b.requireGone(t, session[:len(session)-4]+"AAAA")
	b.requireGone(t, "no-such-session")

	// a ends its oldest session to open two more: a refuses it from then
	// on (a replica's cap bounds its own memory; b may still serve it).
	a.initialize(t)
	a.initialize(t)
	a.requireGone(t, session)
}
