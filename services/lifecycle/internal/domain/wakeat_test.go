package domain_test

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
)

func TestParseWakeAt(t *testing.T) {
	t.Parallel()
	ny, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	tests := []struct {
		name, text, zone string
		want             time.Time
		wantZone         string
		field, reason    string
	}{
		{name: "naive, UTC by default", text: "2030-04-15T09:30:00", want: time.Date(2030, 4, 15, 9, 30, 0, 0, time.UTC), wantZone: "UTC"},
		{name: "to the minute", text: "2030-04-15T09:30", want: time.Date(2030, 4, 15, 9, 30, 0, 0, time.UTC), wantZone: "UTC"},
		{name: "in a zone", text: "2030-04-15T09:30:00", zone: "America/New_York",
			want: time.Date(2030, 4, 15, 9, 30, 0, 0, ny), wantZone: "America/New_York"},
		{name: "fractions round up to the second, never early", text: "2030-04-15T09:30:00.75", want: time.Date(2030, 4, 15, 9, 30, 1, 0, time.UTC), wantZone: "UTC"},
		{name: "a whole second stays", text: "2030-04-15T09:30:00.000Z", want: time.Date(2030, 4, 15, 9, 30, 0, 0, time.UTC), wantZone: "UTC"},
		{name: "RFC 3339 Z", text: "2030-04-15T09:30:00Z", want: time.Date(2030, 4, 15, 9, 30, 0, 0, time.UTC), wantZone: "UTC"},
		{name: "Z with UTC named", text: "2030-04-15T09:30:00Z", zone: "UTC", want: time.Date(2030, 4, 15, 9, 30, 0, 0, time.UTC), wantZone: "UTC"},
		{name: "an offset", text: "2030-04-15T09:30:00+05:00", field: "wake_at", reason: "must not include a UTC offset"},
		{name: "a negative offset", text: "2030-04-15T09:30:00-04:00", zone: "America/New_York", field: "wake_at", reason: "must not include a UTC offset"},
		{name: "Z in another zone", text: "2030-04-15T09:30:00Z", zone: "Europe/Berlin", field: "wake_at", reason: "ends in Z"},
		{name: "a date alone", text: "2030-04-15", field: "wake_at", reason: "a date with no time"},
		{name: "an unknown zone", text: "2030-04-15T09:30:00", zone: "Mars/Olympus", field: "timezone", reason: "not an IANA time zone"},
		{name: "the server's zone", text: "2030-04-15T09:30:00", zone: "Local", field: "timezone", reason: "not an IANA time zone"},
		{name: "nonsense", text: "tomorrow at nine", field: "wake_at", reason: "not an ISO-8601 date-time"},
		{name: "no such day", text: "2030-02-30T09:30:00", field: "wake_at", reason: "not an ISO-8601 date-time"},
		{name: "blank", text: "  ", field: "wake_at", reason: "is required"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := domain.ParseWakeAt(tc.text, tc.zone)
			if tc.field == "" {
				require.NoError(t, err)
				require.True(t, tc.want.Equal(got.At), "got %s, want %s", got.At, tc.want)
				require.Equal(t, tc.wantZone, got.Timezone)
				return
			}
			var refused *domain.WakeRefusal
			require.ErrorAs(t, err, &refused)
			require.Equal(t, domain.RefusedUnparseableWakeAt, refused.Code)
			require.Equal(t, tc.field, refused.Field)
			require.Contains(t, refused.Reason, tc.reason)
		})
	}
	require.Equal(t, "2030-04-15T09:30:00 (America/New_York)",
		domain.WakeAt{At: time.Date(2030, 4, 15, 13, 30, 0, 0, time.UTC), Timezone: "America/New_York"}.Format(), "echoed as asked")
}

