package domain

import (
	"strings"
	"unicode"
)

// Untrusted text — message content, session titles, roster notes and names
// — is interpolated into blocks an agent reads as structure. The rules
// below make sure such text can never change that structure:
//
//   - '<' and '>' (and their full-width, small and CJK look-alikes) become
//     '‹' and '›', so no text can close (or open) a block such as
//     </human-messages>, whatever its spelling or case;
//   - every line break Unicode knows (\r, \n, \v, \f, U+0085, U+2028,
//     U+2029) is a line break, so none can hide from the rule below;
//   - inline text has no line breaks at all, and every line of multi-line
//     text is indented behind a quote prefix, so no text can start a line
//     and open a bullet, a heading or a forged "[here]" entry;
//   - control and format characters (zero-width, bidirectional overrides)
//     are dropped, so what the agent reads is what the operator sees;
//   - invalid UTF-8 becomes U+FFFD.
//
// The renderers put every structural line at the start of a line and every
// untrusted line behind QuotePrefix; FuzzSanitize checks both rules.

// QuotePrefix starts every line of multi-line untrusted text.
const QuotePrefix = "  > "

// SanitizeInline returns s as one line of plain text: line breaks and runs
// of white space become single spaces, markup brackets are neutralised.
func SanitizeInline(s string) string {
	return strings.Join(strings.Fields(strings.Join(sanitizedLines(s), " ")), " ")
}

// SanitizeLines returns s as lines of plain text with the markup brackets
// neutralised; trailing white space of each line is dropped.
func SanitizeLines(s string) []string {
	lines := sanitizedLines(s)
	for i, l := range lines {
		lines[i] = strings.TrimRightFunc(l, unicode.IsSpace)
	}
	return lines
}

// Quote renders s as lines each starting with prefix (normally
// QuotePrefix), ending in a newline.
func Quote(s, prefix string) string {
	var b strings.Builder
	for _, l := range SanitizeLines(s) {
		b.WriteString(strings.TrimRight(prefix+l, " "))
		b.WriteByte('\n')
	}
	return b.String()
}

func sanitizedLines(s string) []string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var lines []string
	var b strings.Builder
	runes := []rune(s)
	for i := 0; i < len(runes); i++ {
		r := runes[i]
		switch {
		case r == '\r' && i+1 < len(runes) && runes[i+1] == '\n':
			continue // CRLF is one break
		case isLineBreak(r):
			lines = append(lines, b.String())
			b.Reset()
		case r == '<', r == '\uFF1C', r == '\uFE64', r == '\u2329', r == '\u3008':
			b.WriteRune('‹')
		case r == '>', r == '\uFF1E', r == '\uFE65', r == '\u232A', r == '\u3009':
			b.WriteRune('›')
		case r == '\t':
			b.WriteByte(' ')
		case unicode.IsControl(r), unicode.Is(unicode.Cf, r):
			// dropped: invisible, or able to reorder what is displayed
		default:
			b.WriteRune(r)
		}
	}
	return append(lines, b.String())
}

func isLineBreak(r rune) bool {
	switch r {
	case '\n', '\r', '\v', '\f', '\u0085', '\u2028', '\u2029':
		return true
	}
	return false
}
