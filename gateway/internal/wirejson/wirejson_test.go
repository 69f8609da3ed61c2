package wirejson_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/zimmerhq/zimmer/gateway/internal/wirejson"
	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"
)

// testFile declares a message with a 64-bit integer in every position the
// walker must handle: singular, repeated, map value, nested, inside a
// wrapper and inside an Any, next to values it must leave alone.
const testFile = `
name: "wirejsontest.proto"
package: "wirejsontest"
syntax: "proto3"
dependency: ["google/protobuf/any.proto", "google/protobuf/struct.proto", "google/protobuf/timestamp.proto", "google/protobuf/wrappers.proto"]
message_type {
  name: "Inner"
  field { name: "a" number: 1 label: LABEL_OPTIONAL type: TYPE_INT64 json_name: "a" }
  field { name: "b_fixed" number: 2 label: LABEL_OPTIONAL type: TYPE_SFIXED64 json_name: "bFixed" }
  field { name: "note" number: 3 label: LABEL_OPTIONAL type: TYPE_STRING json_name: "note" }
}
message_type {
  name: "Outer"
  field { name: "id" number: 1 label: LABEL_OPTIONAL type: TYPE_INT64 json_name: "id" }
  field { name: "big" number: 2 label: LABEL_OPTIONAL type: TYPE_UINT64 json_name: "big" }
  field { name: "ids" number: 3 label: LABEL_REPEATED type: TYPE_INT64 json_name: "ids" }
  field { name: "counts" number: 4 label: LABEL_REPEATED type: TYPE_MESSAGE type_name: ".wirejsontest.Outer.CountsEntry" json_name: "counts" }
  field { name: "by_id" number: 5 label: LABEL_REPEATED type: TYPE_MESSAGE type_name: ".wirejsontest.Outer.ByIdEntry" json_name: "byId" }
  field { name: "inner" number: 6 label: LABEL_OPTIONAL type: TYPE_MESSAGE type_name: ".wirejsontest.Inner" json_name: "inner" }
  field { name: "inners" number: 7 label: LABEL_REPEATED type: TYPE_MESSAGE type_name: ".wirejsontest.Inner" json_name: "inners" }
  field { name: "wrapped" number: 8 label: LABEL_OPTIONAL type: TYPE_MESSAGE type_name: ".google.protobuf.Int64Value" json_name: "wrapped" }
  field { name: "any" number: 9 label: LABEL_OPTIONAL type: TYPE_MESSAGE type_name: ".google.protobuf.Any" json_name: "any" }
  field { name: "at" number: 10 label: LABEL_OPTIONAL type: TYPE_MESSAGE type_name: ".google.protobuf.Timestamp" json_name: "at" }
  field { name: "meta" number: 11 label: LABEL_OPTIONAL type: TYPE_MESSAGE type_name: ".google.protobuf.Struct" json_name: "meta" }
  field { name: "maybe" number: 12 label: LABEL_OPTIONAL type: TYPE_INT64 json_name: "maybe" oneof_index: 0 proto3_optional: true }
  field { name: "small" number: 13 label: LABEL_OPTIONAL type: TYPE_INT32 json_name: "small" }
  field { name: "text" number: 14 label: LABEL_OPTIONAL type: TYPE_STRING json_name: "text" }
  field { name: "unset_inner" number: 15 label: LABEL_OPTIONAL type: TYPE_MESSAGE type_name: ".wirejsontest.Inner" json_name: "unsetInner" }
  nested_type {
    name: "CountsEntry"
    field { name: "key" number: 1 label: LABEL_OPTIONAL type: TYPE_STRING json_name: "key" }
    field { name: "value" number: 2 label: LABEL_OPTIONAL type: TYPE_INT64 json_name: "value" }
    options { map_entry: true }
  }
  nested_type {
    name: "ByIdEntry"
    field { name: "key" number: 1 label: LABEL_OPTIONAL type: TYPE_INT64 json_name: "key" }
    field { name: "value" number: 2 label: LABEL_OPTIONAL type: TYPE_MESSAGE type_name: ".wirejsontest.Inner" json_name: "value" }
    options { map_entry: true }
  }
  oneof_decl { name: "_maybe" }
}
`

func outerDescriptor(t testing.TB) protoreflect.MessageDescriptor {
	t.Helper()
	var fdp descriptorpb.FileDescriptorProto
	require.NoError(t, prototext.Unmarshal([]byte(testFile), &fdp))
	fd, err := protodesc.NewFile(&fdp, protoregistry.GlobalFiles)
	require.NoError(t, err)
	return fd.Messages().ByName("Outer")
}

