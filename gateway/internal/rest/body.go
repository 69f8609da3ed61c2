package rest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/zimmerhq/zimmer/gateway/internal/wirejson"
)

// maxKeptBody bounds the copy of a body kept to explain its refusal: the
// body limit itself, so every body that was read can be explained.
const maxKeptBody = MaxBodyBytes

// trackedBody records why decoding the request body failed, so the error
// handler can tell a malformed body (which never reached a service) from a
// service's InvalidArgument: grpc-gateway reports both as InvalidArgument.
// It keeps what it read, to say which field of a JSON object was wrong.
type trackedBody struct {
	io.ReadCloser
	decodeErr error
	message   protoreflect.MessageDescriptor // the request being decoded
	read      bytes.Buffer
	// pathParams are the route's path parameters: not the body's fields.
	pathParams map[string]string
}

func (b *trackedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 && b.read.Len()+n <= maxKeptBody {
		b.read.Write(p[:n])
	}
	return n, err
}

// fieldProblem is one field of a JSON body that does not fit the request.
type fieldProblem struct {
	field, reason string
}

func (p fieldProblem) String() string { return p.field + ": " + p.reason }

// bodyProblems says which members of body, a JSON object, do not fit md:
// unknown names, and values of the wrong type (a string for a boolean, a
// time that is not RFC 3339). None when body is not a JSON object (it is
// malformed, not wrong), or when each member fits on its own. decode is
// the marshaler's decoding of one member.
func bodyProblems(body []byte, md protoreflect.MessageDescriptor, pathParams map[string]string,
	decode func([]byte, any) error,
) []fieldProblem {
	var members map[string]json.RawMessage
	if md == nil || json.Unmarshal(body, &members) != nil || members == nil {
		return nil
	}
	var problems []fieldProblem
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range members {
			if !yield(k) {
				return
			}
		}
	}) {
		fd := md.Fields().ByName(protoreflect.Name(name))
		if fd == nil {
			fd = md.Fields().ByJSONName(name)
		}
		if fd == nil {
			problems = append(problems, fieldProblem{name, fmt.Sprintf("is not a field of this request; its fields are %s",
				strings.Join(bodyFields(md, pathParams), ", "))})
			continue
		}
		one, _ := json.Marshal(map[string]json.RawMessage{name: members[name]})
		switch err := decode(one, dynamicpb.NewMessage(md).Interface()); {
		case err == nil:
		case strings.Contains(err.Error(), "UTF-8"):
			problems = append(problems, fieldProblem{string(fd.Name()), "is not valid UTF-8 text; send the text encoded as UTF-8"})
		default:
			problems = append(problems, fieldProblem{string(fd.Name()), fmt.Sprintf("takes %s, got %s", takes(fd), clipValue(members[name]))})
		}
	}
	return problems
}

// bodyFields are the names of md's fields a body sets: all but the path
// parameters.
func bodyFields(md protoreflect.MessageDescriptor, pathParams map[string]string) []string {
	var names []string
	for i := range md.Fields().Len() {
		fd := md.Fields().Get(i)
		if _, inPath := pathParams[string(fd.Name())]; !inPath {
			names = append(names, string(fd.Name()))
		}
	}
	return names
}

// bodyExample is an example of the body md's route takes: each body field
// with a value of its type, in declaration order.
func bodyExample(md protoreflect.MessageDescriptor, pathParams map[string]string) string {
	if md == nil {
		return "{}"
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, name := range bodyFields(md, pathParams) {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q: %s", name, example(md.Fields().ByName(protoreflect.Name(name))))
	}
	b.WriteByte('}')
	return b.String()
}

// example is a JSON value fd takes.
func example(fd protoreflect.FieldDescriptor) string {
	switch {
	case fd.IsMap():
		return "{}"
	case slices.Contains(refLists, fd.Name()):
		return `[12, "release-router"]`
	case fd.IsList():
		return "[" + scalarExample(fd) + "]"
	}
	return scalarExample(fd)
}

func scalarExample(fd protoreflect.FieldDescriptor) string {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return "true"
	case protoreflect.StringKind, protoreflect.BytesKind:
		return `"..."`
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return "1.5"
	case protoreflect.EnumKind:
		if v := fd.Enum().Values(); v.Len() > 1 {
			return fmt.Sprintf("%q", wirejson.EnumWord(v.Get(1)))
		}
		return `"..."`
	case protoreflect.MessageKind, protoreflect.GroupKind:
		switch fd.Message().FullName() {
		case "google.protobuf.Timestamp":
			return `"2030-01-02T03:04:05Z"`
		case "google.protobuf.Duration":
			return `"90s"`
		case "google.protobuf.Value":
			return `"..."`
		case "google.protobuf.ListValue":
			return "[]"
		case "google.protobuf.BoolValue":
			return "true"
		case "google.protobuf.StringValue":
			return `"..."`
		}
		return "{}"
	}
	return "1" // the integer kinds
}

// takes says what JSON fd takes, for a refusal.
func takes(fd protoreflect.FieldDescriptor) string {
	switch {
	case fd.IsMap():
		return "a JSON object"
	case slices.Contains(refLists, fd.Name()):
		return `a list of session ids (positive whole numbers) or slugs, e.g. [12, "release-router"]`
	case fd.IsList():
		return "a list, each " + takesScalar(fd) + ", e.g. " + example(fd)
	}
	return takesScalar(fd)
}

func takesScalar(fd protoreflect.FieldDescriptor) string {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return "true or false (a JSON boolean, unquoted)"
	case protoreflect.StringKind:
		return "a string"
	case protoreflect.BytesKind:
		return "base64 text"
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return "a number"
	case protoreflect.EnumKind:
		var words []string
		for i := range fd.Enum().Values().Len() {
			if w := wirejson.EnumWord(fd.Enum().Values().Get(i)); w != "" { // the zero value has none
				words = append(words, w)
			}
		}
		return "one of " + strings.Join(words, ", ")
	case protoreflect.MessageKind, protoreflect.GroupKind:
		switch fd.Message().FullName() {
		case "google.protobuf.Timestamp":
			return `an RFC 3339 time with a zone, e.g. "2030-01-02T03:04:05Z"`
		case "google.protobuf.Duration":
			return `a duration in seconds, e.g. "90s"`
		case "google.protobuf.Struct":
			return "a JSON object"
		case "google.protobuf.Value":
			return "a JSON value"
		case "google.protobuf.BoolValue":
			return "true or false (a JSON boolean, unquoted)"
		case "google.protobuf.StringValue":
			return "a string"
		}
		return "a JSON object"
	}
	return "a whole number (an integer, e.g. 1)"
}

// clipValue shows a refused value, shortened.
func clipValue(raw json.RawMessage) string {
	const limit = 40
	s := string(bytes.TrimSpace(raw))
	if len(s) > limit {
		return s[:limit] + "…"
	}
	return s
}
