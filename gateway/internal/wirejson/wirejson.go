// Package wirejson is the JSON form of the API's messages on every gateway
// surface: protojson with proto (snake_case) field names, unpopulated fields
// emitted, and two changes protojson does not offer — 64-bit integers are
// JSON numbers, not strings, so ids read as numbers in every client; and
// enum values are the spec's lower-case words ("delivered", not
// FOLLOW_UP_OUTCOME_DELIVERED; an unset one is null), read back as words
// or as their full names (EnumWord).
//
// Trade-off: a JavaScript client reads integers above 2^53 imprecisely. Ids
// and counts stay far below that; protojson's strings would make every
// client convert every id instead.
package wirejson

import (
	"bytes"
	"encoding/json"
	"errors"
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
// renders 64-bit integers as numbers, enum values as words and unset
// proto3 optional fields as null. Decoding is JSONPb's protojson once enum
// words are read as their names: unknown fields are an error, and 64-bit
// integers are accepted as numbers or strings.
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
//
// It runs protojson once and rewrites its output in a single pass (see
// walker), so the cost is protojson's plus one linear scan.
func (m *Marshaler) Marshal(v any) ([]byte, error) {
	msg, ok := v.(proto.Message)
	if !ok {
		return m.JSONPb.Marshal(v)
	}
	b, err := m.MarshalOptions.Marshal(msg)
	if err != nil {
		return nil, err
	}
	md := msg.ProtoReflect().Descriptor()
	w := walker{
		in:              scanner{in: b},
		out:             bytes.NewBuffer(make([]byte, 0, len(b)+len(b)/8)),
		resolver:        m.resolver(),
		emitUnpopulated: m.EmitUnpopulated,
	}
	if err := w.message(md); err != nil {
		return nil, fmt.Errorf("render %s as JSON: %w", md.FullName(), err)
	}
	return w.out.Bytes(), nil
}

// ContentType is the gateway's JSON content type, charset included (as
// jsonhttp.ContentType, which this package cannot import).
func (m *Marshaler) ContentType(any) string { return "application/json; charset=utf-8" }

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

type resolver interface {
	FindMessageByURL(url string) (protoreflect.MessageType, error)
}

func (m *Marshaler) resolver() resolver {
	if m.MarshalOptions.Resolver != nil {
		return m.MarshalOptions.Resolver
	}
	return protoregistry.GlobalTypes
}

// walker re-emits protojson output guided by the message descriptor, in one
// pass over the bytes: it reads a value with in and writes it, compacted, to
// out, rewriting 64-bit integer strings as numbers and adding null for unset
// proto3 optional fields. Everything else is copied as protojson wrote it,
// in the order it wrote it.
type walker struct {
	in              scanner
	out             *bytes.Buffer
	resolver        resolver
	emitUnpopulated bool
}

// message writes the next value, the JSON of a message of type md.
func (w *walker) message(md protoreflect.MessageDescriptor) error {
	if w.in.peek() == 'n' { // null
		return w.copyValue()
	}
	switch md.FullName() {
	case "google.protobuf.Int64Value", "google.protobuf.UInt64Value":
		return w.scalar(md.Fields().ByNumber(1))
	case "google.protobuf.Any":
		return w.any()
	}
	if hasSpecialJSON(md) {
		return w.copyValue()
	}
	return w.fields(md, false)
}

// fields writes the next value, an object of md's fields; in an Any
// (packed), its "@type" member is copied first.
func (w *walker) fields(md protoreflect.MessageDescriptor, packed bool) error {
	fields := md.Fields()
	// protojson writes fields in declaration order, then extensions. next
	// is the declaration index of the first field not yet reached: the
	// unset proto3 optional fields (which protojson omits) before it have
	// been written as null.
	next := 0
	first := true
	sep := func() {
		if !first {
			w.out.WriteByte(',')
		}
		first = false
	}
	nullsUpTo := func(end int) {
		for ; next < end; next++ {
			if fd := fields.Get(next); w.emitUnpopulated && isSyntheticOptional(fd) {
				sep()
				w.out.WriteByte('"')
				w.out.WriteString(string(fd.Name()))
				w.out.WriteString(`":null`)
			}
		}
	}
	w.out.WriteByte('{')
	err := w.in.members(func(key []byte) error {
		if packed && keyName(key) == "@type" {
			sep()
			w.writeKey(key)
			return w.copyValue()
		}
		fd := fieldFor(fields, key, next)
		if fd == nil { // an extension: after all fields, copied as is
			nullsUpTo(fields.Len())
			sep()
			w.writeKey(key)
			return w.copyValue()
		}
		if i := fd.Index(); i >= next {
			nullsUpTo(i)
			next = i + 1
		}
		sep()
		w.writeKey(key)
		if err := w.field(fd); err != nil {
			return fmt.Errorf("field %s: %w", fd.Name(), err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	nullsUpTo(fields.Len())
	w.out.WriteByte('}')
	return nil
}

// field writes the next value, that of fd: a map, a list or a singular
// value.
func (w *walker) field(fd protoreflect.FieldDescriptor) error {
	switch {
	case w.in.peek() == 'n': // null
		return w.copyValue()
	case fd.IsMap():
		w.out.WriteByte('{')
		first := true
		err := w.in.members(func(key []byte) error {
			if !first {
				w.out.WriteByte(',')
			}
			first = false
			w.writeKey(key) // map keys are strings in JSON, 64-bit or not
			return w.scalar(fd.MapValue())
		})
		w.out.WriteByte('}')
		return err
	case fd.IsList():
		w.out.WriteByte('[')
		first := true
		err := w.in.elements(func() error {
			if !first {
				w.out.WriteByte(',')
			}
			first = false
			return w.scalar(fd)
		})
		w.out.WriteByte(']')
		return err
	default:
		return w.scalar(fd)
	}
}

// scalar writes the next value, one value of fd's kind (a list element, a
// map value or a singular field).
func (w *walker) scalar(fd protoreflect.FieldDescriptor) error {
	switch fd.Kind() {
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return w.integer(true)
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return w.integer(false)
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return w.message(fd.Message())
	case protoreflect.EnumKind:
		return w.enum(fd.Enum())
	default:
		return w.copyValue()
	}
}

// enum writes the next value, a value of ed protojson wrote by name, as
// its word (EnumWord); the zero value as null. A number (a value this
// build does not know) and NullValue's null are copied.
func (w *walker) enum(ed protoreflect.EnumDescriptor) error {
	if w.in.peek() != '"' {
		return w.copyValue()
	}
	raw, err := w.in.str()
	if err != nil {
		return err
	}
	v := ed.Values().ByName(protoreflect.Name(keyName(raw)))
	switch {
	case v == nil: // never from protojson, which writes known names
		w.out.Write(raw)
	case EnumWord(v) == "":
		w.out.WriteString("null")
	default:
		writeString(w.out, EnumWord(v))
	}
	return nil
}

// integer writes the next value, a 64-bit integer protojson wrote as a
// string, as a number.
func (w *walker) integer(signed bool) error {
	if w.in.peek() != '"' { // already a number (or null)
		return w.copyValue()
	}
	raw, err := w.in.str()
	if err != nil {
		return err
	}
	digits := raw[1 : len(raw)-1]
	if bytes.IndexByte(raw, '\\') >= 0 { // never from protojson, but decode it
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return err
		}
		digits = []byte(s)
	}
	// Checked, so that only an integer is ever written unquoted. The
	// conversions to string do not allocate: strconv does not keep them.
	if signed {
		_, err = strconv.ParseInt(string(digits), 10, 64)
	} else {
		_, err = strconv.ParseUint(string(digits), 10, 64)
	}
	if err != nil {
		return fmt.Errorf("64-bit integer %q: %w", digits, err)
	}
	w.out.Write(digits)
	return nil
}

// any writes the next value, a google.protobuf.Any: {"@type": url,
// ...fields} or, for types with a special JSON form, {"@type": url,
// "value": ...}.
func (w *walker) any() error {
	md, err := w.anyType()
	if err != nil {
		return err
	}
	if md == nil { // unresolvable: protojson could not have written it either
		return w.copyValue()
	}
	if !hasSpecialJSON(md) { // the packed message's fields beside @type
		return w.fields(md, true)
	}
	first := true // {"@type": url, "value": ...}; the 64-bit wrappers too
	w.out.WriteByte('{')
	err = w.in.members(func(key []byte) error {
		if !first {
			w.out.WriteByte(',')
		}
		first = false
		w.writeKey(key)
		if keyName(key) == "value" {
			return w.message(md)
		}
		return w.copyValue()
	})
	w.out.WriteByte('}')
	return err
}

// anyType resolves the "@type" of the Any object that is the next value,
// without consuming it; nil if it has none or it is not resolvable.
func (w *walker) anyType() (protoreflect.MessageDescriptor, error) {
	ahead := w.in // a copy: reading ahead leaves w.in where it is
	var url string
	err := ahead.members(func(key []byte) error {
		if keyName(key) == "@type" && ahead.peek() == '"' {
			raw, err := ahead.str()
			if err != nil {
				return err
			}
			if json.Unmarshal(raw, &url) != nil {
				url = "" // unresolvable, like any unknown type
			}
			return nil
		}
		_, err := ahead.skip()
		return err
	})
	if err != nil || url == "" {
		return nil, err
	}
	if mt, err := w.resolver.FindMessageByURL(url); err == nil {
		return mt.Descriptor(), nil
	}
	return nil, nil // unresolvable: not an error, the Any is copied as is
}

// copyValue writes the next value unchanged but for whitespace.
func (w *walker) copyValue() error {
	raw, err := w.in.skip()
	if err != nil {
		return err
	}
	if raw[0] == '{' || raw[0] == '[' {
		return json.Compact(w.out, raw)
	}
	w.out.Write(raw)
	return nil
}

// writeKey writes raw, an object key as protojson wrote it (quotes
// included), followed by the colon. Keys are written as encoding/json
// writes them: protojson's bytes for plain ASCII, re-encoded otherwise.
func (w *walker) writeKey(raw []byte) {
	plain := true
	for _, c := range raw[1 : len(raw)-1] {
		if c < 0x20 || c >= 0x7f || c == '\\' {
			plain = false
			break
		}
	}
	if plain {
		w.out.Write(raw)
	} else {
		writeString(w.out, keyName(raw))
	}
	w.out.WriteByte(':')
}

// keyName decodes raw, an object key (quotes included).
func keyName(raw []byte) string {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1])
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return string(raw) // matches no field
	}
	return s
}

// fieldFor returns the field of the object key raw (quotes included), by
// proto or JSON name; nil for extensions. protojson writes fields in
// declaration order, so it first looks from index from on, which is
// cheap and does not allocate.
func fieldFor(fields protoreflect.FieldDescriptors, raw []byte, from int) protoreflect.FieldDescriptor {
	name := raw[1 : len(raw)-1]
	for i := from; i < fields.Len(); i++ {
		if fd := fields.Get(i); string(name) == string(fd.Name()) || string(name) == fd.JSONName() {
			return fd
		}
	}
	return lookupField(fields, keyName(raw))
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

func lookupField(fields protoreflect.FieldDescriptors, key string) protoreflect.FieldDescriptor {
	if fd := fields.ByName(protoreflect.Name(key)); fd != nil {
		return fd
	}
	return fields.ByJSONName(key)
}

// scanner reads JSON that protojson wrote. It trusts its input to be valid
// JSON and does not validate it fully, but reports truncated or misplaced
// input as an error rather than misreading it silently.
type scanner struct {
	in  []byte
	pos int
}

var errSyntax = errors.New("malformed JSON")

// peek returns the next byte that is not whitespace, 0 at the end.
func (s *scanner) peek() byte {
	for s.pos < len(s.in) {
		switch c := s.in[s.pos]; c {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return c
		}
	}
	return 0
}

// expect consumes the next byte, which must be c.
func (s *scanner) expect(c byte) error {
	if s.peek() != c {
		return fmt.Errorf("%w: want %q at offset %d", errSyntax, c, s.pos)
	}
	s.pos++
	return nil
}

// str consumes the next value, a string, and returns it quotes included.
func (s *scanner) str() ([]byte, error) {
	if err := s.expect('"'); err != nil {
		return nil, err
	}
	start := s.pos - 1
	for s.pos < len(s.in) {
		switch s.in[s.pos] {
		case '\\':
			s.pos += 2
		case '"':
			s.pos++
			return s.in[start:s.pos], nil
		default:
			s.pos++
		}
	}
	return nil, fmt.Errorf("%w: unterminated string", errSyntax)
}

// skip consumes the next value and returns its bytes (with any whitespace
// protojson put inside it).
func (s *scanner) skip() ([]byte, error) {
	if s.peek() == 0 {
		return nil, fmt.Errorf("%w: unexpected end", errSyntax)
	}
	start := s.pos
	depth := 0
	for {
		switch s.peek() {
		case 0:
			return nil, fmt.Errorf("%w: unexpected end", errSyntax)
		case '{', '[':
			depth++
			s.pos++
		case '}', ']':
			depth--
			s.pos++
		case ',', ':':
			if depth == 0 {
				return nil, fmt.Errorf("%w: unexpected %q at offset %d", errSyntax, s.in[s.pos], s.pos)
			}
			s.pos++
		case '"':
			if _, err := s.str(); err != nil {
				return nil, err
			}
		default: // number, true, false, null
			n := s.pos
			for s.pos < len(s.in) && !isDelim(s.in[s.pos]) {
				s.pos++
			}
			if s.pos == n {
				return nil, fmt.Errorf("%w: unexpected %q at offset %d", errSyntax, s.in[s.pos], s.pos)
			}
		}
		if depth <= 0 {
			if depth < 0 {
				return nil, fmt.Errorf("%w: unbalanced at offset %d", errSyntax, s.pos)
			}
			return s.in[start:s.pos], nil
		}
	}
}

func isDelim(c byte) bool {
	switch c {
	case ',', ':', '{', '}', '[', ']', '"', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}

// members consumes the next value, an object, calling member with each key
// (quotes included) and the scanner at its value, which member must consume.
func (s *scanner) members(member func(key []byte) error) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	if s.peek() == '}' {
		s.pos++
		return nil
	}
	for {
		key, err := s.str()
		if err != nil {
			return err
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		if err := member(key); err != nil {
			return err
		}
		if s.peek() == '}' {
			s.pos++
			return nil
		}
		if err := s.expect(','); err != nil {
			return err
		}
	}
}

// elements consumes the next value, an array, calling elem with the scanner
// at each element, which elem must consume.
func (s *scanner) elements(elem func() error) error {
	if err := s.expect('['); err != nil {
		return err
	}
	if s.peek() == ']' {
		s.pos++
		return nil
	}
	for {
		if err := elem(); err != nil {
			return err
		}
		if s.peek() == ']' {
			s.pos++
			return nil
		}
		if err := s.expect(','); err != nil {
			return err
		}
	}
}

// writeString writes s as a JSON string without HTML escaping, as protojson
// does.
func writeString(out *bytes.Buffer, s string) {
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)           // a string always encodes
	out.Truncate(out.Len() - 1) // Encode's newline
}
