package mcp

import (
	"context"
	"fmt"
	"strings"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"google.golang.org/protobuf/proto"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/platform/surface"
)

// ToolActionSession acts on a session's lifecycle.
const ToolActionSession = "action_session"

// The actions action_session supports so far; follow_up and the queue,
// notes, title and heartbeat actions arrive with their contexts.
var sessionActions = []string{"pause", "sleep", "archive", "bulk_archive", "unarchive", "restart", "fail"}

var actionSessionArgs = []string{"action", "session_id", "session_ids", "force", "acting_session_id", "failure_reason"}

func actionSessionTool() mcpgo.Tool {
	return mcpgo.NewTool(ToolActionSession,
		mcpgo.WithToolTitle("Act on a session"),
		mcpgo.WithDescription("Change a session's lifecycle. pause: stop a running turn (→ needs_input). "+
			"sleep: a needs_input session goes to waiting; a running one sleeps when its turn ends. "+
			"archive: move to the trash (restorable for 4 days). bulk_archive: archive session_ids, each on its own. "+
			"unarchive: restore to the state chosen from the session's history. restart: re-run a failed or idle session (a deliberate resume). "+
			"fail: mark a session that will not recover as failed, with failure_reason. "+
			"A refused action says which state the session is in and which states allow it."),
		mcpgo.WithString("action", mcpgo.Required(), mcpgo.Enum(sessionActions...)),
		mcpgo.WithString("session_id", mcpgo.Description(`The session's numeric id or slug (every action but bulk_archive).`)),
		mcpgo.WithArray("session_ids", mcpgo.WithStringItems(), mcpgo.Description("bulk_archive: the ids or slugs to archive.")),
		mcpgo.WithBoolean("force", mcpgo.Description("archive, bulk_archive: archive even over undelivered queued messages, "+
			"discarding them. Not the recommended path: only after reading the messages and deciding to throw them away.")),
		mcpgo.WithString("failure_reason", mcpgo.Description("fail: why the session failed.")),
		mcpgo.WithInteger("acting_session_id", mcpgo.Description("Your own session id, when you are a session: it is named on the target's timeline.")),
		mcpgo.WithDestructiveHintAnnotation(true),
		mcpgo.WithOpenWorldHintAnnotation(false),
	)
}

func (t *tools) actionSession(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
	a := newArgs(req, actionSessionArgs)
	action := a.str("action")
	acting := a.int64("acting_session_id")
	force := a.boolean("force")
	reason := a.str("failure_reason")
	var ref string
	if action != "bulk_archive" {
		ref = a.ref("session_id")
	}
	if res := a.problem(); res != nil {
		return res, nil
	}
	ctx = surface.Outgoing(ctx, surface.MCP)
	var (
		resp    interface{ GetSession() *lifecyclev1.Session }
		message string
		err     error
	)
	switch action {
	case "pause":
		var r *lifecyclev1.PauseSessionResponse
		r, err = t.lifecycle.PauseSession(ctx, &lifecyclev1.PauseSessionRequest{SessionId: ref, ActingSessionId: acting})
		resp, message = r, r.GetMessage()
	case "sleep":
		var r *lifecyclev1.SleepSessionResponse
		r, err = t.lifecycle.SleepSession(ctx, &lifecyclev1.SleepSessionRequest{SessionId: ref, ActingSessionId: acting})
		resp, message = r, r.GetMessage()
	case "archive":
		var r *lifecyclev1.ArchiveSessionResponse
		r, err = t.lifecycle.ArchiveSession(ctx, &lifecyclev1.ArchiveSessionRequest{SessionId: ref, ActingSessionId: acting, Force: force})
		resp, message = r, r.GetMessage()
	case "unarchive":
		var r *lifecyclev1.UnarchiveSessionResponse
		r, err = t.lifecycle.UnarchiveSession(ctx, &lifecyclev1.UnarchiveSessionRequest{SessionId: ref, ActingSessionId: acting})
		resp, message = r, r.GetMessage()
	case "restart":
		var r *lifecyclev1.RestartSessionResponse
		r, err = t.lifecycle.RestartSession(ctx, &lifecyclev1.RestartSessionRequest{SessionId: ref, ActingSessionId: acting})
		resp, message = r, r.GetMessage()
	case "fail":
		var r *lifecyclev1.FailSessionResponse
		r, err = t.lifecycle.FailSession(ctx, &lifecyclev1.FailSessionRequest{SessionId: ref, ActingSessionId: acting, FailureReason: reason})
		resp, message = r, r.GetMessage()
	case "bulk_archive":
		return t.bulkArchive(ctx, req, acting, force), nil
	default:
		return mcpgo.NewToolResultError(fmt.Sprintf("unknown action %q; use one of %s", action, strings.Join(sessionActions, ", "))), nil
	}
	if err != nil {
		return t.failure(ctx, ToolActionSession, err), nil
	}
	return t.sessionResult(ctx, message, resp.GetSession(), resp.(proto.Message)), nil
}

func (t *tools) bulkArchive(ctx context.Context, req mcpgo.CallToolRequest, acting *int64, force bool) *mcpgo.CallToolResult {
	raw, _ := req.GetArguments()["session_ids"].([]any)
	ids := make([]string, 0, len(raw))
	for _, v := range raw {
		switch x := v.(type) {
		case string:
			ids = append(ids, x)
		case float64:
			ids = append(ids, fmt.Sprint(int64(x)))
		default:
			return mcpgo.NewToolResultError(fmt.Sprintf("session_ids must be ids or slugs, got %v", v))
		}
	}
	resp, err := t.lifecycle.BulkArchiveSessions(ctx, &lifecyclev1.BulkArchiveSessionsRequest{SessionIds: ids, Force: force, ActingSessionId: acting})
	if err != nil {
		return t.failure(ctx, ToolActionSession, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Archived %d of %d sessions.", resp.GetArchivedCount(), len(ids))
	for _, e := range resp.GetErrors() {
		fmt.Fprintf(&b, "\n- %s: %s", e.GetSessionId(), e.GetError())
	}
	return mcpgo.NewToolResultText(b.String())
}

func (a *args) boolean(name string) bool {
	v, ok := a.m[name]
	if !ok || v == nil {
		return false
	}
	b, ok := v.(bool)
	if !ok {
		a.problems = append(a.problems, fmt.Sprintf("%s must be true or false", name))
	}
	return b
}
