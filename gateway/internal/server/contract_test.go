package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/zimmerhq/zimmer/gateway/internal/notificationfake"
	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
	notificationv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/notification/v1"
)

// openAPIDoc is the part of the served document the contract test reads.
type openAPIDoc struct {
	Paths map[string]map[string]struct {
		Responses map[string]struct {
			Schema map[string]any `json:"schema"`
		} `json:"responses"`
		Parameters []openAPIParam `json:"parameters"`
	} `json:"paths"`
	Definitions map[string]map[string]any `json:"definitions"`
}

type openAPIParam struct {
	In string `json:"in"`
}

// TestEveryRouteAnswersWhatTheContractSays walks every operation of the
// OpenAPI document the gateway serves, once answered by lifecycle and once
// failed, and checks each response against the document: the status is
// one it lists, and the body has exactly the keys of its schema, at the
// top level and in every nested object the schema spells out, each value
// of the schema's type.
func TestEveryRouteAnswersWhatTheContractSays(t *testing.T) {
	t.Parallel()
	b := setupProvenance(t, provenanceOpts{})
	b.lineage.SetProvenance(1, &lineagev1.GetSessionProvenanceResponse{
		SessionHierarchy: &lineagev1.SessionHierarchy{OriginSessionId: 1, RootSessionIds: []int64{1}, Nodes: []*lineagev1.HierarchyNode{{Id: 1}}},
		HumanMessages: []*lineagev1.HumanMessage{{Id: 1, Origin: "here", Author: "tadasant", AuthorDisplayName: "Tadas",
			Provenance: "web_ui.follow_up", AuthoredInSessionId: 1, Content: "go", OccurredAt: timestamppb.Now()}},
	})

	// The notification service's routes answer with one of each: a
	// notification (1, which every route finds) and an alert with details.
	n := notificationfake.Notification(1, "needs_input", 1, "#1 needs input")
	n.Marker = 1
	b.notifications.Answer("ListNotifications", &notificationv1.ListNotificationsResponse{UnreadCount: 1, Notifications: []*notificationv1.Notification{n}}, nil)
	b.notifications.Answer("MarkNotificationRead", &notificationv1.MarkNotificationReadResponse{Notification: n}, nil)
	b.notifications.Answer("DismissNotification", &notificationv1.DismissNotificationResponse{Notification: n}, nil)
	b.notifications.Answer("MarkAllNotificationsRead", &notificationv1.MarkAllNotificationsReadResponse{Marked: 1}, nil)
	b.notifications.Answer("SendPushNotification", &notificationv1.SendPushNotificationResponse{Notification: n}, nil)
	details, err := structpb.NewStruct(map[string]any{"session_id": 1})
	require.NoError(t, err)
	alert := notificationfake.Alert(1, "walked", "walked", 2)
	alert.Details = details
	b.notifications.Answer("ListAlerts", &notificationv1.ListAlertsResponse{Alerts: []*notificationv1.Alert{alert}}, nil)

	resp := b.do(t, http.MethodGet, "/openapi.json", "")
	require.Equal(t, http.StatusOK, resp.status)
	var doc openAPIDoc
	require.NoError(t, json.Unmarshal(resp.body, &doc))
	param := regexp.MustCompile(`\{[^}]+\}`)

	walked := 0
	for _, fail := range []error{nil, status.Error(codes.NotFound, "session #1 not found"), status.Error(codes.Internal, "boom")} {
		b.fake.FailWith(fail)
		// A queued message, so the queue's routes answer with one.
		require.Equal(t, http.StatusOK, b.call(t, http.MethodPost, "/api/v1/sessions/1/enqueued_messages", `{"content":"walked"}`).status)
		for path, ops := range doc.Paths {
			for method, op := range ops {
				body := ""
				if slices.ContainsFunc(op.Parameters, func(p openAPIParam) bool { return p.In == "body" }) {
					body = "{}"
				}
				name := fmt.Sprintf("%s %s (lifecycle failing: %v)", strings.ToUpper(method), path, fail)
				got := b.call(t, strings.ToUpper(method), param.ReplaceAllString(path, "1"), body)
				documented, ok := op.Responses[strconv.Itoa(got.status)]
				if !ok {
					require.GreaterOrEqual(t, got.status, 400, "%s answered %d, which is not documented: %s", name, got.status, got.body)
					documented, ok = op.Responses["default"]
					require.True(t, ok, name)
				}
				if documented.Schema == nil {
					require.Empty(t, got.body, "%s: no body is documented", name)
					walked++
					continue
				}
				var value any
				dec := json.NewDecoder(bytes.NewReader(got.body))
				dec.UseNumber()
				require.NoError(t, dec.Decode(&value), "%s: %s", name, got.body)
				conforms(t, doc, documented.Schema, value, name)
				walked++
			}
		}
	}
	require.Positive(t, walked)
}

// conforms checks value against schema: objects with spelled-out
// properties have exactly those keys (an optional one, not required, may
// be left out), and every value has the schema's
// type. null is accepted anywhere: wirejson writes an unset message or
// optional field as null.
func conforms(t *testing.T, doc openAPIDoc, schema map[string]any, value any, where string) {
	t.Helper()
	schema = resolve(t, doc, schema)
	if value == nil {
		return
	}
	switch schema["type"] {
	case "object", nil:
		obj, ok := value.(map[string]any)
		require.True(t, ok, "%s: want an object, got %v", where, value)
		props, ok := schema["properties"].(map[string]any)
		if !ok {
			return // a free-form object (google.protobuf.Struct)
		}
		required := map[string]bool{}
		if list, ok := schema["required"].([]any); ok {
			for _, k := range list {
				required[k.(string)] = true
			}
		}
		var want, got []string
		for k := range props {
			if _, given := obj[k]; given || required[k] || schema["required"] == nil {
				want = append(want, k)
			}
		}
		for k := range obj {
			got = append(got, k)
		}
		require.ElementsMatch(t, want, got, "%s: the keys are the schema's", where)
		for k, v := range obj {
			conforms(t, doc, props[k].(map[string]any), v, where+"."+k)
		}
	case "array":
		list, ok := value.([]any)
		require.True(t, ok, "%s: want an array, got %v", where, value)
		for i, v := range list {
			conforms(t, doc, schema["items"].(map[string]any), v, fmt.Sprintf("%s[%d]", where, i))
		}
	case "string":
		require.IsType(t, "", value, where)
		if words, ok := schema["enum"].([]any); ok {
			require.Contains(t, words, value, "%s: one of the documented words", where)
		}
	case "boolean":
		require.IsType(t, true, value, where)
	case "integer":
		n, ok := value.(json.Number)
		require.True(t, ok, "%s: want an integer, got %v", where, value)
		_, err := n.Int64()
		require.NoError(t, err, "%s: want an integer, got %v", where, value)
	case "number":
		require.IsType(t, json.Number(""), value, where)
	default:
		t.Fatalf("%s: schema type %v not checked", where, schema["type"])
	}
}

// resolve follows $ref and a single-element allOf to the schema they name.
func resolve(t *testing.T, doc openAPIDoc, schema map[string]any) map[string]any {
	t.Helper()
	for {
		if ref, ok := schema["$ref"].(string); ok {
			def, ok := doc.Definitions[strings.TrimPrefix(ref, "#/definitions/")]
			require.True(t, ok, "dangling %s", ref)
			schema = def
			continue
		}
		if all, ok := schema["allOf"].([]any); ok && len(all) == 1 {
			schema = all[0].(map[string]any)
			continue
		}
		return schema
	}
}
