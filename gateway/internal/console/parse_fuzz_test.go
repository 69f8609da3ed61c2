package console

import (
	"errors"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// FuzzPositiveNumber: whatever a form or path holds, the console reads a
// positive number or refuses it as a form error naming the field; never a
// panic, never zero or a negative id sent on.
func FuzzPositiveNumber(f *testing.F) {
	for _, s := range []string{"1", "42", " 7 ", "0", "-3", "first", "", "9223372036854775808", "2147483648", "1e3", "０１"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, bits := range []int{32, 64} {
			n, err := positiveNumber("position", text, bits)
			if err != nil {
				var bad formError
				if !errors.As(err, &bad) || !strings.HasPrefix(bad.Error(), "position: ") {
					t.Fatalf("positiveNumber(%q) = %v: want a form error naming the field", text, err)
				}
				continue
			}
			if n < 1 || (bits == 32 && n > 1<<31-1) {
				t.Fatalf("positiveNumber(%q, %d) = %d", text, bits, n)
			}
			if strconv.FormatInt(n, 10) != strings.TrimLeft(strings.TrimSpace(text), "+0") {
				t.Fatalf("positiveNumber(%q) = %d, not the number written", text, n)
			}
		}
	})
}

// FuzzStreamCursor: a reconnect's Last-Event-ID or the page's ?after is a
// line id (≥ 0) or a 400, never a panic or a negative cursor.
func FuzzStreamCursor(f *testing.F) {
	for _, s := range []string{"", "0", "12", "-1", "abc", "99999999999999999999"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, header, after string) {
		r := httptest.NewRequest("GET", "/console/sessions/7/transcript/stream", nil)
		q := r.URL.Query()
		q.Set("after", after)
		r.URL.RawQuery = q.Encode()
		if strings.ContainsAny(header, "\r\n\x00") {
			return // not a header value a client can send
		}
		r.Header.Set("Last-Event-ID", header)
		n, err := streamCursor(r)
		if err == nil && n < 0 {
			t.Fatalf("streamCursor(%q, %q) = %d", header, after, n)
		}
	})
}
