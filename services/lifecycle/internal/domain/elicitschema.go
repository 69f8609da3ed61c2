package domain

import (
	"errors"
	"fmt"
	"math"
	"net/mail"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// An elicitation's requested schema is MCP's restricted JSON Schema: an
// object whose properties are primitives — string (minLength, maxLength,
// format email, uri, date or date-time), string with enum, number or
// integer (minimum, maximum), boolean — with a required list. Keywords
// beyond those (title, description, default, enumNames) only describe.

// CheckElicitationSchema reports what makes schema something no answer can
// be checked against, or nil.
func CheckElicitationSchema(schema map[string]any) error {
	if t, ok := schema["type"]; ok && t != "object" {
		return fmt.Errorf(`must be an object schema ("type": "object"), got type %v`, t)
	}
	props, err := schemaProperties(schema)
	if err != nil {
		return err
	}
	for _, name := range sortedKeys(props) {
		def, ok := props[name].(map[string]any)
		if !ok {
			return fmt.Errorf("property %q must be a schema object", name)
		}
		switch t := def["type"]; t {
		case "string", "number", "integer", "boolean":
		default:
			return fmt.Errorf("property %q must be of type string, number, integer or boolean (MCP elicitations ask for flat answers), got %v", name, t)
		}
	}
	if _, err := requiredNames(schema); err != nil {
		return err
	}
	return nil
}

// CheckElicitationContent checks content against schema, naming each
// property that does not match as content.<name>. A nil schema takes any
// object.
func CheckElicitationContent(schema map[string]any, content map[string]any) error {
	if content == nil {
		return validation.Invalid("content", "is required with accept: an object matching the elicitation's requested_schema")
	}
	if schema == nil {
		return nil
	}
	props, err := schemaProperties(schema)
	if err != nil {
		return validation.Invalid("content", "cannot be checked: the elicitation's requested_schema is unusable (%v); decline or cancel it", err)
	}
	required, err := requiredNames(schema)
	if err != nil {
		return validation.Invalid("content", "cannot be checked: the elicitation's requested_schema is unusable (%v); decline or cancel it", err)
	}
	var vs validation.Violations
	for _, name := range required {
		if _, ok := content[name]; !ok {
			vs.Add("content."+name, "is required by the elicitation's requested_schema")
		}
	}
	for _, name := range sortedKeys(content) {
		def, ok := props[name].(map[string]any)
		if !ok {
			vs.Add("content."+name, "is not a property of the elicitation's requested_schema (it has: %s)", strings.Join(sortedKeys(props), ", "))
			continue
		}
		if reason := checkPrimitive(def, content[name]); reason != "" {
			vs.Add("content."+name, "%s", reason)
		}
	}
	return vs.Err()
}

func schemaProperties(schema map[string]any) (map[string]any, error) {
	raw, ok := schema["properties"]
	if !ok || raw == nil {
		return map[string]any{}, nil
	}
	props, ok := raw.(map[string]any)
	if !ok {
		return nil, errors.New(`"properties" must be an object`)
	}
	return props, nil
}

func requiredNames(schema map[string]any) ([]string, error) {
	raw, ok := schema["required"]
	if !ok || raw == nil {
		return nil, nil
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, errors.New(`"required" must be a list of property names`)
	}
	names := make([]string, 0, len(list))
	for _, v := range list {
		name, ok := v.(string)
		if !ok {
			return nil, errors.New(`"required" must be a list of property names`)
		}
		names = append(names, name)
	}
	return names, nil
}

// checkPrimitive says what is wrong with v against the property schema
// def, or "".
func checkPrimitive(def map[string]any, v any) string {
	switch def["type"] {
	case "string":
		s, ok := v.(string)
		if !ok {
			return "must be a string, got " + jsonKind(v)
		}
		return checkString(def, s)
	case "number", "integer":
		n, ok := v.(float64)
		if !ok {
			return "must be a number, got " + jsonKind(v)
		}
		if def["type"] == "integer" && n != math.Trunc(n) {
			return fmt.Sprintf("must be an integer, got %v", n)
		}
		if lo, ok := def["minimum"].(float64); ok && n < lo {
			return fmt.Sprintf("must be at least %v, got %v", lo, n)
		}
		if hi, ok := def["maximum"].(float64); ok && n > hi {
			return fmt.Sprintf("must be at most %v, got %v", hi, n)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return "must be true or false, got " + jsonKind(v)
		}
	default:
		return fmt.Sprintf("cannot be answered: the requested_schema gives it type %v", def["type"])
	}
	return ""
}

func checkString(def map[string]any, s string) string {
	if enum, ok := def["enum"].([]any); ok {
		if !slices.Contains(enum, any(s)) {
			options := make([]string, 0, len(enum))
			for _, o := range enum {
				options = append(options, fmt.Sprintf("%q", o))
			}
			return fmt.Sprintf("must be one of %s, got %q", strings.Join(options, ", "), s)
		}
	}
	n := float64(utf8.RuneCountInString(s))
	if lo, ok := def["minLength"].(float64); ok && n < lo {
		return fmt.Sprintf("must be at least %v characters, got %v", lo, n)
	}
	if hi, ok := def["maxLength"].(float64); ok && n > hi {
		return fmt.Sprintf("must be at most %v characters, got %v", hi, n)
	}
	switch def["format"] {
	case "email":
		if a, err := mail.ParseAddress(s); err != nil || a.Address != s {
			return fmt.Sprintf("must be an email address like name@example.com, got %q", s)
		}
	case "uri":
		if u, err := url.Parse(s); err != nil || u.Scheme == "" {
			return fmt.Sprintf("must be an absolute URI like https://example.com/x, got %q", s)
		}
	case "date":
		if _, err := time.Parse(time.DateOnly, s); err != nil {
			return fmt.Sprintf("must be a date like 2030-04-15, got %q", s)
		}
	case "date-time":
		if _, err := time.Parse(time.RFC3339, s); err != nil {
			return fmt.Sprintf("must be an RFC 3339 date-time like 2030-04-15T09:30:00Z, got %q", s)
		}
	}
	return ""
}

// jsonKind names v's JSON type, as decoded from JSON.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
