package domain

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// Limits on what a caller may send: rules' limits.
const (
	MaxPromptChars        = rules.MaxPromptChars
	MaxGoalChars          = rules.MaxGoalChars
	MaxNotesChars         = rules.MaxNotesChars
	MaxTitleChars         = rules.MaxTitleChars
	MaxSlugChars          = rules.MaxSlugChars
	MaxGitRootChars       = rules.MaxGitRootChars
	MaxBranchChars        = rules.MaxBranchChars
	MaxSubdirectoryChars  = rules.MaxSubdirectoryChars
	MaxAgentRootChars     = rules.MaxAgentRootChars
	MaxAgentRuntimeChars  = rules.MaxAgentRuntimeChars
	MaxFailureReasonChars = rules.MaxFailureReasonChars
	MaxPausedByChars      = rules.MaxPausedByChars
	// MaxAuthOutageReasonChars bounds a park's auth_outage_reason.
	MaxAuthOutageReasonChars = rules.MaxAuthOutageReasonChars
	MaxRunningJobIDChars     = rules.MaxRunningJobIDChars
	MaxDeliveryIDChars       = rules.MaxDeliveryIDChars
	MaxDeliveryWhatChars     = rules.MaxDeliveryWhatChars
	MaxIdempotencyKeyChars   = rules.MaxIdempotencyKeyChars
	MaxMetadataBytes         = rules.MaxMetadataBytes
	MaxMetadataDepth         = rules.MaxMetadataDepth
	MaxQueryChars            = rules.MaxQueryChars
	MaxGenesisChars          = rules.MaxGenesisChars
)

// textProblem and checkText are platform/validation's text rule, the same
// in every context.
func textProblem(v string) string { return validation.TextProblem(v) }

func checkText(vs *validation.Violations, field, v string, limit int, hint string) {
	vs.Text(field, v, limit, hint)
}

// checkPrompt is the rule for text that becomes a turn's prompt: it must
// carry content (platform/validation's Content: blank text is refused),
// required or, where "" means none (a session created to wait, a trigger's
// standard nudge), optional.
func checkPrompt(vs *validation.Violations, field, v string, required bool) {
	vs.Content(field, v, MaxPromptChars, required, "it is the turn's prompt", "shorten it or attach the detail as a file in the repository")
}

// checkMetadata records what is wrong with custom_metadata (as decoded from
// JSON: objects, arrays, strings, numbers, booleans and nulls): a key or
// string that is unstorable text, nesting deeper than MaxMetadataDepth, or
// an encoding larger than MaxMetadataBytes. It names the path to the first
// bad value so the caller can find it.
func checkMetadata(vs *validation.Violations, md map[string]any) {
	if md == nil {
		return
	}
	if p := metadataProblem(md, "", 1); p != "" {
		vs.Add("custom_metadata", "%s", p)
		return
	}
	if k := reservedMetadataKey(md); k != "" {
		vs.Add("custom_metadata", "key %s is Zimmer's own (keys starting %q mark its status-summary forks) and cannot be set or removed by a caller; choose another key",
			strconv.QuoteToASCII(cut(k, 40)), rules.StatusSummaryKeyPrefix)
		return
	}
	if n := metadataBytes(md); n > MaxMetadataBytes {
		vs.Add("custom_metadata", "is %d bytes as JSON; the limit is %d", n, MaxMetadataBytes)
	}
}

// metadataProblem walks v, which sits at path and nesting level depth, and
// returns the first problem found, or "". It stops at the depth limit, so a
// hostile value costs no more than a legal one to refuse.
func metadataProblem(v any, path string, depth int) string {
	at := func(p string) string {
		if path == "" {
			return p
		}
		return "at " + path + ": " + p
	}
	switch v := v.(type) {
	case map[string]any:
		if depth > MaxMetadataDepth {
			return at(fmt.Sprintf("nests deeper than %d levels of objects and arrays; flatten it", MaxMetadataDepth))
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys) // the same value always reports the same problem
		for _, k := range keys {
			if p := textProblem(k); p != "" {
				return at("key " + strconv.QuoteToASCII(cut(k, 40)) + " " + p)
			}
			if p := metadataProblem(v[k], join(path, k), depth+1); p != "" {
				return p
			}
		}
	case []any:
		if depth > MaxMetadataDepth {
			return at(fmt.Sprintf("nests deeper than %d levels of objects and arrays; flatten it", MaxMetadataDepth))
		}
		for i, e := range v {
			if p := metadataProblem(e, path+"["+strconv.Itoa(i)+"]", depth+1); p != "" {
				return p
			}
		}
	case string:
		if p := textProblem(v); p != "" {
			return at(p)
		}
	}
	return ""
}

// join names key k inside path: a.b.c, with long keys cut.
func join(path, k string) string {
	k = cut(k, 40)
	if path == "" {
		return k
	}
	return path + "." + k
}

// cut shortens s to at most n characters, marking the cut.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + rules.PreviewEllipsis
}

// metadataBytes is the size of md's JSON encoding, the form it is stored
// in. md has passed metadataProblem, so it encodes.
func metadataBytes(md map[string]any) int {
	b, err := json.Marshal(md)
	if err != nil {
		return MaxMetadataBytes + 1 // unencodable is never storable
	}
	return len(b)
}

// Preview is s cut to rules.ListPreviewChars characters, ending in
// rules.PreviewEllipsis when it was cut.
func Preview(s string) string {
	n := 0
	for i := range s {
		if n == rules.ListPreviewChars {
			return s[:i] + rules.PreviewEllipsis
		}
		n++
	}
	return s
}

// reservedMetadataKey is the first top-level key of md that Zimmer
// reserves for its status-summary forks (rules.StatusSummaryKeyPrefix), or
// "".
func reservedMetadataKey(md map[string]any) string {
	keys := make([]string, 0, len(md))
	for k := range md {
		if strings.HasPrefix(k, rules.StatusSummaryKeyPrefix) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return ""
	}
	sort.Strings(keys)
	return keys[0]
}
