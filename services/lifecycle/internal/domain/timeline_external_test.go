package domain_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

func TestExternalTimelineLineValidate(t *testing.T) {
	t.Parallel()
	note := func(msg string) domain.TimelineEntry {
		return domain.TimelineEntry{Kind: domain.TimelineNote, Message: msg}
	}
	tests := []struct {
		name   string
		line   domain.ExternalTimelineLine
		fields []string
	}{
		{"a note", domain.ExternalTimelineLine{SessionID: 1, Entry: note("[Lineage] x")}, nil},
		{"a warning", domain.ExternalTimelineLine{SessionID: 1, Entry: domain.TimelineEntry{Kind: domain.TimelineWarning, Message: "w"}}, nil},
		{"no session", domain.ExternalTimelineLine{Entry: note("x")}, []string{"session_id"}},
		{"a forged transition", domain.ExternalTimelineLine{SessionID: 1, Entry: domain.TimelineEntry{Kind: domain.TimelineTransition, Message: "x"}}, []string{"kind"}},
		{"a forged refusal", domain.ExternalTimelineLine{SessionID: 1, Entry: domain.TimelineEntry{Kind: domain.TimelineRefusal, Message: "x"}}, []string{"kind"}},
		{"no kind", domain.ExternalTimelineLine{SessionID: 1, Entry: domain.TimelineEntry{Message: "x"}}, []string{"kind"}},
		{"blank", domain.ExternalTimelineLine{SessionID: 1, Entry: note(" \n")}, []string{"message"}},
		{"NUL", domain.ExternalTimelineLine{SessionID: 1, Entry: note("a\x00b")}, []string{"message"}},
		{"invalid UTF-8", domain.ExternalTimelineLine{SessionID: 1, Entry: note("a\xffb")}, []string{"message"}},
		{"too long", domain.ExternalTimelineLine{SessionID: 1, Entry: note(strings.Repeat("é", domain.MaxExternalTimelineLineChars+1))}, []string{"message"}},
		{"at the limit", domain.ExternalTimelineLine{SessionID: 1, Entry: note(strings.Repeat("é", domain.MaxExternalTimelineLineChars))}, nil},
		{"everything wrong", domain.ExternalTimelineLine{Entry: domain.TimelineEntry{Kind: "x"}}, []string{"session_id", "kind", "message"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.line.Validate()
			if tt.fields == nil {
				require.NoError(t, err)
				return
			}
			var ve *validation.Error
			require.ErrorAs(t, err, &ve)
			var got []string
			for _, v := range ve.Violations {
				got = append(got, v.Field)
			}
			require.Equal(t, tt.fields, got)
		})
	}
}
