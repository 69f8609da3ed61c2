package wirejson

import (
	"strings"
	"unicode"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// EnumWord is the word every surface writes for v and reads as v: its name
// without its enum's prefix, in lower case, as the spec words it
// (FOLLOW_UP_OUTCOME_DELIVERED is "delivered"). buf's ENUM_VALUE_PREFIX
// rule guarantees the prefix on the API's enums; a value without it is its
// whole name in lower case. The zero value, …_UNSPECIFIED, says nothing
// was set: its word is "", which an answer writes as null.
func EnumWord(v protoreflect.EnumValueDescriptor) string {
	if v.Number() == 0 && strings.HasSuffix(string(v.Name()), "_UNSPECIFIED") {
		return ""
	}
	name := string(v.Name())
	if prefix := enumPrefix(v.Parent().(protoreflect.EnumDescriptor)); strings.HasPrefix(name, prefix) && len(name) > len(prefix) {
		name = name[len(prefix):]
	}
	return strings.ToLower(name)
}

// enumValueOf is the value of ed that s names: its word (EnumWord) or,
// as protojson reads it, its full name; nil for neither. The zero value
// has no word: a request that means it leaves the field out.
func enumValueOf(ed protoreflect.EnumDescriptor, s string) protoreflect.EnumValueDescriptor {
	values := ed.Values()
	if v := values.ByName(protoreflect.Name(s)); v != nil {
		return v
	}
	for i := range values.Len() {
		if w := EnumWord(values.Get(i)); w != "" && w == s {
			return values.Get(i)
		}
	}
	return nil
}

// enumPrefix is the prefix buf's ENUM_VALUE_PREFIX rule gives ed's value
// names: its name in upper snake case and an underscore (FollowUpOutcome:
// FOLLOW_UP_OUTCOME_).
func enumPrefix(ed protoreflect.EnumDescriptor) string {
	name := []rune(string(ed.Name()))
	var b strings.Builder
	for i, r := range name {
		if i > 0 && unicode.IsUpper(r) {
			prev := name[i-1]
			acronymEnds := unicode.IsUpper(prev) && i+1 < len(name) && unicode.IsLower(name[i+1])
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || acronymEnds {
				b.WriteByte('_')
			}
		}
		b.WriteRune(unicode.ToUpper(r))
	}
	b.WriteByte('_')
	return b.String()
}
