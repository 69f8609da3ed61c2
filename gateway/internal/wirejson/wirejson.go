// Package wirejson is the JSON form of the API's messages on every gateway
// surface: protojson with proto (snake_case) field names, unpopulated fields
// emitted, and one change protojson does not offer — 64-bit integers are JSON
// numbers, not strings, so ids read as numbers in every client.
//
// Trade-off: a JavaScript client reads integers above 2^53 imprecisely. Ids
// and counts stay far below that; protojson's strings would make every
// client convert every id instead.
package wirejson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// Marshaler is a runtime.Marshaler: grpc-gateway's JSONPb whose Marshal
// renders 64-bit integers as numbers and unset proto3 optional fields as
// null. Decoding is JSONPb's protojson: unknown fields are an error, and
// 64-bit integers are accepted as numbers or strings.
type Marshaler struct {
	runtime.JSONPb
}

var _ runtime.Marshaler = (*Marshaler)(nil)

// NewMarshaler returns the gateway's marshaler.
func NewMarshaler() *Marshaler {
	return &Marshaler{JSONPb: runtime.JSONPb{
		MarshalOptions:   protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true},
		UnmarshalOptions: protojson.UnmarshalOptions{DiscardUnknown: false},
	}}
}

// Marshal encodes v; proto messages get the numeric 64-bit integers, other
// values are JSONPb's.
func (m *Marshaler) Marshal(v any) ([]byte, error) {
	msg, ok := v.(proto.Message)
	if !ok {
		return m.JSONPb.Marshal(v)
	}
	b, err := m.MarshalOptions.Marshal(msg)
	if err != nil {
		return nil, err
	}
	w := walker{resolver: m.resolver(), emitUnpopulated: m.EmitUnpopulated}
	var out bytes.Buffer
	if err := w.message(&out, b, msg.ProtoReflect().Descriptor()); err != nil {
		return nil, fmt.Errorf("render %s as JSON: %w", msg.ProtoReflect().Descriptor().FullName(), err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, out.Bytes()); err != nil {
		return nil, fmt.Errorf("render %s as JSON: %w", msg.ProtoReflect().Descriptor().FullName(), err)
	}
	return compact.Bytes(), nil
}

// NewEncoder returns an encoder that writes Marshal's output and the
// delimiter, as JSONPb's does.
func (m *Marshaler) NewEncoder(w io.Writer) runtime.Encoder {
	return runtime.EncoderFunc(func(v any) error {
		b, err := m.Marshal(v)
		if err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
		_, err = w.Write(m.Delimiter())
		return err
	})
}

func (m *Marshaler) resolver() interface {
	FindMessageByURL(url string) (protoreflect.MessageType, error)
} {
	if m.MarshalOptions.Resolver != nil {
		return m.MarshalOptions.Resolver
	}
	return protoregistry.GlobalTypes
}

// walker re-emits protojson output guided by the message descriptor,
// rewriting 64-bit integer strings as numbers. Everything else is copied as
// protojson wrote it, in the order it wrote it.
type walker struct {
	resolver interface {
		FindMessageByURL(url string) (protoreflect.MessageType, error)
	}
	emitUnpopulated bool
}

// message writes raw, the JSON of a message of type md.
func (w walker) message(out *bytes.Buffer, raw json.RawMessage, md protoreflect.MessageDescriptor) error {
	if isNull(raw) {
		out.Write(raw)
		return nil
	}
	switch md.FullName() {
	case "google.protobuf.Int64Value", "google.protobuf.UInt64Value":
		return w.scalar(out, raw, md.Fields().ByNumber(1))
	case "google.protobuf.Any":
		return w.any(out, raw)
	}
	if hasSpecialJSON(md) {
		out.Write(raw)
		return nil
	}
	members, err := parseObject(raw)
	if err != nil {
		return err
	}
	fields := md.Fields()
	written := make([]bool, len(members))
	first := true
	emit := func(key string, fn func() error) error {
		if !first {
			out.WriteByte(',')
		}
		first = false
		writeString(out, key)
		out.WriteByte(':')
		return fn()
	}
	out.WriteByte('{')
	// Fields in declaration order, as protojson writes them, with unset
	// proto3 optional fields (which protojson omits) as null.
	for i := range fields.Len() {
		fd := fields.Get(i)
		idx := findMember(members, fd)
		if idx < 0 {
			if w.emitUnpopulated && isSyntheticOptional(fd) {
				if err := emit(string(fd.Name()), func() error { out.WriteString("null"); return nil }); err != nil {
					return err
				}
			}
			continue
		}
		written[idx] = true
		if err := emit(members[idx].key, func() error { return w.field(out, members[idx].value, fd) }); err != nil {
			return fmt.Errorf("field %s: %w", fd.Name(), err)
		}
	}
	// Anything else protojson wrote (extensions) is copied as is.
	for i, m := range members {
		if written[i] {
			continue
		}
		if err := emit(m.key, func() error { out.Write(m.value); return nil }); err != nil {
			return err
		}
	}
	out.WriteByte('}')
	return nil
}

// field writes the value of fd: a map, a list or a singular value.
func (w walker) field(out *bytes.Buffer, raw json.RawMessage, fd protoreflect.FieldDescriptor) error {
	switch {
	case isNull(raw):
		out.Write(raw)
		return nil
	case fd.IsMap():
		members, err := parseObject(raw)
		if err != nil {
			return err
		}
		out.WriteByte('{')
		for i, m := range members {
			if i > 0 {
				out.WriteByte(',')
			}
			writeString(out, m.key) // map keys are strings in JSON, 64-bit or not
			out.WriteByte(':')
			if err := w.scalar(out, m.value, fd.MapValue()); err != nil {
				return err
			}
		}
		out.WriteByte('}')
		return nil
	case fd.IsList():
		elems, err := parseArray(raw)
		if err != nil {
			return err
		}
		out.WriteByte('[')
		for i, e := range elems {
			if i > 0 {
				out.WriteByte(',')
			}
			if err := w.scalar(out, e, fd); err != nil {
				return err
			}
		}
		out.WriteByte(']')
		return nil
	default:
		return w.scalar(out, raw, fd)
	}
}

// scalar writes one value of fd's kind (a list element, a map value or a
// singular field).
func (w walker) scalar(out *bytes.Buffer, raw json.RawMessage, fd protoreflect.FieldDescriptor) error {
	switch fd.Kind() {
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return writeInteger(out, raw, func(s string) error { _, err := strconv.ParseInt(s, 10, 64); return err })
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return writeInteger(out, raw, func(s string) error { _, err := strconv.ParseUint(s, 10, 64); return err })
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return w.message(out, raw, fd.Message())
	default:
		out.Write(raw)
		return nil
	}
}

// any writes a google.protobuf.Any: {"@type": url, ...fields} or, for types
// with a special JSON form, {"@type": url, "value": ...}.
func (w walker) any(out *bytes.Buffer, raw json.RawMessage) error {
	members, err := parseObject(raw)
	if err != nil {
		return err
	}
	var md protoreflect.MessageDescriptor
	for _, m := range members {
		if m.key != "@type" {
			continue
		}
		var url string
		if err := json.Unmarshal(m.value, &url); err == nil {
			if mt, err := w.resolver.FindMessageByURL(url); err == nil {
				md = mt.Descriptor()
			}
		}
	}
	if md == nil { // unresolvable: protojson could not have written it either
		out.Write(raw)
		return nil
	}
	special := hasSpecialJSON(md) || md.FullName() == "google.protobuf.Int64Value" || md.FullName() == "google.protobuf.UInt64Value"
	fields := md.Fields()
	out.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			out.WriteByte(',')
		}
		writeString(out, m.key)
		out.WriteByte(':')
		switch {
		case m.key == "@type":
			out.Write(m.value)
		case special && m.key == "value":
			if err := w.message(out, m.value, md); err != nil {
				return err
			}
		case !special:
			if fd := lookupField(fields, m.key); fd != nil {
				if err := w.field(out, m.value, fd); err != nil {
					return err
				}
				continue
			}
			out.Write(m.value)
		default:
			out.Write(m.value)
		}
	}
	out.WriteByte('}')
	return nil
}

