package server_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/gateway/internal/grpctest"
	"github.com/zimmerhq/zimmer/gateway/internal/mcp"
	"github.com/zimmerhq/zimmer/gateway/internal/notificationfake"
	"github.com/zimmerhq/zimmer/gateway/internal/queuefake"
	"github.com/zimmerhq/zimmer/gateway/openapi"
	accessv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/access/v1"
	notificationv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/notification/v1"
	"github.com/zimmerhq/zimmer/services/platform/grpcserver"
)

// adminOperations are the REST operations an operator key may not call:
// the machine's low-level driver and hard delete (and whatever else the
// access classes make admin; the walk below derives those and requires
// these among them).
var adminOperations = []string{"LifecycleService_DeleteSession", "LifecycleService_TransitionSession", "RunnerService_ListAgentAccounts"}

// servicePackages are the gRPC packages of the services with REST routes,
// by service name, as grpcserver.Access takes a method: "/pkg.Service/Method".
var servicePackages = map[string]string{
	"LifecycleService":    "/zimmer.lifecycle.v1.",
	"TriggerService":      "/zimmer.lifecycle.v1.",
	"RunnerService":       "/zimmer.runner.v1.",
	"QueueService":        "/zimmer.queue.v1.",
	"NotificationService": "/zimmer.notification.v1.",
}

// actionArgs are arguments each action of action_session is called with in
// the walk; an action missing here fails the walk, so a new one is walked.
var actionArgs = map[string]map[string]any{
	"follow_up":             {"session_id": "1", "prompt": "walked"},
	"pause":                 {"session_id": "1"},
	"sleep":                 {"session_id": "1"},
	"archive":               {"session_id": "1"},
	"bulk_archive":          {"session_ids": []any{1}},
	"unarchive":             {"session_id": "1"},
	"restart":               {"session_id": "1"},
	"fail":                  {"session_id": "1", "failure_reason": "walked"},
	"update_title":          {"session_id": "1", "title": "walked"},
	"update_notes":          {"session_id": "1", "notes": "walked"},
	"set_heartbeat":         {"session_id": "1", "enabled": true},
	"transition":            {"session_id": "1", "event": "start"},
	"refresh":               {"session_id": "1"},
	"pause_until":           {"session_id": "1", "wake_at": "2030-01-02T03:04:05Z"},
	"pause_into_spot_queue": {"session_id": "1"},

	"update_push_notifications": {"session_id": "1", "push_notifications": false},
	"star":                      {"session_id": "1"},
	"unstar":                    {"session_id": "1"},
	"move_to_category":          {"session_id": "1", "category_id": 2},
}

// categoryArgs are manage_categories' actions' arguments in the walk.
var categoryArgs = map[string]map[string]any{
	"list":   {},
	"create": {"name": "walked"},
	"update": {"category_id": 1, "frozen": true},
	"delete": {"category_id": 1},
}

// queuedMessage in a walk's arguments is replaced by the id of a message
// queued for the call, so each action that names a message finds one.
const queuedMessage = "a message queued for this call"

// enqueuedArgs are the arguments each action of manage_enqueued_messages
// is called with in the walk (it reaches the queue, not lifecycle); an
// action missing here fails the walk.
var enqueuedArgs = map[string]map[string]any{
	"list":      {"session_id": "1"},
	"create":    {"session_id": "1", "content": "walked"},
	"get":       {"session_id": "1", "message_id": queuedMessage},
	"update":    {"session_id": "1", "message_id": queuedMessage, "position": 1},
	"reorder":   {"session_id": "1", "message_id": queuedMessage, "position": 1},
	"delete":    {"session_id": "1", "message_id": queuedMessage},
	"send_now":  {"session_id": "1", "message_id": queuedMessage},
	"interrupt": {"session_id": "1", "message_id": queuedMessage},
}

// notificationArgs are the arguments each action of action_notification is
// called with in the walk (it reaches the notification service; the walk
// puts notification 1 in its inbox); an action missing here fails the
// walk.
var notificationArgs = map[string]map[string]any{
	"read":     {"notification_id": 1},
	"dismiss":  {"notification_id": 1},
	"read_all": {"session_id": "1"},
}

// triggerArgs are the arguments each action of action_trigger is called
// with in the walk; an action missing here fails the walk.
var triggerArgs = map[string]map[string]any{
	"cancel": {"session_id": "1", "trigger_id": 1},
}

// slackTriggerArgs are the arguments each action of manage_slack_triggers
// is called with in the walk; an action missing here fails the walk.
var slackTriggerArgs = map[string]map[string]any{
	"list":   {},
	"create": {"channel": "C1", "allowed_user_ids": []any{"U1"}, "git_root": "/r"},
	"delete": {"trigger_id": 1},
}

