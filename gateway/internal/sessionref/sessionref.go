// Package sessionref reads session references as REST and MCP callers send
// them: a slug, or an id as a string or as a JSON number. The protos take
// every reference as a string (the lifecycle service resolves it), so a
// number is written as its digits.
package sessionref

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// Parse reads one reference: a string (trimmed) or a positive whole
// number. ok is false for anything else (a number below 1, a fraction, an
// object, ...).
func Parse(v json.RawMessage) (ref string, ok bool) {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return strings.TrimSpace(s), true
	}
	if !IsNumber(v) {
		return "", false
	}
	if n, err := strconv.ParseInt(string(v), 10, 64); err == nil {
		return strconv.FormatInt(n, 10), n >= 1
	}
	f, err := strconv.ParseFloat(string(v), 64)
	// float64(MaxInt64) rounds up to 2^63, hence <.
	if err != nil || f != math.Trunc(f) || f < 1 || f >= math.MaxInt64 {
		return "", false
	}
	return strconv.FormatInt(int64(f), 10), true
}

// IsNumber reports whether v is a JSON number (not a string of digits).
func IsNumber(v json.RawMessage) bool {
	var n json.Number
	return len(v) > 0 && (v[0] == '-' || v[0] >= '0' && v[0] <= '9') && json.Unmarshal(v, &n) == nil
}

// NumbersAsStrings rewrites, in a JSON object body, the lists named by
// fields whose elements are references so that an id sent as a number
// reaches protojson as the string the proto field takes. A body that is
// not an object, a field that is not a list, and an element that is no
// reference are left as they are, for the decoder to report.
func NumbersAsStrings(body []byte, fields ...string) []byte {
	var obj map[string]json.RawMessage
	if json.Unmarshal(body, &obj) != nil {
		return body
	}
	changed := false
	for _, field := range fields {
		var list []json.RawMessage
		if json.Unmarshal(obj[field], &list) != nil {
			continue
		}
		for i, e := range list {
			if !IsNumber(e) {
				continue
			}
			if ref, ok := Parse(e); ok {
				list[i], _ = json.Marshal(ref)
				changed = true
			}
		}
		obj[field], _ = json.Marshal(list)
	}
	if !changed {
		return body
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return body
	}
	return out
}
