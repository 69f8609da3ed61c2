package wirejson

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// OpenAPI adapts doc, the OpenAPI (Swagger 2.0) document protoc-gen-openapiv2
// generates, to what Marshal sends: it describes 64-bit integers as
// {"type": "string", "format": "int64"}, the gateway sends them as numbers,
// so each such schema becomes {"type": "integer", "format": "int64"}.
// Everything else, order included, is unchanged; the result is indented.
func OpenAPI(doc []byte) ([]byte, error) {
	var out bytes.Buffer
	if err := integerSchemas(&out, doc); err != nil {
		return nil, fmt.Errorf("adapt OpenAPI document: %w", err)
	}
	var indented bytes.Buffer
	if err := json.Indent(&indented, out.Bytes(), "", "  "); err != nil {
		return nil, fmt.Errorf("adapt OpenAPI document: %w", err)
	}
	return indented.Bytes(), nil
}

func integerSchemas(out *bytes.Buffer, raw json.RawMessage) error {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) > 0 && raw[0] == '{':
		members, err := parseObject(raw)
		if err != nil {
			return err
		}
		int64String := hasString(members, "type", "string") &&
			(hasString(members, "format", "int64") || hasString(members, "format", "uint64"))
		out.WriteByte('{')
		for i, m := range members {
			if i > 0 {
				out.WriteByte(',')
			}
			writeString(out, m.key)
			out.WriteByte(':')
			if int64String && m.key == "type" {
				out.WriteString(`"integer"`)
				continue
			}
			if err := integerSchemas(out, m.value); err != nil {
				return err
			}
		}
		out.WriteByte('}')
	case len(raw) > 0 && raw[0] == '[':
		elems, err := parseArray(raw)
		if err != nil {
			return err
		}
		out.WriteByte('[')
		for i, e := range elems {
			if i > 0 {
				out.WriteByte(',')
			}
			if err := integerSchemas(out, e); err != nil {
				return err
			}
		}
		out.WriteByte(']')
	default:
		out.Write(raw)
	}
	return nil
}

func hasString(members []member, key, want string) bool {
	for _, m := range members {
		if m.key == key {
			var s string
			return json.Unmarshal(m.value, &s) == nil && s == want
		}
	}
	return false
}

// The helpers below read small documents whole; OpenAPI runs once, at start-up.

type member struct {
	key   string
	value json.RawMessage
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

// writeString writes s as a JSON string without HTML escaping, as protojson
// does.
func writeString(out *bytes.Buffer, s string) {
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)           // a string always encodes
	out.Truncate(out.Len() - 1) // Encode's newline
}
