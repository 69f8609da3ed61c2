package openapidoc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
)

// object is a JSON object that keeps its keys in order, so the finished
// document reads in the generator's order (paths, then fields in
// declaration order) and a change to a proto shows as a small diff. Values
// are *object, []any, string, json.Number, bool or nil.
type object struct {
	keys []string
	vals map[string]any
}

func newObject() *object { return &object{vals: map[string]any{}} }

// get returns the value of key, nil when absent.
func (o *object) get(key string) any { return o.vals[key] }

// obj returns the object at key, nil when absent or not an object.
func (o *object) obj(key string) *object {
	v, _ := o.vals[key].(*object)
	return v
}

// str returns the string at key, "" when absent or not a string.
func (o *object) str(key string) string {
	v, _ := o.vals[key].(string)
	return v
}

// set sets key, appending it when new and keeping its place otherwise.
func (o *object) set(key string, v any) *object {
	if _, ok := o.vals[key]; !ok {
		o.keys = append(o.keys, key)
	}
	o.vals[key] = v
	return o
}

// remove deletes key.
func (o *object) remove(key string) {
	if _, ok := o.vals[key]; !ok {
		return
	}
	delete(o.vals, key)
	o.keys = slices.DeleteFunc(o.keys, func(k string) bool { return k == key })
}

// parse reads a JSON document into objects, arrays and scalars.
func parse(doc []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	v, err := parseValue(dec)
	if err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after the document")
	}
	return v, nil
}

func parseValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		o := newObject()
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return nil, err
			}
			v, err := parseValue(dec)
			if err != nil {
				return nil, err
			}
			o.set(k.(string), v) // object keys are always strings
		}
		_, err := dec.Token() // '}'
		return o, err
	case json.Delim('['):
		a := []any{}
		for dec.More() {
			v, err := parseValue(dec)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err := dec.Token() // ']'
		return a, err
	default:
		return tok, nil
	}
}

// encode writes v as indented JSON, strings unescaped for HTML (a document
// for people and tools, not for embedding in a page).
func encode(v any) ([]byte, error) {
	var compact bytes.Buffer
	if err := write(&compact, v); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, compact.Bytes(), "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

func write(b *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case *object:
		b.WriteByte('{')
		for i, k := range x.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := write(b, k); err != nil {
				return err
			}
			b.WriteByte(':')
			if err := write(b, x.vals[k]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := write(b, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case []string:
		return write(b, toAny(x))
	default:
		enc := json.NewEncoder(b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(x); err != nil {
			return err
		}
		b.Truncate(b.Len() - 1) // Encode's newline
	}
	return nil
}

func toAny[T any](xs []T) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

// walk calls visit with every object in v, depth first, parents first.
func walk(v any, visit func(*object)) {
	switch x := v.(type) {
	case *object:
		visit(x)
		for _, k := range x.keys {
			walk(x.vals[k], visit)
		}
	case []any:
		for _, e := range x {
			walk(e, visit)
		}
	}
}