// toolArgs are the other tools' arguments in the walk.
var toolArgs = map[string]map[string]any{
	mcp.ToolQuickSearchSessions:  {"q": "walked"},
	mcp.ToolStartSession:         {"prompt": "walked", "git_root": "/r"},
	mcp.ToolGetSession:           {"session_id": "1"},
	mcp.ToolGetSessionProvenance: {"session_id": "1"},
	mcp.ToolGetNotifications:     {"unread": true},
	mcp.ToolSendPushNotification: {"title": "walked", "session_id": "1"},
	mcp.ToolGetAlerts:            {"page_size": 10},
	mcp.ToolGetCosts:             {"from": "2026-11-01"},
	mcp.ToolAnswerElicitation:    {"session_id": "1", "elicitation_id": "elicit_demo_1", "action": "cancel"},

	mcp.ToolWakeMeUpLater:                   {"session_id": "1", "delay": "5m"},
	mcp.ToolWakeMeUpWhenSessionChangesState: {"session_id": "1", "watched_session_id": 2, "states": []any{"needs_input"}},
	mcp.ToolSearchTriggers:                  {"session_id": 1},
}

// toolActions are the tools walked action by action, with each action's
// arguments.
var toolActions = map[string]map[string]map[string]any{
	mcp.ToolActionSession:          actionArgs,
	mcp.ToolManageEnqueuedMessages: enqueuedArgs,
	mcp.ToolActionNotification:     notificationArgs,
	mcp.ToolActionTrigger:          triggerArgs,
	mcp.ToolManageSlackTriggers:    slackTriggerArgs,
	mcp.ToolManageCategories:       categoryArgs,
}