// hasSpecialJSON reports whether protojson writes md in a form of its own
// (a string, a bare value or an arbitrary object) rather than as an object
// of its fields.
func hasSpecialJSON(md protoreflect.MessageDescriptor) bool {
	if md.FullName().Parent() != "google.protobuf" {
		return false
	}
	switch md.Name() {
	case "Timestamp", "Duration", "FieldMask", "Struct", "Value", "ListValue",
		"BoolValue", "BytesValue", "DoubleValue", "FloatValue", "Int32Value",
		"Int64Value", "StringValue", "UInt32Value", "UInt64Value", "Any":
		return true
	}
	return false
}

func isSyntheticOptional(fd protoreflect.FieldDescriptor) bool {
	o := fd.ContainingOneof()
	return o != nil && o.IsSynthetic()
}

func writeInteger(out *bytes.Buffer, raw json.RawMessage, valid func(string) error) error {
	if len(raw) == 0 || raw[0] != '"' {
		out.Write(raw) // already a number
		return nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return err
	}
	if err := valid(s); err != nil {
		return fmt.Errorf("64-bit integer %q: %w", s, err)
	}
	out.WriteString(s)
	return nil
}

type member struct {
	key   string
	value json.RawMessage
}

func findMember(members []member, fd protoreflect.FieldDescriptor) int {
	for i, m := range members {
		if m.key == string(fd.Name()) || m.key == fd.JSONName() {
			return i
		}
	}
	return -1
}

func lookupField(fields protoreflect.FieldDescriptors, key string) protoreflect.FieldDescriptor {
	if fd := fields.ByName(protoreflect.Name(key)); fd != nil {
		return fd
	}
	return fields.ByJSONName(key)
}

func parseObject(raw json.RawMessage) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := expectDelim(dec, '{'); err != nil {
		return nil, err
	}
	var members []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("object key %v is not a string", tok)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		members = append(members, member{key, v})
	}
	return members, expectDelim(dec, '}')
}

func parseArray(raw json.RawMessage) ([]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := expectDelim(dec, '['); err != nil {
		return nil, err
	}
	var elems []json.RawMessage
	for dec.More() {
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		elems = append(elems, v)
	}
	return elems, expectDelim(dec, ']')
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("want %q, got %v", want, tok)
	}
	return nil
}

func isNull(raw json.RawMessage) bool {
	return string(bytes.TrimSpace(raw)) == "null"
}

// writeString writes s as a JSON string without HTML escaping, as protojson
// does.
func writeString(out *bytes.Buffer, s string) {
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)           // a string always encodes
	out.Truncate(out.Len() - 1) // Encode's newline
}
