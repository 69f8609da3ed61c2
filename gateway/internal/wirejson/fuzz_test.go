package wirejson_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
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

// FuzzMarshalMatchesProtojson checks Marshal against a reference built the
// plain way: protojson with the same options, decoded into a tree, then
// fixed up (64-bit integer strings become numbers, an unset proto3
// optional becomes null) by walking the tree with the descriptors. For any
// message the fuzzer decodes from wire bytes, both must give the same JSON
// value, or both fail. The seeds run as a normal test.
func FuzzMarshalMatchesProtojson(f *testing.F) {
	outer := dynamicpb.NewMessageType(outerDescriptor(f))
	types := []protoreflect.MessageType{
		outer,
		(&lifecyclev1.ListSessionsResponse{}).ProtoReflect().Type(),
		(&lifecyclev1.SessionEvent{}).ProtoReflect().Type(),
		(&lineagev1.GetSessionProvenanceResponse{}).ProtoReflect().Type(),
		(&queuev1.FollowUpResponse{}).ProtoReflect().Type(),
	}
	for i, m := range seedMessages(f, outer) {
		b, err := proto.Marshal(m)
		require.NoError(f, err)
		f.Add(byte(i%len(types)), b)
	}

	f.Fuzz(func(t *testing.T, kind byte, wire []byte) {
		m, ok := unmarshal(types[int(kind)%len(types)], wire)
		if !ok {
			return
		}
		want, werr := reference(m)
		got, gerr := wirejson.NewMarshaler().Marshal(m)
		if werr != nil {
			require.Error(t, gerr, "protojson refused %v, Marshal did not", m)
			return
		}
		require.NoError(t, gerr)
		require.Equal(t, want, decode(t, got), "Marshal: %s", got)
		require.True(t, json.Valid(got))
	})
}

// unmarshal decodes wire as a message of type mt; false when it is not
// one. dynamicpb panics on a map entry whose key is missing (it has no
// default key value), which says nothing about Marshal: such input is
// skipped too.
func unmarshal(mt protoreflect.MessageType, wire []byte) (m proto.Message, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	m = mt.New().Interface()
	return m, proto.Unmarshal(wire, m) == nil
}

// seedMessages are one populated message of each fuzzed type, in the order
// of FuzzMarshalMatchesProtojson's types.
func seedMessages(t testing.TB, outer protoreflect.MessageType) []proto.Message {
	t.Helper()
	o := outer.New()
	f := o.Descriptor().Fields().ByName
	o.Set(f("id"), protoreflect.ValueOfInt64(-42))
	o.Set(f("big"), protoreflect.ValueOfUint64(18446744073709551615))
	o.Mutable(f("ids")).List().Append(protoreflect.ValueOfInt64(7))
	o.Mutable(f("counts")).Map().Set(protoreflect.ValueOfString("x").MapKey(), protoreflect.ValueOfInt64(3))
	inner := o.Mutable(f("by_id")).Map().Mutable(protoreflect.ValueOfInt64(5).MapKey()).Message()
	inner.Set(inner.Descriptor().Fields().ByName("a"), protoreflect.ValueOfInt64(6))
	o.Set(f("wrapped"), protoreflect.ValueOfMessage(wrapperspb.Int64(12).ProtoReflect()))
	session, err := anypb.New(&lifecyclev1.Session{Id: 77, ParentSessionId: proto.Int64(76)})
	require.NoError(t, err)
	o.Set(f("any"), protoreflect.ValueOfMessage(session.ProtoReflect()))
	o.Set(f("at"), protoreflect.ValueOfMessage(timestamppb.New(time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)).ProtoReflect()))
	meta, err := structpb.NewStruct(map[string]any{"n": 1.5, "s": "9", "l": []any{1, "two"}})
	require.NoError(t, err)
	o.Set(f("meta"), protoreflect.ValueOfMessage(meta.ProtoReflect()))
	o.Set(f("text"), protoreflect.ValueOfString(`"quoted" <tag> & é`))

	return []proto.Message{
		o.Interface(),
		&lifecyclev1.ListSessionsResponse{
			Sessions:   []*lifecyclev1.Session{{Id: 3, Status: "waiting", ParentSessionId: proto.Int64(1), CustomMetadata: meta}, {Id: 2}},
			Pagination: &lifecyclev1.Pagination{Page: 1, PerPage: 25, TotalCount: 2, TotalPages: 1},
		},
		&lifecyclev1.SessionEvent{EventId: "e", SessionId: 9, Payload: &lifecyclev1.SessionEvent_Effect{Effect: &lifecyclev1.SessionEffect{
			Kind: &lifecyclev1.SessionEffect_RetireMessages{RetireMessages: &lifecyclev1.RetireMessagesEffect{
				Forced: true, ArchivedAt: timestamppb.New(time.Date(2026, 3, 5, 12, 0, 0, 0, time.UTC)),
			}},
			Session: &lifecyclev1.Session{Id: 9, NeedsInputCount: 3},
		}}},
		hierarchyProvenance(),
		&queuev1.FollowUpResponse{Outcome: queuev1.FollowUpOutcome_FOLLOW_UP_OUTCOME_QUEUED, Message: "queued",
			EnqueuedMessage: &queuev1.EnqueuedMessage{Id: 5, SessionId: 1}},
	}
}