// FuzzParseWakeAt: whatever the text and zone, the parser answers an
// instant in whole seconds with the zone named, or a refusal coded
// unparseable_wake_at naming wake_at or timezone; never a panic. What it
// accepts reads back to the same instant from its own echo.
func FuzzParseWakeAt(f *testing.F) {
	for _, seed := range [][2]string{
		{"2030-04-15T09:30:00", ""}, {"2030-04-15T09:30", "America/New_York"}, {"2030-04-15T09:30:00Z", "UTC"},
		{"2030-04-15T09:30:00+05:00", ""}, {"2030-04-15", "Europe/Berlin"}, {"2030-04-15T09:30:00", "../../etc/passwd"},
		{"2030-03-10T02:30:00", "America/New_York"}, {"T", "Local"}, {"2030-04-15T24:00:00", ""},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, text, zone string) {
		got, err := domain.ParseWakeAt(text, zone)
		if err != nil {
			var refused *domain.WakeRefusal
			if !errors.As(err, &refused) {
				t.Fatalf("ParseWakeAt(%q, %q) = %T %v, want a *WakeRefusal", text, zone, err, err)
			}
			if refused.Code != domain.RefusedUnparseableWakeAt || (refused.Field != "wake_at" && refused.Field != "timezone") {
				t.Fatalf("ParseWakeAt(%q, %q) refused %+v", text, zone, refused)
			}
			return
		}
		if got.At.Nanosecond() != 0 {
			t.Fatalf("ParseWakeAt(%q, %q) = %s, not whole seconds", text, zone, got.At)
		}
		if got.Timezone == "" || (strings.TrimSpace(zone) != "" && got.Timezone != strings.TrimSpace(zone)) {
			t.Fatalf("ParseWakeAt(%q, %q) named zone %q", text, zone, got.Timezone)
		}
		if !utf8.ValidString(got.Timezone) {
			t.Fatalf("zone %q is not text", got.Timezone)
		}
		echo := got.Format()
		wall, _, _ := strings.Cut(echo, " (")
		again, err := domain.ParseWakeAt(wall, got.Timezone)
		if err != nil {
			t.Fatalf("the echo %q of ParseWakeAt(%q, %q) does not read back: %v", echo, text, zone, err)
		}
		// A wall-clock time a DST change repeats reads back as one of its
		// two instants, an hour apart at most.
		if d := again.At.Sub(got.At); d != 0 && d != time.Hour && d != -time.Hour {
			t.Fatalf("ParseWakeAt(%q, %q) = %s, its echo %q reads back as %s", text, zone, got.At, echo, again.At)
		}
	})
}

// TestPauseUntilRefusesAndSupersedes: Pause Until is not offered to a
// session that never started nor to a failed or archived one; it names
// the wake-ups it supersedes on the timeline.
func TestPauseUntilRefusesAndSupersedes(t *testing.T) {
	t.Parallel()
	pause := domain.Trigger{ID: 9, SessionID: 5, Kind: domain.KindOneTime, FireAt: now.Add(time.Hour), Timezone: "Europe/Berlin",
		Source: domain.SourcePauseUntil}
	never := session(domain.StatusWaiting)
	never.Prompt = "build it"
	for _, s := range []domain.Session{never, session(domain.StatusFailed), session(domain.StatusArchived)} {
		if s.Status != domain.StatusWaiting {
			s.ElapsedSince = &now
		}
		_, err := domain.ArmWake(s, pause, nil, false, domain.Command{}, env())
		var refused *domain.WakeRefusal
		require.ErrorAs(t, err, &refused, "%s", s.Status)
		require.Equal(t, domain.RefusedNotWakeable, refused.Code)
	}
	require.Contains(t, domain.CanPauseUntil(never).Error(), "cannot be paused from here")

	ran := session(domain.StatusNeedsInput)
	ran.ElapsedSince = &now
	out, err := domain.ArmWake(ran, pause, []int64{3, 4}, false, domain.Command{}, env())
	require.NoError(t, err)
	require.Equal(t, "[Trigger] wake-up #9 armed for 2026-11-30T14:00:00 (Europe/Berlin) (pause_until), superseding wake-ups #3, #4",
		out.Timeline[len(out.Timeline)-1].Message)
}

// TestArmWatch: a watcher sleeps the session that arms it, as a wake
// does; refused for a watched session that is gone, will not transition
// further, or is already in a state watched for.
func TestArmWatch(t *testing.T) {
	t.Parallel()
	watch := domain.Trigger{ID: 7, SessionID: 5, Kind: domain.KindSessionState, WatchedSessionID: 9,
		States: []domain.Status{domain.StatusNeedsInput}, Source: domain.SourceWatch}
	running := domain.StatusRunning
	out, err := domain.ArmWatch(session(domain.StatusNeedsInput), watch, &running, domain.Command{}, env())
	require.NoError(t, err)
	require.Equal(t, domain.StatusWaiting, out.Session.Status)
	require.Equal(t, []domain.Event{domain.EventSleep}, out.Applied)
	require.Equal(t, "[Trigger] watcher #7 armed: wakes this session when session #9 is next needs_input", out.Timeline[len(out.Timeline)-1].Message)

	out, err = domain.ArmWatch(session(domain.StatusRunning), watch, &running, domain.Command{}, env())
	require.NoError(t, err)
	require.Equal(t, domain.StatusRunning, out.Session.Status)
	require.True(t, out.Session.Markers.PendingSleep, "sleeps when its turn ends")

	needs, failed, archived := domain.StatusNeedsInput, domain.StatusFailed, domain.StatusArchived
	for name, tc := range map[string]struct {
		watched *domain.Status
		reason  string
	}{
		"gone":     {nil, "does not exist"},
		"failed":   {&failed, "will not transition further"},
		"archived": {&archived, "will not transition further"},
		"already":  {&needs, "is already needs_input"},
	} {
		_, err := domain.ArmWatch(session(domain.StatusNeedsInput), watch, tc.watched, domain.Command{}, env())
		require.Error(t, err, name)
		require.Contains(t, err.Error(), tc.reason, name)
	}
}
