package openapidoc

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/zimmerhq/zimmer/gateway/internal/rest"
)

// sessionDetail documents the route the gateway composes itself
// (rest.SessionDetailPattern) with the body it answers, in place of the
// generated route's GetSessionResponse.
func (d *document) sessionDetail() error {
	method, pattern, _ := strings.Cut(rest.SessionDetailPattern, " ")
	var op *object
	for _, path := range d.paths.keys {
		if samePath(path, pattern) {
			op = d.paths.obj(path).obj(strings.ToLower(method))
		}
	}
	if op == nil {
		return fmt.Errorf("no operation %s in the generated document", rest.SessionDetailPattern)
	}
	ref, err := d.define(reflect.TypeFor[rest.SessionDetailJSON]())
	if err != nil {
		return err
	}
	describe(op, "The gateway answers with the session and, beside it, the messages queued for it that are not delivered "+
		"(enqueued_messages, from the queue) and its provenance from lineage: session_hierarchy and human_messages, "+
		"which are null when lineage could not be asked.")
	op.obj("responses").set("200", newObject().
		set("description", "The session with its queued messages and its provenance, composed by the gateway from lifecycle, the queue and lineage.").
		set("schema", ref).
		set("headers", newObject().set(rest.DegradedHeader, newObject().
			set("type", "string").
			set("description", "Set, once per service, when a service of the composition could not be asked: for lineage, "+
				"session_hierarchy and human_messages are then null (unknown, not empty); for the queue, enqueued_messages is "+
				"then empty without meaning that nothing is queued."))))
	return nil
}

// samePath reports whether two route templates match segment by segment,
// a {parameter} matching any other parameter.
func samePath(a, b string) bool {
	as, bs := strings.Split(a, "/"), strings.Split(b, "/")
	if len(as) != len(bs) {
		return false
	}
	for i := range as {
		if isParam(as[i]) && isParam(bs[i]) {
			continue
		}
		if as[i] != bs[i] {
			return false
		}
	}
	return true
}

func isParam(segment string) bool {
	return strings.HasPrefix(segment, "{") && strings.HasSuffix(segment, "}")
}
