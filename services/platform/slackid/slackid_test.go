package slackid

import "testing"

func TestValid(t *testing.T) {
	t.Parallel()
	for id, want := range map[string]bool{
		"U012AB3CD": true, "C0123": true, "W1": true,
		"": false, "U": false, "u012ab3cd": false, "U012 AB": false, "<@U012>": false,
		"U0123456789012345678901234567890123": false,
	} {
		if got := Valid(id); got != want {
			t.Errorf("Valid(%q) = %v, want %v", id, got, want)
		}
	}
}