func TestMarshalRendersInt64AsNumbers(t *testing.T) {
	t.Parallel()

	md := outerDescriptor(t)
	inner := func(a, b int64, note string) protoreflect.Message {
		m := dynamicpb.NewMessage(md.Fields().ByName("inner").Message())
		m.Set(m.Descriptor().Fields().ByName("a"), protoreflect.ValueOfInt64(a))
		m.Set(m.Descriptor().Fields().ByName("b_fixed"), protoreflect.ValueOfInt64(b))
		m.Set(m.Descriptor().Fields().ByName("note"), protoreflect.ValueOfString(note))
		return m
	}
	session, err := anypb.New(&lifecyclev1.Session{Id: 77, Title: "in an any", ParentSessionId: proto.Int64(76)})
	require.NoError(t, err)
	wrappedInAny, err := anypb.New(wrapperspb.Int64(-8))
	require.NoError(t, err)
	meta, err := structpb.NewStruct(map[string]any{"n": 1.5, "s": "9"})
	require.NoError(t, err)

	msg := dynamicpb.NewMessage(md)
	f := md.Fields().ByName
	msg.Set(f("id"), protoreflect.ValueOfInt64(42))
	msg.Set(f("big"), protoreflect.ValueOfUint64(18446744073709551615))
	ids := msg.Mutable(f("ids")).List()
	ids.Append(protoreflect.ValueOfInt64(1))
	ids.Append(protoreflect.ValueOfInt64(-2))
	counts := msg.Mutable(f("counts")).Map()
	counts.Set(protoreflect.ValueOfString("x").MapKey(), protoreflect.ValueOfInt64(3))
	byID := msg.Mutable(f("by_id")).Map()
	byID.Set(protoreflect.ValueOfInt64(5).MapKey(), protoreflect.ValueOfMessage(inner(6, 7, "map value")))
	msg.Set(f("inner"), protoreflect.ValueOfMessage(inner(8, -9, `"quoted" <tag> & é`)))
	inners := msg.Mutable(f("inners")).List()
	inners.Append(protoreflect.ValueOfMessage(inner(10, 11, "first")))
	msg.Set(f("wrapped"), protoreflect.ValueOfMessage(wrapperspb.Int64(12).ProtoReflect()))
	msg.Set(f("any"), protoreflect.ValueOfMessage(session.ProtoReflect()))
	msg.Set(f("at"), protoreflect.ValueOfMessage(timestamppb.New(timestamppb.Now().AsTime().Truncate(1e9)).ProtoReflect()))
	msg.Set(f("meta"), protoreflect.ValueOfMessage(meta.ProtoReflect()))
	msg.Set(f("small"), protoreflect.ValueOfInt32(13))
	msg.Set(f("text"), protoreflect.ValueOfString("14"))

	b, err := wirejson.NewMarshaler().Marshal(msg)
	require.NoError(t, err)
	got := string(b)

	for _, want := range []string{
		`"id":42`,
		`"big":18446744073709551615`, // exact: no float rounding on the way
		`"ids":[1,-2]`,
		`"counts":{"x":3}`,
		`"by_id":{"5":{"a":6,"b_fixed":7,"note":"map value"}}`, // map keys stay strings
		`"inner":{"a":8,"b_fixed":-9,"note":"\"quoted\" <tag> & é"}`,
		`"inners":[{"a":10,"b_fixed":11,"note":"first"}]`,
		`"wrapped":12`,
		`"meta":{"n":1.5,"s":"9"}`, // Struct values untouched
		`"maybe":null`,             // unset proto3 optional: emitted as null
		`"small":13`,
		`"text":"14"`, // strings stay strings
		`"unset_inner":null`,
	} {
		require.Contains(t, got, want)
	}
	var compact bytes.Buffer
	require.NoError(t, json.Compact(&compact, b))
	require.Equal(t, compact.String(), got, "compact output")

	// Inside the Any: the Session's own int64 fields, snake_case.
	var decoded map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&decoded))
	anyObj := decoded["any"].(map[string]any)
	require.Equal(t, "type.googleapis.com/zimmer.lifecycle.v1.Session", anyObj["@type"])
	require.Equal(t, json.Number("77"), anyObj["id"])
	require.Equal(t, json.Number("76"), anyObj["parent_session_id"])
	require.Equal(t, "in an any", anyObj["title"])
	require.IsType(t, "", decoded["at"], "timestamps stay RFC 3339 strings")

	// Field order is the declaration order protojson uses.
	require.Less(t, strings.Index(got, `"id"`), strings.Index(got, `"big"`))
	require.Less(t, strings.Index(got, `"big"`), strings.Index(got, `"text"`))

	// A wrapper inside an Any carries its value under "value".
	msg.Set(f("any"), protoreflect.ValueOfMessage(wrappedInAny.ProtoReflect()))
	b, err = wirejson.NewMarshaler().Marshal(msg)
	require.NoError(t, err)
	require.Contains(t, string(b), `"any":{"@type":"type.googleapis.com/google.protobuf.Int64Value","value":-8}`)
}

