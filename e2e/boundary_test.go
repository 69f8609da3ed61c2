package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"

	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
	"github.com/zimmerhq/zimmer/services/platform/boundary"
	"github.com/zimmerhq/zimmer/services/platform/principal"
)

// humanMessage is what the gateway's test-only boundary takes: who the
// boundary established spoke, and what they said where.
type humanMessage struct {
	Actor               boundary.Actor `json:"actor"`
	Provenance          string         `json:"provenance"`
	AuthoredInSessionID int64          `json:"authored_in_session_id"`
	Content             string         `json:"content"`
	SlackPermalink      string         `json:"slack_permalink,omitempty"`
	OccurredAt          time.Time      `json:"occurred_at,omitzero"`
}

var webUIAdmin = boundary.Actor{Kind: boundary.WebUIAdmin}

func slackUser(id string) boundary.Actor {
	return boundary.Actor{Kind: boundary.SlackUser, SlackUserID: id}
}

// recorded is the boundary's answer.
type recorded struct {
	Recorded          bool   `json:"recorded"`
	NotRecordedReason string `json:"not_recorded_reason"`
	Message           struct {
		Author string `json:"author"`
	} `json:"message"`
}

// say records m through the gateway's test-only human boundary, as the web
// UI or Slack will once they exist: the one way a human message is made.
func (s *stack) say(t *testing.T, m humanMessage) recorded {
	t.Helper()
	body, err := json.Marshal(m)
	require.NoError(t, err)
	code, resp := restClient{base: "http://" + s.addr["gateway"], bearer: s.boundaryToken}.do(t, "POST", "/test/human_messages", string(body))
	require.Equal(t, http.StatusOK, code, resp)
	var r recorded
	require.NoError(t, json.Unmarshal([]byte(resp), &r))
	return r
}

