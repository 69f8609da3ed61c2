package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// mcpCaller reaches Zimmer's MCP endpoint as the session: the URL and the
// session's own credential come from the environment the runner sets
// (ZIMMER_MCP_URL, ZIMMER_MCP_TOKEN), never from the command line, which
// other users of the machine can read.
type mcpCaller struct {
	url, token string
	client     *client.Client
}

func (m *mcpCaller) call(ctx context.Context, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	if err := m.connect(ctx); err != nil {
		return nil, err
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := m.client.CallTool(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("call %s: %w", tool, err)
	}
	return res, nil
}

// connect opens the client on first use; a failed attempt is not kept, so
// a later mcp directive tries again.
func (m *mcpCaller) connect(ctx context.Context) error {
	if m.client != nil {
		return nil
	}
	if m.url == "" {
		return errors.New("ZIMMER_MCP_URL is not set")
	}
	headers := map[string]string{}
	if m.token != "" {
		headers["Authorization"] = "Bearer " + m.token
	}
	c, err := client.NewStreamableHttpClient(m.url, transport.WithHTTPHeaders(headers))
	if err != nil {
		return fmt.Errorf("connect to %s: %w", m.url, err)
	}
	if err := c.Start(ctx); err != nil {
		_ = c.Close()
		return fmt.Errorf("connect to %s: %w", m.url, err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "zimmer-demo-agent", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		_ = c.Close()
		return fmt.Errorf("initialize MCP at %s: %w", m.url, err)
	}
	m.client = c
	return nil
}

func (m *mcpCaller) close() {
	if m.client != nil {
		_ = m.client.Close()
	}
}
