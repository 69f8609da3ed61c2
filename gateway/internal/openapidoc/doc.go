// Package openapidoc finishes, at `make proto` time, the OpenAPI (Swagger
// 2.0) document protoc-gen-openapiv2 generates from the protos' HTTP
// annotations into the contract the gateway keeps, so the gateway serves
// the committed bytes as they are:
//
//   - 64-bit integers are integers: the gateway's JSON (wirejson) sends
//     them as numbers, not protojson's strings;
//   - enum values are the words wirejson sends and reads ("delivered",
//     not FOLLOW_UP_OUTCOME_DELIVERED);
//   - errors are the gateway's {"error": kind, "message": ..., "messages":
//     [...]} (jsonhttp.Error), not a google.rpc.Status;
//   - a create answers 201, a delete 204 with no body, and a follow-up 200
//     when delivered or 202 when queued (rest.Successes);
//   - GET /api/v1/sessions/{session_id} answers the session composed with
//     its queued messages and its provenance (rest.SessionDetailJSON), not
//     GetSessionResponse;
//   - the lifecycle rules (services/lifecycle/rules) give the state
//     machine's events, the status words and the field limits as schema
//     keywords and sentences;
//   - a field with an explicit json_name is documented under it (the
//     gateway decodes bodies by it), in place of a deprecated field of
//     that name it supersedes (wake_at_text is wake_at).
//
// Finish is idempotent: finishing a finished document changes nothing.
package openapidoc

import (
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/zimmerhq/zimmer/gateway/internal/jsonhttp"
	"github.com/zimmerhq/zimmer/gateway/internal/rest"
	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	notificationv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/notification/v1"
	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"
	runnerv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/runner/v1"
)

// Finish returns raw, the generated document, finished.
func Finish(raw []byte) ([]byte, error) {
	v, err := parse(raw)
	if err != nil {
		return nil, fmt.Errorf("read the OpenAPI document: %w", err)
	}
	root, ok := v.(*object)
	if !ok || root.obj("paths") == nil || root.obj("definitions") == nil {
		return nil, fmt.Errorf("not an OpenAPI 2.0 document with paths and definitions")
	}
	d := &document{root: root, paths: root.obj("paths"), defs: root.obj("definitions")}
	for _, step := range []func() error{d.integers, d.enums, d.errorResponses, d.successStatuses, d.sessionDetail, d.rules, d.jsonNames} {
		if err := step(); err != nil {
			return nil, fmt.Errorf("finish the OpenAPI document: %w", err)
		}
	}
	d.prune()
	return encode(root)
}

type document struct {
	root, paths, defs *object
}

// operations calls visit with every operation, its path and its method.
func (d *document) operations(visit func(path, method string, op *object) error) error {
	for _, path := range d.paths.keys {
		item := d.paths.obj(path)
		for _, method := range item.keys {
			if err := visit(path, method, item.obj(method)); err != nil {
				return err
			}
		}
	}
	return nil
}

// operation returns the operation at path and method, or an error naming
// it: a route the finishing relies on that the protos no longer have.
func (d *document) operation(path, method string) (*object, error) {
	if op := d.paths.obj(path).obj(method); op != nil {
		return op, nil
	}
	return nil, fmt.Errorf("no operation %s %s in the generated document", strings.ToUpper(method), path)
}

// integers describes 64-bit integers as the gateway sends them: numbers.
func (d *document) integers() error {
	walk(d.root, func(o *object) {
		if o.str("type") == "string" && (o.str("format") == "int64" || o.str("format") == "uint64") {
			o.set("type", "integer")
		}
	})
	return nil
}

// errorResponses documents every failure as the gateway writes it.
func (d *document) errorResponses() error {
	ref, err := d.define(reflect.TypeFor[jsonhttp.Error]())
	if err != nil {
		return err
	}
	return d.operations(func(_, _ string, op *object) error {
		op.obj("responses").set("default", newObject().
			set("description", "The request failed: error names the kind of failure, message says what was wrong and what to do, "+
				"messages lists each problem. A body that is not JSON or a parameter that cannot be read is 400; a field the route "+
				"does not take or a value of the wrong type (Validation failed, naming the field), a request a rule "+
				"refuses (Validation failed) or the session's state refuses (Cannot trash, Cannot restore, ...) is 422.").
			set("schema", ref))
		return nil
	})
}