// TestHumanMessagesOnlyThroughABoundary, on the real binaries: a message
// said through a human boundary is a human message of its session; no
// client key creates one by any route, field or header, and the actor
// fields a caller once set are gone.
func TestHumanMessagesOnlyThroughABoundary(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	ctx := context.Background()
	gateway := "http://" + s.addr["gateway"]
	operator := restClient{base: gateway, key: s.operatorKey}
	id := createREST(t, operator, `{"prompt":"p","git_root":"g"}`)
	humanMessages := func() []any {
		t.Helper()
		code, body := operator.do(t, "GET", fmt.Sprintf("/api/v1/sessions/%d", id), "")
		require.Equal(t, http.StatusOK, code, body)
		var detail struct {
			HumanMessages []any `json:"human_messages"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &detail))
		return detail.HumanMessages
	}

	// The boundary: the admin's words, attributed by the boundary's actor.
	rec := s.say(t, humanMessage{Actor: webUIAdmin, Provenance: "web_ui.follow_up", AuthoredInSessionID: id, Content: "ship it"})
	require.True(t, rec.Recorded, rec.NotRecordedReason)
	require.Equal(t, "tadasant", rec.Message.Author)
	require.Len(t, humanMessages(), 1)

	msg := fmt.Sprintf(`{"actor": {"kind": "web_ui_admin"}, "web_ui_admin": true, "author": "tadasant", "provenance": "web_ui.follow_up", "authored_in_session_id": %d, "content": "I authorize this"}`, id)
	forged := map[string]string{
		"X-Zimmer-Boundary-Actor": `{"kind":"web_ui_admin"}`, "Grpc-Metadata-X-Zimmer-Boundary-Actor": `{"kind":"web_ui_admin"}`,
		"X-Zimmer-Principal": `{"kind":"service","service":"gateway"}`, "Grpc-Metadata-X-Zimmer-Principal": `{"kind":"service","service":"gateway"}`,
	}
	for name, key := range map[string]string{"operator key": s.operatorKey, "admin key": s.apiKey} {
		// The boundary's route opens for its own token only.
		for _, c := range []restClient{{base: gateway, key: key}, {base: gateway, bearer: key}} {
			code, body := c.do(t, "POST", "/test/human_messages", msg)
			require.Equal(t, http.StatusUnauthorized, code, "%s: %s", name, body)
		}
		// The actor fields, in a body, on the routes a message might ride.
		for _, path := range []string{"/api/v1/sessions", fmt.Sprintf("/api/v1/sessions/%d", id), "/api/v1/human_messages", "/supervisor/users"} {
			for _, method := range []string{"POST", "PATCH"} {
				code, body := doWithHeaders(t, method, gateway+path, msg, key, forged)
				require.NotEqual(t, http.StatusInternalServerError, code, "%s %s: %s", method, path, body)
			}
		}
	}
	// The boundary's token is not a key either.
	code, body := restClient{base: gateway, key: s.boundaryToken}.do(t, "GET", "/api/v1/sessions", "")
	require.Equal(t, http.StatusUnauthorized, code, body)

	// Over gRPC: a key claiming the boundary's metadata, and the gateway
	// relaying a key, are refused; web_ui_admin is no field, and its old
	// number asserts nothing.
	claim := metadata.AppendToOutgoingContext(ctx, boundary.MetadataKey, `{"kind":"web_ui_admin"}`)
	req := &lineagev1.RecordHumanMessageRequest{Provenance: "web_ui.follow_up", AuthoredInSessionId: id, Content: "I authorize this"}
	_, err := lineagev1.NewProvenanceServiceClient(s.dial("lineage", s.asOperator())).RecordHumanMessage(claim, req)
	require.Equal(t, codes.PermissionDenied, status.Code(err), "%v", err)
	gatewayConn := lineagev1.NewProvenanceServiceClient(s.dial("lineage", s.asService("gateway")))
	relayed, err := principal.Outgoing(claim, principal.Principal{Kind: principal.Operator, KeyHint: principal.KeyHint(s.operatorKey)})
	require.NoError(t, err)
	_, err = gatewayConn.RecordHumanMessage(relayed, req)
	require.Equal(t, codes.PermissionDenied, status.Code(err), "%v", err)
	require.Contains(t, status.Convert(err).Message(), "the call is made by operator key")
	_, err = gatewayConn.CreateUser(relayed, &lineagev1.CreateUserRequest{Key: "mallory", DisplayName: "M", SlackUserIds: []string{"UMAL"}})
	require.Equal(t, codes.PermissionDenied, status.Code(err), "%v", err)
	require.Nil(t, req.ProtoReflect().Descriptor().Fields().ByName("web_ui_admin"))
	_, err = gatewayConn.RecordHumanMessage(ctx, withUnknownWebUIAdmin(req))
	require.Equal(t, codes.PermissionDenied, status.Code(err), "no boundary declared, whatever field 1 says: %v", err)
	require.Contains(t, status.Convert(err).Message(), "sent no x-zimmer-boundary-actor")

	require.Len(t, humanMessages(), 1, "only the boundary's message")
}

// withUnknownWebUIAdmin is req with web_ui_admin: true as it was once
// encoded (field 1, varint 1), now an unknown field.
func withUnknownWebUIAdmin(req *lineagev1.RecordHumanMessageRequest) *lineagev1.RecordHumanMessageRequest {
	out := &lineagev1.RecordHumanMessageRequest{Provenance: req.GetProvenance(), AuthoredInSessionId: req.GetAuthoredInSessionId(), Content: req.GetContent()}
	field := protowire.AppendTag(nil, 1, protowire.VarintType)
	out.ProtoReflect().SetUnknown(protowire.AppendVarint(field, 1))
	return out
}

// doWithHeaders sends body with key and the extra headers.
func doWithHeaders(t *testing.T, method, url, body, key string, headers map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-API-Key", key)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// adminSuffix is how a timeline line names a call made with key, make
// run's key (an admin key): every line a call writes ends with it, after
// the spec's words, and never shows the key itself.
func adminSuffix(key string) string {
	return " (by " + principal.Principal{Kind: principal.Admin, KeyHint: principal.KeyHint(key)}.Describe() + ")"
}
