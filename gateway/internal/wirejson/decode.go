package wirejson

import (
	"encoding/json"
	"io"
	"sync"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Unmarshal decodes data into v as JSONPb does, a proto message once its
// enum words are read as their names (EnumWord).
func (m *Marshaler) Unmarshal(data []byte, v any) error {
	if msg, ok := v.(proto.Message); ok && json.Valid(data) {
		data = enumNames(data, msg.ProtoReflect().Descriptor())
	}
	return m.JSONPb.Unmarshal(data, v)
}

// NewDecoder returns JSONPb's decoder, reading a proto message's enum
// words as their names (EnumWord).
func (m *Marshaler) NewDecoder(r io.Reader) runtime.Decoder {
	dec := json.NewDecoder(r)
	plain := runtime.DecoderWrapper{Decoder: dec, UnmarshalOptions: m.UnmarshalOptions}
	return runtime.DecoderFunc(func(v any) error {
		msg, ok := v.(proto.Message)
		if !ok {
			return plain.Decode(v)
		}
		var raw json.RawMessage // what JSONPb's decoder reads: one value
		if err := dec.Decode(&raw); err != nil {
			return err
		}
		return m.UnmarshalOptions.Unmarshal(enumNames(raw, msg.ProtoReflect().Descriptor()), msg)
	})
}

// enumNames is body, valid JSON meant as a message of type md, with every
// enum word of md's fields (at any depth) replaced by the value's name, so
// protojson reads it. Anything else, including what does not fit md, is
// left for protojson to read or refuse.
func enumNames(body []byte, md protoreflect.MessageDescriptor) []byte {
	if !hasEnums(md) {
		return body
	}
	r := enumReader{in: scanner{in: body}}
	if r.message(md) != nil || len(r.edits) == 0 {
		return body
	}
	out := make([]byte, 0, len(body)+len(r.edits)*16)
	at := 0
	for _, e := range r.edits {
		out = append(append(out, body[at:e.start]...), e.name...)
		at = e.end
	}
	return append(out, body[at:]...)
}

// enumReader finds the enum words in a message's JSON.
type enumReader struct {
	in    scanner
	edits []enumEdit // in input order
}

// enumEdit replaces in[start:end], a quoted word, with name, quoted.
type enumEdit struct {
	start, end int
	name       []byte
}

func (r *enumReader) message(md protoreflect.MessageDescriptor) error {
	if r.in.peek() != '{' || md.FullName().Parent() == "google.protobuf" {
		_, err := r.in.skip()
		return err
	}
	return r.in.members(func(key []byte) error {
		fd := lookupField(md.Fields(), keyName(key))
		if fd == nil {
			_, err := r.in.skip()
			return err
		}
		return r.field(fd)
	})
}

func (r *enumReader) field(fd protoreflect.FieldDescriptor) error {
	switch c := r.in.peek(); {
	case fd.IsMap() && c == '{':
		return r.in.members(func([]byte) error { return r.scalar(fd.MapValue()) })
	case fd.IsList() && c == '[':
		return r.in.elements(func() error { return r.scalar(fd) })
	case fd.IsMap() || fd.IsList():
		_, err := r.in.skip()
		return err
	}
	return r.scalar(fd)
}

func (r *enumReader) scalar(fd protoreflect.FieldDescriptor) error {
	switch {
	case fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind:
		return r.message(fd.Message())
	case fd.Kind() != protoreflect.EnumKind || r.in.peek() != '"':
		_, err := r.in.skip()
		return err
	}
	start := r.in.pos
	raw, err := r.in.str()
	if err != nil {
		return err
	}
	ed := fd.Enum()
	word := keyName(raw)
	if ed.Values().ByName(protoreflect.Name(word)) != nil {
		return nil // a name: protojson reads it
	}
	if v := enumValueOf(ed, word); v != nil {
		r.edits = append(r.edits, enumEdit{start: start, end: r.in.pos, name: []byte(`"` + string(v.Name()) + `"`)})
	}
	return nil
}

// enumFields caches hasEnums, by message.
var enumFields sync.Map // protoreflect.FullName → bool

// hasEnums reports whether a message of type md can hold an enum value
// (in a field of its own or of a message it holds): only then does its
// JSON need reading for words.
func hasEnums(md protoreflect.MessageDescriptor) bool {
	if v, ok := enumFields.Load(md.FullName()); ok {
		return v.(bool)
	}
	has := holdsEnum(md, map[protoreflect.FullName]bool{})
	enumFields.Store(md.FullName(), has)
	return has
}

func holdsEnum(md protoreflect.MessageDescriptor, seen map[protoreflect.FullName]bool) bool {
	if seen[md.FullName()] || md.FullName().Parent() == "google.protobuf" {
		return false
	}
	seen[md.FullName()] = true
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if fd.IsMap() {
			fd = fd.MapValue()
		}
		switch fd.Kind() {
		case protoreflect.EnumKind:
			return true
		case protoreflect.MessageKind, protoreflect.GroupKind:
			if holdsEnum(fd.Message(), seen) {
				return true
			}
		}
	}
	return false
}