// successStatuses documents the statuses rest.SuccessStatus answers other
// than a plain 200 (rest.Successes): each in place of the generated 200,
// with its meaning, and with the response body unless it is a 204.
func (d *document) successStatuses() error {
	return d.operations(func(path, method string, op *object) error {
		md, err := methodOf(op.str("operationId"))
		if err != nil {
			return fmt.Errorf("%s %s: %w", strings.ToUpper(method), path, err)
		}
		successes := rest.Successes(md.Output().FullName())
		responses := op.obj("responses")
		generated := responses.obj("200")
		if len(successes) == 0 || generated == nil {
			return nil // a plain 200, or finished before
		}
		finished := newObject()
		for _, key := range responses.keys {
			if key != "200" {
				finished.set(key, responses.get(key))
				continue
			}
			for _, s := range successes {
				r := newObject().set("description", generated.str("description"))
				if s.Description != "" {
					r.set("description", s.Description)
				}
				if schema := generated.get("schema"); schema != nil && s.Status != http.StatusNoContent {
					r.set("schema", schema)
				}
				finished.set(fmt.Sprint(s.Status), r)
			}
		}
		op.set("responses", finished)
		return nil
	})
}

// jsonNames documents each property whose proto field has an explicit
// json_name under that name, replacing the property of that name (the
// deprecated field it supersedes), in the superseded one's place.
func (d *document) jsonNames() error {
	renamed := customJSONNames()
	for _, name := range d.defs.keys {
		props := d.defs.obj(name).obj("properties")
		if props == nil {
			continue
		}
		for _, key := range slices.Clone(props.keys) {
			jsonName, ok := renamed[key]
			if !ok {
				continue
			}
			v := props.get(key)
			props.remove(key)
			props.set(jsonName, v)
		}
	}
	return nil
}

// customJSONNames maps the proto name of every zimmer field with an
// explicit json_name (one that is not protoc's lowerCamelCase) to it.
func customJSONNames() map[string]string {
	_, _ = methodOf("LifecycleService_GetSession") // the files are registered
	out := map[string]string{}
	protoregistry.GlobalFiles.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		if strings.HasPrefix(string(fd.Package()), "zimmer.") {
			for i := range fd.Messages().Len() {
				fields := fd.Messages().Get(i).Fields()
				for j := range fields.Len() {
					f := fields.Get(j)
					if f.JSONName() != lowerCamel(string(f.Name())) {
						out[string(f.Name())] = f.JSONName()
					}
				}
			}
		}
		return true
	})
	return out
}

// lowerCamel is protoc's JSON name of a field without json_name.
func lowerCamel(name string) string {
	parts := strings.Split(name, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

// methodOf finds the RPC an operation id ("LifecycleService_GetSession")
// names among the zimmer services.
func methodOf(operationID string) (protoreflect.MethodDescriptor, error) {
	// The REST routes' services are registered.
	_ = lifecyclev1.File_zimmer_lifecycle_v1_lifecycle_service_proto
	_ = runnerv1.File_zimmer_runner_v1_runner_service_proto
	_ = queuev1.File_zimmer_queue_v1_queue_service_proto
	_ = notificationv1.File_zimmer_notification_v1_notification_service_proto
	service, method, ok := strings.Cut(operationID, "_")
	if !ok {
		return nil, fmt.Errorf("operation id %q is not Service_Method", operationID)
	}
	var found protoreflect.MethodDescriptor
	protoregistry.GlobalFiles.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		if !strings.HasPrefix(string(fd.Package()), "zimmer.") {
			return true
		}
		if sd := fd.Services().ByName(protoreflect.Name(service)); sd != nil {
			found = sd.Methods().ByName(protoreflect.Name(method))
		}
		return found == nil
	})
	if found == nil {
		return nil, fmt.Errorf("no RPC %s.%s in the zimmer protos", service, method)
	}
	return found, nil
}

// prune drops the definitions nothing refers to any more (google.rpc.Status
// and protobuf.Any, once errors are the gateway's own).
func (d *document) prune() {
	for {
		used := map[string]bool{}
		walk(d.paths, func(o *object) { used[o.str("$ref")] = true })
		for _, name := range d.defs.keys {
			walk(d.defs.obj(name), func(o *object) { used[o.str("$ref")] = true })
		}
		removed := false
		for _, name := range append([]string(nil), d.defs.keys...) {
			if !used[definitionRef(name)] {
				d.defs.remove(name)
				removed = true
			}
		}
		if !removed {
			return
		}
	}
}

func definitionRef(name string) string { return "#/definitions/" + name }
