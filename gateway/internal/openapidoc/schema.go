package openapidoc

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

var protoMessage = reflect.TypeFor[proto.Message]()

// define adds the definition of t, a Go struct the gateway encodes with
// encoding/json (or a proto message it encodes with wirejson), and returns
// a schema referring to it. A struct's definition is named after the type
// without a JSON suffix; its properties are its json-tagged fields, each
// described by its doc tag, nullable when a pointer to a plain value or
// tagged nullable:"true".
func (d *document) define(t reflect.Type) (*object, error) {
	if t.Implements(protoMessage) {
		return d.defineMessage(reflect.Zero(t).Interface().(proto.Message).ProtoReflect().Descriptor())
	}
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("cannot define %s: not a struct or a proto message", t)
	}
	name := strings.TrimSuffix(t.Name(), "JSON")
	ref := newObject().set("$ref", definitionRef(name))
	if d.defs.obj(name) != nil {
		return ref, nil
	}
	def := newObject().set("type", "object")
	d.defs.set(name, def) // before the fields: a field may refer back
	props := newObject()
	var required []any
	for i := range t.NumField() {
		f := t.Field(i)
		key, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if key == "" || key == "-" {
			continue
		}
		// Every key is always written but an omitempty one (required
		// otherwise); a nil pointer (of a plain value) or a field tagged
		// nullable as null.
		ft := f.Type
		nullable := f.Tag.Get("nullable") == "true"
		if ft.Kind() == reflect.Pointer && !ft.Implements(protoMessage) {
			ft, nullable = ft.Elem(), true
		}
		s, err := d.schemaOf(ft)
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", t.Name(), f.Name, err)
		}
		if doc := f.Tag.Get("doc"); doc != "" {
			s = withDescription(s, doc)
		}
		if nullable {
			s.set("x-nullable", true)
		}
		props.set(key, s)
		if !slices.Contains(strings.Split(opts, ","), "omitempty") {
			required = append(required, key)
		}
	}
	def.set("properties", props)
	def.set("required", required)
	return ref, nil
}

// schemaOf is the schema of a Go value of type t as encoding/json writes it.
func (d *document) schemaOf(t reflect.Type) (*object, error) {
	if t.Implements(protoMessage) || t.Kind() == reflect.Struct {
		return d.define(t)
	}
	switch t.Kind() {
	case reflect.String:
		return newObject().set("type", "string"), nil
	case reflect.Bool:
		return newObject().set("type", "boolean"), nil
	case reflect.Int32:
		return newObject().set("type", "integer").set("format", "int32"), nil
	case reflect.Int, reflect.Int64:
		return newObject().set("type", "integer").set("format", "int64"), nil
	case reflect.Slice:
		items, err := d.schemaOf(t.Elem())
		if err != nil {
			return nil, err
		}
		return newObject().set("type", "array").set("items", items), nil
	}
	return nil, fmt.Errorf("no schema for Go type %s", t)
}

// defineMessage adds the definition of md, named as protoc-gen-openapiv2
// names its own (the package's last part, then the message), unless the
// generated document already has it, and returns a schema referring to
// it. The properties are what wirejson writes: proto names, in declaration
// order, 64-bit integers as numbers, an unset optional as null.
func (d *document) defineMessage(md protoreflect.MessageDescriptor) (*object, error) {
	pkg := md.ParentFile().Package()
	name := string(pkg.Name()) + string(md.Name())
	ref := newObject().set("$ref", definitionRef(name))
	if d.defs.obj(name) != nil {
		return ref, nil
	}
	if md.Parent() != md.ParentFile() {
		return nil, fmt.Errorf("nested message %s is not supported", md.FullName())
	}
	def := newObject().set("type", "object")
	d.defs.set(name, def)
	props := newObject()
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		s, err := d.fieldSchema(fd)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fd.FullName(), err)
		}
		if fd.HasOptionalKeyword() {
			s.set("x-nullable", true)
		}
		props.set(string(fd.Name()), s)
	}
	def.set("properties", props)
	return ref, nil
}

func (d *document) fieldSchema(fd protoreflect.FieldDescriptor) (*object, error) {
	if fd.IsMap() {
		values, err := d.singularSchema(fd.MapValue())
		if err != nil {
			return nil, err
		}
		return newObject().set("type", "object").set("additionalProperties", values), nil
	}
	s, err := d.singularSchema(fd)
	if err != nil || !fd.IsList() {
		return s, err
	}
	return newObject().set("type", "array").set("items", s), nil
}

func (d *document) singularSchema(fd protoreflect.FieldDescriptor) (*object, error) {
	typed := func(typ, format string) (*object, error) {
		s := newObject().set("type", typ)
		if format != "" {
			s.set("format", format)
		}
		return s, nil
	}
	switch fd.Kind() {
	case protoreflect.StringKind:
		return typed("string", "")
	case protoreflect.BoolKind:
		return typed("boolean", "")
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return typed("integer", "int32")
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return typed("integer", "int64")
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return typed("integer", "int64")
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return typed("integer", "uint64")
	case protoreflect.FloatKind:
		return typed("number", "float")
	case protoreflect.DoubleKind:
		return typed("number", "double")
	case protoreflect.EnumKind:
		return typed("string", "")
	case protoreflect.MessageKind:
		switch fd.Message().FullName() {
		case "google.protobuf.Timestamp":
			return typed("string", "date-time")
		case "google.protobuf.Struct":
			return typed("object", "")
		}
		return d.defineMessage(fd.Message())
	}
	return nil, fmt.Errorf("no schema for proto kind %s", fd.Kind())
}

// withDescription is s with a description; a bare $ref cannot carry one
// in Swagger 2.0, so it is wrapped in allOf.
func withDescription(s *object, doc string) *object {
	if ref := s.str("$ref"); ref != "" {
		return newObject().set("description", doc).set("allOf", []any{s})
	}
	return s.set("description", doc)
}