// TestEachKeyReachesExactlyItsRoutesAndTools extends
// TestNoPublicSurfaceWritesHumanMessages's walk with who may do what: every
// REST route of the OpenAPI document and every MCP tool (each action of
// action_session) is called with an operator key and with an admin key.
// The admin key reaches every one; the operator key every one but the
// admin methods, which answer 403 (a tool error over MCP) naming the admin
// scope, and never reach lifecycle.
func TestEachKeyReachesExactlyItsRoutesAndTools(t *testing.T) {
	t.Parallel()
	var doc struct {
		Paths map[string]map[string]struct {
			OperationID string `json:"operationId"`
		} `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(openapi.Spec, &doc))
	param := regexp.MustCompile(`\{[^}]+\}`)
	type route struct{ method, path, service, rpc string }
	var routes []route
	var admin []string
	for path, ops := range doc.Paths {
		for method, op := range ops {
			svc, rpc, ok := strings.Cut(op.OperationID, "_")
			require.True(t, ok, "%s %s: operation %q", method, path, op.OperationID)
			require.Contains(t, servicePackages, svc, "%s %s: name the gRPC package of %s", method, path, svc)
			routes = append(routes, route{strings.ToUpper(method), param.ReplaceAllString(path, "1"), svc, rpc})
			if grpcserver.Access(servicePackages[svc]+svc+"/"+rpc).GetClass() == accessv1.Class_CLASS_ADMIN {
				admin = append(admin, op.OperationID)
			}
		}
	}
	for _, op := range adminOperations {
		require.Contains(t, admin, op)
	}
	slices.Sort(admin) // before the subtests, which read it concurrently

	for _, key := range []struct {
		name, key string
		admin     bool
	}{{"operator key", testKey, false}, {"admin key", adminKey, true}} {
		t.Run(key.name, func(t *testing.T) {
			t.Parallel()
			b := setupProvenance(t, provenanceOpts{})
			b.notifications.Answer("ListNotifications", &notificationv1.ListNotificationsResponse{
				Notifications: []*notificationv1.Notification{notificationfake.Notification(1, "needs_input", 1, "walked")},
			}, nil)
			b.queue.Handle("EnqueueMessage", queuefake.Enqueues())
			var refusedREST, refusedTools []string
			for _, r := range routes {
				// A runner route reaches the runner (after lifecycle resolved
				// the session), a queue route the queue, a notification route
				// the notification service; every other route, lifecycle.
				calls := func() int { return len(b.fake.Calls(r.rpc)) }
				switch r.service {
				case "RunnerService":
					calls = func() int { return len(b.runner.Calls(r.rpc)) }
				case "QueueService":
					calls = func() int { return len(b.queue.Calls(r.rpc)) }
				case "NotificationService":
					calls = func() int { return len(b.notifications.Calls(r.rpc)) }
				}
				before := calls()
				resp := b.do(t, r.method, r.path, "{}", "X-API-Key", key.key)
				reached := calls() > before
				if resp.status == http.StatusForbidden {
					require.False(t, reached, "%s %s: refused, yet it reached lifecycle", r.method, r.path)
					require.Equal(t, r.rpc+" needs an admin key (ZIMMER_ADMIN_API_KEYS); this operator key lacks the admin scope", resp.errorText(t))
					refusedREST = append(refusedREST, r.service+"_"+r.rpc)
					continue
				}
				require.True(t, reached, "%s %s answered %d without reaching lifecycle: %s", r.method, r.path, resp.status, resp.body)
			}

			c, err := mcpClient(t, b.url+"/mcp", key.key)
			require.NoError(t, err)
			list, err := c.ListTools(t.Context(), mcpgo.ListToolsRequest{})
			require.NoError(t, err)
			var walked []string
			for _, tool := range list.Tools {
				calls := map[string]map[string]any{tool.Name: toolArgs[tool.Name]}
				if byAction, ok := toolActions[tool.Name]; ok {
					calls = map[string]map[string]any{}
					for _, action := range actionEnum(t, tool) {
						args, ok := byAction[action]
						require.True(t, ok, "%s action %s: give it arguments in toolActions", tool.Name, action)
						with := map[string]any{"action": action}
						for k, v := range args {
							with[k] = v
						}
						calls[tool.Name+" "+action] = with
					}
				} else {
					require.NotNil(t, toolArgs[tool.Name], "tool %s: give it arguments in toolArgs", tool.Name)
				}
				for name, args := range calls {
					walked = append(walked, name)
					if args["message_id"] == queuedMessage {
						resp := b.do(t, http.MethodPost, "/api/v1/sessions/1/enqueued_messages", `{"content":"for `+name+`"}`, "X-API-Key", key.key)
						require.Equal(t, http.StatusOK, resp.status, "%s", resp.body)
						args["message_id"] = resp.json(t)["enqueued_message"].(map[string]any)["id"]
					}
					reachedAny := func() int {
						return len(b.fake.Calls()) + len(b.queue.Calls()) + len(b.notifications.Calls()) + len(b.runner.Calls("GetCosts"))
					}
					before := reachedAny()
					res, err := c.CallTool(t.Context(), callRequest(tool.Name, args))
					require.NoError(t, err, name)
					reached := reachedAny() > before
					if res.IsError && strings.Contains(textOf(res), "needs an admin key (ZIMMER_ADMIN_API_KEYS)") {
						require.False(t, reached, "%s: refused, yet it reached lifecycle", name)
						refusedTools = append(refusedTools, name)
						continue
					}
					require.True(t, reached, "%s: %s", name, textOf(res))
					require.False(t, res.IsError, "%s: %s", name, textOf(res))
				}
			}
			require.Len(t, walked, len(toolArgs)+len(actionArgs)+len(enqueuedArgs)+len(notificationArgs)+len(triggerArgs)+len(slackTriggerArgs)+
				len(categoryArgs),
				"every tool and action walked: %v", walked)

			slices.Sort(refusedREST)
			slices.Sort(refusedTools)
			if key.admin {
				require.Empty(t, refusedREST, "an admin key reaches every route")
				require.Empty(t, refusedTools, "an admin key reaches every tool")
				return
			}
			require.Equal(t, admin, refusedREST, "an operator key reaches exactly the non-admin routes")
			require.Equal(t, []string{mcp.ToolActionSession + " transition"}, refusedTools, "and every tool but the driver")
		})
	}
}

// actionEnum is the action argument's enum in tool's input schema.
func actionEnum(t *testing.T, tool mcpgo.Tool) []string {
	t.Helper()
	prop, ok := tool.InputSchema.Properties["action"].(map[string]any)
	require.True(t, ok, "%s has an action argument", tool.Name)
	var names []string
	switch enum := prop["enum"].(type) {
	case []string:
		names = enum
	case []any:
		for _, e := range enum {
			names = append(names, e.(string))
		}
	}
	require.NotEmpty(t, names)
	return names
}

// The internal token is the services' alone: the gateway never accepts it
// from an HTTP client, in any header a client could use, and a client's
// headers never reach the services as metadata, so neither the token nor a
// claimed principal rides along with a key to raise it.
func TestTheGatewayNeverAcceptsTheInternalTokenFromAClient(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	token := grpctest.InternalToken
	for _, header := range [][]string{
		{"X-API-Key", token},
		{"Authorization", "Bearer " + token},
		{"X-Zimmer-Internal-Token", token, "X-Zimmer-Service", "gateway"},
		{"Grpc-Metadata-X-Zimmer-Internal-Token", token},
	} {
		resp := b.do(t, http.MethodGet, "/api/v1/sessions", "", header...)
		require.Equal(t, http.StatusUnauthorized, resp.status, "%v: %s", header, resp.body)
	}

	before := len(b.fake.Calls("TransitionSession"))
	admin := `{"kind":"admin"}`
	for _, header := range [][]string{
		{"X-Zimmer-Internal-Token", token, "X-Zimmer-Principal", admin},
		{"Grpc-Metadata-X-Zimmer-Internal-Token", token, "Grpc-Metadata-X-Zimmer-Principal", admin},
	} {
		resp := b.do(t, http.MethodPost, "/api/v1/sessions/1/transition", `{"event":"start"}`, append([]string{"X-API-Key", testKey}, header...)...)
		require.Equal(t, http.StatusForbidden, resp.status, "%v: %s", header, resp.body)
		require.Contains(t, resp.errorText(t), "this operator key lacks the admin scope")
	}
	require.Len(t, b.fake.Calls("TransitionSession"), before)
}