func TestMarshalSession(t *testing.T) {
	t.Parallel()

	resp := &lifecyclev1.ListSessionsResponse{
		Sessions:   []*lifecyclev1.Session{{Id: 3, Status: "waiting", ParentSessionId: proto.Int64(1)}, {Id: 2}},
		Pagination: &lifecyclev1.Pagination{Page: 1, PerPage: 25, TotalCount: 2, TotalPages: 1},
	}
	b, err := wirejson.NewMarshaler().Marshal(resp)
	require.NoError(t, err)

	var got struct {
		Sessions   []map[string]any `json:"sessions"`
		Pagination map[string]any   `json:"pagination"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&got))
	require.Len(t, got.Sessions, 2)
	require.Equal(t, json.Number("3"), got.Sessions[0]["id"])
	require.Equal(t, json.Number("1"), got.Sessions[0]["parent_session_id"])
	require.Nil(t, got.Sessions[1]["parent_session_id"])
	require.Contains(t, got.Sessions[1], "parent_session_id", "unset optional still present, as null")
	require.Equal(t, "", got.Sessions[1]["git_root"], "unpopulated fields are emitted, snake_case")
	require.Equal(t, json.Number("2"), got.Pagination["total_count"])
}

func TestMarshalNonProto(t *testing.T) {
	t.Parallel()

	b, err := wirejson.NewMarshaler().Marshal(map[string]string{"a": "b"})
	require.NoError(t, err)
	require.JSONEq(t, `{"a":"b"}`, string(b))
}

func TestDecodeIsProtojson(t *testing.T) {
	t.Parallel()

	m := wirejson.NewMarshaler()
	var req lifecyclev1.CreateSessionRequest
	require.NoError(t, m.NewDecoder(strings.NewReader(`{"prompt":"p","parent_session_id":12}`)).Decode(&req))
	require.Equal(t, int64(12), req.GetParentSessionId(), "numbers accepted for int64")
	require.NoError(t, m.NewDecoder(strings.NewReader(`{"parent_session_id":"13"}`)).Decode(&req))
	require.Equal(t, int64(13), req.GetParentSessionId(), "and strings, as protojson does")

	err := m.NewDecoder(strings.NewReader(`{"prompt":"p","nope":1}`)).Decode(&lifecyclev1.CreateSessionRequest{})
	require.ErrorContains(t, err, `unknown field "nope"`)
}

func TestEnumsAreTheSpecsWords(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		value protoreflect.Enum
		want  string
	}{
		{queuev1.FollowUpOutcome_FOLLOW_UP_OUTCOME_DELIVERED, "delivered"},
		{queuev1.FollowUpOutcome_FOLLOW_UP_OUTCOME_QUEUED, "queued"},
		{queuev1.FollowUpOutcome_FOLLOW_UP_OUTCOME_UNSPECIFIED, ""},
		{lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_NOTHING_ALREADY_REACHABLE, "nothing_already_reachable"},
		{lifecyclev1.DeliveryRefusal_DELIVERY_REFUSAL_BLOCKED_ON_ELICITATION, "blocked_on_elicitation"},
	} {
		v := tc.value.Descriptor().Values().ByNumber(tc.value.Number())
		require.Equal(t, tc.want, wirejson.EnumWord(v), v.Name())
	}

	m := wirejson.NewMarshaler()
	b, err := m.Marshal(&queuev1.FollowUpResponse{Outcome: queuev1.FollowUpOutcome_FOLLOW_UP_OUTCOME_DELIVERED})
	require.NoError(t, err)
	require.Contains(t, string(b), `"outcome":"delivered"`)
	require.Contains(t, string(b), `"uncle_edge":null`, "an unset enum is null, never …_UNSPECIFIED")
	require.NotContains(t, string(b), "UNSPECIFIED")

	for _, body := range []string{`{"mode":"handover"}`, `{"mode":"DELIVERY_MODE_HANDOVER"}`, `{"mode":2}`, `{ "mode" : "handover" , "prompt":"p"}`} {
		var req lifecyclev1.DeliverTurnRequest
		require.NoError(t, m.NewDecoder(strings.NewReader(body)).Decode(&req), body)
		require.Equal(t, lifecyclev1.DeliveryMode_DELIVERY_MODE_HANDOVER, req.GetMode(), body)
		req.Reset()
		require.NoError(t, m.Unmarshal([]byte(body), &req), body)
		require.Equal(t, lifecyclev1.DeliveryMode_DELIVERY_MODE_HANDOVER, req.GetMode(), body)
	}
	var resp queuev1.FollowUpResponse
	require.NoError(t, m.Unmarshal(b, &resp), "an answer reads back")
	require.Equal(t, queuev1.FollowUpOutcome_FOLLOW_UP_OUTCOME_DELIVERED, resp.GetOutcome())

	err = m.NewDecoder(strings.NewReader(`{"mode":"sideways"}`)).Decode(&lifecyclev1.DeliverTurnRequest{})
	require.ErrorContains(t, err, "sideways", "a word of no value is protojson's refusal")
	err = m.NewDecoder(strings.NewReader(`{"mode":"unspecified"}`)).Decode(&lifecyclev1.DeliverTurnRequest{})
	require.Error(t, err, "the zero value has no word")
}
