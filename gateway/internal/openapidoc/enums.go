package openapidoc

import (
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/zimmerhq/zimmer/gateway/internal/wirejson"
)

// enums documents every enum of the API as the gateway sends and reads
// it: the values' words (wirejson.EnumWord), in the allowed values and in
// the generated description's list of them.
func (d *document) enums() error {
	words := enumWords()
	walk(d.root, func(o *object) {
		values, ok := o.get("enum").([]any)
		if !ok {
			return
		}
		desc := o.str("description")
		for i, v := range values {
			name, _ := v.(string)
			word, ok := words[name]
			if !ok {
				continue
			}
			values[i] = word
			desc = strings.ReplaceAll(desc, "- "+name+":", "- "+word+":")
		}
		if desc != "" {
			o.set("description", desc)
		}
	})
	return nil
}

// enumWords are the words of the values of the API's enums (the zimmer.*
// packages), by value name; buf's ENUM_VALUE_PREFIX rule makes the names
// unique across them. The zero values have no word.
func enumWords() map[string]string {
	words := map[string]string{}
	var add func(enums protoreflect.EnumDescriptors, messages protoreflect.MessageDescriptors)
	add = func(enums protoreflect.EnumDescriptors, messages protoreflect.MessageDescriptors) {
		for i := range enums.Len() {
			values := enums.Get(i).Values()
			for j := range values.Len() {
				if w := wirejson.EnumWord(values.Get(j)); w != "" {
					words[string(values.Get(j).Name())] = w
				}
			}
		}
		for i := range messages.Len() {
			add(messages.Get(i).Enums(), messages.Get(i).Messages())
		}
	}
	protoregistry.GlobalFiles.RangeFiles(func(f protoreflect.FileDescriptor) bool {
		if strings.HasPrefix(string(f.Package()), "zimmer.") {
			add(f.Enums(), f.Messages())
		}
		return true
	})
	return words
}
