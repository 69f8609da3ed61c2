package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/zimmerhq/zimmer/gateway/internal/sessionref"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

// args are a tool call's arguments as the client sent them (JSON, by name)
// and the problems found reading them, collected so the model can fix them
// all in one retry. A tool's request message is its field list: arguments
// are decoded into it with protojson, and a problem is worded from the
// field's descriptor.
type args struct {
	raw      map[string]json.RawMessage
	problems []string
}

// argBounds narrow an integer argument beyond its proto type; the schema
// states the same bounds (mcpgo.Min, mcpgo.Max).
var argBounds = map[string][2]int64{
	"interval_seconds": {rules.MinHeartbeatSeconds, rules.MaxHeartbeatSeconds},
}

// refArgs are the arguments naming sessions: a slug, or an id as a string
// or a number. They are strings in the protos; a number is written as one.
var refArgs = []string{"session_id", "session_ids", "watched_session_id"}

// readArgs reads req's arguments. Anything not in accepted is a problem
// naming what is; null is the same as leaving an argument out.
func readArgs(req mcpgo.CallToolRequest, accepted []string) *args {
	a := &args{raw: map[string]json.RawMessage{}}
	var body []byte
	switch v := req.GetRawArguments().(type) {
	case json.RawMessage:
		body = v
	case nil:
	default:
		b, err := json.Marshal(v)
		if err != nil {
			a.problems = append(a.problems, "the arguments are not JSON")
			return a
		}
		body = b
	}
	if len(bytes.TrimSpace(body)) > 0 && !bytes.Equal(bytes.TrimSpace(body), []byte("null")) {
		if err := json.Unmarshal(body, &a.raw); err != nil {
			a.problems = append(a.problems, "the arguments must be a JSON object")
			return a
		}
	}
	var unknown []string
	for k, v := range a.raw {
		if string(v) == "null" {
			delete(a.raw, k)
			continue
		}
		if !slices.Contains(accepted, k) {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	for _, k := range unknown {
		a.problems = append(a.problems, fmt.Sprintf("unknown argument %q (accepted: %s)", k, strings.Join(accepted, ", ")))
	}
	for _, name := range refArgs {
		a.normalizeRef(name)
	}
	return a
}

// fieldNames are msg's fields, in declaration order: the arguments of a
// tool that takes a request message whole.
func fieldNames(msg proto.Message) []string {
	fields := msg.ProtoReflect().Descriptor().Fields()
	names := make([]string, 0, fields.Len())
	for i := range fields.Len() {
		// A field with an explicit json_name is called that on the JSON
		// surfaces (wake_at_text is wake_at, beside the deprecated
		// Timestamp of that name): one argument, listed once.
		f := fields.Get(i)
		name := string(f.Name())
		if f.JSONName() != defaultJSONName(name) {
			name = f.JSONName()
		}
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return names
}

// has reports whether the argument was given.
func (a *args) has(name string) bool {
	_, ok := a.raw[name]
	return ok
}

// into decodes the arguments among names that are fields of msg into msg
// (merged into what msg holds). Arguments the call accepted but msg
// has no field for (an action that does not read them) are left alone.
func (a *args) into(msg proto.Message, names ...string) {
	fields := msg.ProtoReflect().Descriptor().Fields()
	picked := map[string]json.RawMessage{}
	for _, n := range names {
		if v, ok := a.raw[n]; ok && fields.ByName(protoreflect.Name(n)) != nil {
			picked[n] = v
		}
	}
	body, err := json.Marshal(picked)
	if err != nil {
		a.problems = append(a.problems, "the arguments are not JSON")
		return
	}
	decoded := msg.ProtoReflect().New().Interface()
	if err := protojson.Unmarshal(body, decoded); err != nil {
		// Find which arguments protojson refused, one at a time, in the
		// message's order.
		for i := range fields.Len() {
			fd := fields.Get(i)
			v, ok := picked[string(fd.Name())]
			if !ok {
				continue
			}
			one, _ := json.Marshal(map[string]json.RawMessage{string(fd.Name()): v})
			if protojson.Unmarshal(one, msg.ProtoReflect().New().Interface()) != nil {
				a.problems = append(a.problems, refusal(fd, v))
			}
		}
		return
	}
	proto.Merge(msg, decoded)
	for name, bounds := range argBounds {
		fd := fields.ByName(protoreflect.Name(name))
		if v, ok := picked[name]; ok && fd != nil {
			if n := msg.ProtoReflect().Get(fd).Int(); n < bounds[0] || n > bounds[1] {
				a.problems = append(a.problems, outOfRange(name, bounds[0], bounds[1], v))
			}
		}
	}
}

// refusal says what an argument protojson refused should have been.
func refusal(fd protoreflect.FieldDescriptor, v json.RawMessage) string {
	name := string(fd.Name())
	switch {
	case fd.IsList():
		return fmt.Sprintf("%s must be a list", name)
	case fd.Kind() == protoreflect.StringKind:
		return name + " must be a string"
	case fd.Kind() == protoreflect.BoolKind:
		return name + " must be true or false"
	case fd.Kind() == protoreflect.Int32Kind:
		lo, hi := int64(math.MinInt32), int64(math.MaxInt32)
		if b, ok := argBounds[name]; ok {
			lo, hi = b[0], b[1]
		}
		return outOfRange(name, lo, hi, v)
	case fd.Kind() == protoreflect.Int64Kind:
		return outOfRange(name, math.MinInt64, math.MaxInt64, v)
	case fd.Message() != nil && fd.Message().FullName() == "google.protobuf.Struct":
		return name + " must be a JSON object"
	case fd.Message() != nil && fd.Message().FullName() == "google.protobuf.Timestamp":
		return fmt.Sprintf("%s must be an RFC 3339 time such as \"2026-01-02T15:04:05Z\", got %s", name, v)
	default:
		return fmt.Sprintf("%s is not a valid %s", name, fd.Kind())
	}
}

func outOfRange(name string, lo, hi int64, v json.RawMessage) string {
	return fmt.Sprintf("%s must be an integer between %d and %d, got %s", name, lo, hi, v)
}

// normalizeRef rewrites the session reference(s) in argument name as the
// strings the protos take: a slug trimmed, an id given as a number as its
// digits.
func (a *args) normalizeRef(name string) {
	v, ok := a.raw[name]
	if !ok {
		return
	}
	if name == "session_ids" {
		var list []json.RawMessage
		if json.Unmarshal(v, &list) != nil {
			return // not a list: decoding says so
		}
		refs := make([]string, 0, len(list))
		for _, e := range list {
			ref, ok := sessionref.Parse(e)
			if ok && strings.ContainsRune(ref, 0) {
				a.problems = append(a.problems, "session_ids contains a NUL character, which no id or slug holds; remove it")
				return
			}
			if !ok {
				a.problems = append(a.problems, fmt.Sprintf("session_ids must be ids or slugs, got %s", e))
				return
			}
			refs = append(refs, ref)
		}
		a.raw[name], _ = json.Marshal(refs)
		return
	}
	ref, ok := sessionref.Parse(v)
	if ok && strings.ContainsRune(ref, 0) {
		a.problems = append(a.problems, name+" contains a NUL character, which no id or slug holds; remove it")
		delete(a.raw, name)
		return
	}
	if !ok {
		if sessionref.IsNumber(v) {
			a.problems = append(a.problems, outOfRange(name, 1, math.MaxInt64, v))
		} else {
			a.problems = append(a.problems, name+" must be a numeric id or a slug")
		}
		delete(a.raw, name)
		return
	}
	a.raw[name], _ = json.Marshal(ref)
}

// flag reads a boolean the gateway itself handles (no request message has
// it).
func (a *args) flag(name string) bool {
	v, ok := a.raw[name]
	if !ok {
		return false
	}
	var b bool
	if json.Unmarshal(v, &b) != nil {
		a.problems = append(a.problems, name+" must be true or false")
	}
	return b
}

// word reads a string the gateway itself handles, "" when absent; anything
// else is reported as its JSON.
func (a *args) word(name string) string {
	v, ok := a.raw[name]
	if !ok {
		return ""
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return string(v)
	}
	return s
}

// problem is the tool error for the collected problems, nil without any.
func (a *args) problem() *mcpgo.CallToolResult {
	if len(a.problems) == 0 {
		return nil
	}
	return mcpgo.NewToolResultError("invalid arguments: " + strings.Join(a.problems, "; "))
}

// defaultJSONName is protoc's JSON name for a field without json_name:
// lowerCamelCase of its name (session_id → sessionId).
func defaultJSONName(name string) string {
	var b strings.Builder
	upper := false
	for _, r := range name {
		switch {
		case r == '_':
			upper = true
		case upper:
			b.WriteString(strings.ToUpper(string(r)))
			upper = false
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