func hierarchyProvenance() *lineagev1.GetSessionProvenanceResponse {
	return &lineagev1.GetSessionProvenanceResponse{
		SessionHierarchy: hierarchyResponse(4).GetSessionHierarchy(),
		HumanMessages:    []*lineagev1.HumanMessage{{Id: 1, Origin: "here", AuthoredInSessionId: 1000, OccurredAt: timestamppb.Now()}},
	}
}

// reference is m as protojson writes it (with Marshal's options), fixed up
// as a tree: 64-bit integers as numbers, unset optionals as null, enum
// values as words (fixEnum).
func reference(m proto.Message) (any, error) {
	b, err := wirejson.NewMarshaler().MarshalOptions.Marshal(m)
	if err != nil {
		return nil, err
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return fixMessage(m.ProtoReflect().Descriptor(), v), nil
}

func decode(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&v), "%s", b)
	return v
}

// fixMessage fixes v, the protojson form of a message of type md.
func fixMessage(md protoreflect.MessageDescriptor, v any) any {
	switch md.FullName() {
	case "google.protobuf.Int64Value", "google.protobuf.UInt64Value":
		return fixNumber(v)
	case "google.protobuf.Any":
		return fixAny(v)
	}
	obj, ok := v.(map[string]any)
	if !ok || md.FullName().Parent() == "google.protobuf" {
		return v // null, or a well-known type's own JSON form
	}
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		name := string(fd.Name())
		val, present := obj[name]
		if !present {
			if o := fd.ContainingOneof(); o != nil && o.IsSynthetic() {
				obj[name] = nil
			}
			continue
		}
		obj[name] = fixField(fd, val)
	}
	return obj
}

func fixField(fd protoreflect.FieldDescriptor, v any) any {
	switch {
	case v == nil:
		return nil
	case fd.IsMap():
		m := v.(map[string]any)
		for k, e := range m {
			m[k] = fixScalar(fd.MapValue(), e)
		}
		return m
	case fd.IsList():
		l := v.([]any)
		for i, e := range l {
			l[i] = fixScalar(fd, e)
		}
		return l
	}
	return fixScalar(fd, v)
}

func fixScalar(fd protoreflect.FieldDescriptor, v any) any {
	switch fd.Kind() {
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return fixNumber(v)
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return fixMessage(fd.Message(), v)
	case protoreflect.EnumKind:
		return fixEnum(fd.Enum(), v)
	}
	return v
}

// fixEnum is an enum value's word, found independently of
// wirejson.EnumWord: the name past the prefix all of the enum's value
// names share, in lower case; null for the zero value.
func fixEnum(ed protoreflect.EnumDescriptor, v any) any {
	name, ok := v.(string)
	if !ok || ed.Values().ByName(protoreflect.Name(name)) == nil {
		return v
	}
	if ed.Values().ByName(protoreflect.Name(name)).Number() == 0 {
		return nil
	}
	prefix := string(ed.Values().Get(0).Name())
	for i := range ed.Values().Len() {
		n := string(ed.Values().Get(i).Name())
		for !strings.HasPrefix(n, prefix) {
			prefix = prefix[:len(prefix)-1]
		}
	}
	prefix = prefix[:strings.LastIndexByte(prefix, '_')+1]
	return strings.ToLower(strings.TrimPrefix(name, prefix))
}

func fixNumber(v any) any {
	if s, ok := v.(string); ok {
		return json.Number(s)
	}
	return v
}

// fixAny fixes an Any's JSON: its packed message's fields beside @type,
// or under "value" for a type with a JSON form of its own.
func fixAny(v any) any {
	obj, ok := v.(map[string]any)
	if !ok {
		return v
	}
	url, _ := obj["@type"].(string)
	mt, err := protoregistry.GlobalTypes.FindMessageByURL(url)
	if err != nil {
		return v
	}
	md := mt.Descriptor()
	if md.FullName().Parent() == "google.protobuf" {
		obj["value"] = fixMessage(md, obj["value"])
		return obj
	}
	delete(obj, "@type")
	fixed := fixMessage(md, obj).(map[string]any)
	fixed["@type"] = url
	return fixed
}
