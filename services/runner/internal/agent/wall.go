package agent

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// A wall is a login's limit, not an error of the turn: the CLI refused to
// work because the account it runs under is out of quota (until a reset
// it usually names) or is no longer logged in. A turn that meets one did
// nothing, so it is reported apart from errors (Event.Wall) and the runner
// parks the session on its login pool instead of failing it.
//
// The shapes recognised are the CLIs' own, as users have reported them:
//
//	Claude Code (stream-json): a rate_limit_event whose rate_limit_info.status is "rejected" (resetsAt, epoch
//	seconds); a synthetic assistant message carrying "error":"rate_limit" and a result line with is_error true,
//	whose text is "Claude AI usage limit reached|1755615600" (older CLIs), "5-hour limit reached ∙ resets 2am",
//	"You've hit your limit · resets 4:50am (Europe/Rome)", "You've hit your session limit · resets 12:50am
//	(America/Los_Angeles)", "You've hit your weekly limit · resets Apr 23 at 4pm (America/Recife)" or "Claude
//	usage limit reached. Your limit will reset at 5pm (Europe/Warsaw)."; an authentication wall says "Invalid API
//	key · Please run /login", "OAuth token has expired" or names an authentication_error.
//	Codex (exec --json): an error or turn.failed line saying "You've hit your usage limit. Upgrade to Pro
//	(https://openai.com/chatgpt/pricing) or try again in 2 days 17 hours 14 minutes.", a usage_limit_reached
//	error with resets_at / resets_in_seconds, "Quota exceeded. Check your plan and billing details.", a
//	rate_limit_exceeded "Rate limit reached … Please try again in 20s"; an authentication wall is a 401, "Your
//	access token could not be refreshed" or "Not logged in".
//
// testdata/claude_wall*.jsonl and codex_wall*.jsonl replay them.

// WallKind says what a login ran into.
type WallKind string

// Wall kinds.
const (
	// WallQuota: the account's usage quota is spent until a reset.
	WallQuota WallKind = "quota"
	// WallAuth: the login is not (or no longer) valid; no reset is known,
	// a person has to log it in again.
	WallAuth WallKind = "auth"
)

// Wall is a quota or authentication wall a CLI reported, with the reset
// in the form the CLI gave it (at most one of ResetAt, ResetIn and
// ResetClock is set; none when it named no reset).
type Wall struct {
	Kind WallKind
	// Message is the CLI's own words, cut to maxTextRunes.
	Message string
	// ResetAt is a reset the CLI gave as an instant (epoch seconds).
	ResetAt time.Time
	// ResetIn is a reset the CLI gave as a delay ("try again in 2 days 3
	// hours"), counted from when the line was read.
	ResetIn time.Duration
	// ResetClock is a reset the CLI gave as a wall clock ("4:50am
	// (Europe/Rome)", "Apr 23 at 4pm (America/Recife)"), read in its zone
	// (the runner's own when it names none, as the CLI prints its local
	// time).
	ResetClock string
}

// Reset resolves when the wall lifts, as of now (when the line was read):
// false when the CLI named no reset it can be read from.
func (w Wall) Reset(now time.Time) (time.Time, bool) {
	switch {
	case !w.ResetAt.IsZero():
		return w.ResetAt, true
	case w.ResetIn > 0:
		return now.Add(w.ResetIn), true
	case w.ResetClock != "":
		return nextClock(w.ResetClock, now)
	}
	return time.Time{}, false
}

var (
	claudePipeEpoch = regexp.MustCompile(`(?i)usage limit reached\|(\d{9,11})`)
	claudeQuota     = regexp.MustCompile(`(?i)usage limit reached|hit your (?:\w+ )?limit|(?:5-hour|five-hour|session|weekly|opus|sonnet) limit reached|out of extra usage`)
	claudeResets    = regexp.MustCompile(`(?i)\breset(?:s| at)\s+(.+?)\s*\.?\s*$`)
	claudeAuth      = regexp.MustCompile(`(?i)invalid api key|please run /login|oauth token has expired|authentication_error|not logged in|credit balance is too low`)

	codexQuota   = regexp.MustCompile(`(?i)hit your usage limit|usage_limit_reached|usage limit has been reached|quota exceeded|insufficient_quota|rate_limit_exceeded|rate limit reached`)
	codexIn      = regexp.MustCompile(`(?i)try again in ((?:\d+(?:\.\d+)?\s*(?:days?|hours?|minutes?|mins?|seconds?|secs?|ms|d|h|m|s)[\s,and]*)+)`)
	codexAt      = regexp.MustCompile(`(?i)try again at\s+(.+?)\s*\.?\s*$`)
	codexResetAt = regexp.MustCompile(`"resets_at"\s*:\s*(\d{9,11})`)
	codexResetIn = regexp.MustCompile(`"resets_in_seconds"\s*:\s*(\d+)`)
	codexAuth    = regexp.MustCompile(`(?i)401 unauthorized|status 401|access token could not be refreshed|not logged in|please log ?in|invalid_api_key|incorrect api key`)
)

// claudeWallText reads Claude Code's words for a wall, or nil.
func claudeWallText(text string) *Wall {
	text = strings.TrimSpace(text)
	if m := claudePipeEpoch.FindStringSubmatch(text); m != nil {
		w := &Wall{Kind: WallQuota, Message: clip(text)}
		if sec, err := strconv.ParseInt(m[1], 10, 64); err == nil {
			w.ResetAt = time.Unix(sec, 0).UTC()
		}
		return w
	}
	if claudeQuota.MatchString(text) {
		w := &Wall{Kind: WallQuota, Message: clip(text)}
		if m := claudeResets.FindStringSubmatch(text); m != nil {
			w.ResetClock = m[1]
		}
		return w
	}
	if claudeAuth.MatchString(text) {
		return &Wall{Kind: WallAuth, Message: clip(text)}
	}
	return nil
}

// codexWallText reads Codex's words for a wall, or nil.
func codexWallText(text string) *Wall {
	text = strings.TrimSpace(text)
	if codexAuth.MatchString(text) {
		return &Wall{Kind: WallAuth, Message: clip(text)}
	}
	if !codexQuota.MatchString(text) {
		return nil
	}
	w := &Wall{Kind: WallQuota, Message: clip(text)}
	switch {
	case codexResetAt.MatchString(text):
		sec, _ := strconv.ParseInt(codexResetAt.FindStringSubmatch(text)[1], 10, 64)
		w.ResetAt = time.Unix(sec, 0).UTC()
	case codexResetIn.MatchString(text):
		sec, _ := strconv.ParseInt(codexResetIn.FindStringSubmatch(text)[1], 10, 64)
		w.ResetIn = time.Duration(sec) * time.Second
	case codexIn.MatchString(text):
		w.ResetIn = spelledDuration(codexIn.FindStringSubmatch(text)[1])
	case codexAt.MatchString(text):
		w.ResetClock = codexAt.FindStringSubmatch(text)[1]
	}
	return w
}

var durationPart = regexp.MustCompile(`(?i)(\d+(?:\.\d+)?)\s*(days?|hours?|minutes?|mins?|seconds?|secs?|ms|d|h|m|s)\b`)

// spelledDuration reads "2 days 17 hours 14 minutes", "20s" or "1.5s";
// 0 when nothing in it is a duration.
func spelledDuration(s string) time.Duration {
	var total time.Duration
	for _, m := range durationPart.FindAllStringSubmatch(s, -1) {
		n, err := strconv.ParseFloat(m[1], 64)
		if err != nil || n > 1e6 {
			continue
		}
		if total > maxSpelledReset {
			break
		}
		unit := time.Second
		switch u := strings.ToLower(m[2]); {
		case u == "ms":
			unit = time.Millisecond
		case strings.HasPrefix(u, "d"):
			unit = 24 * time.Hour
		case strings.HasPrefix(u, "h"):
			unit = time.Hour
		case strings.HasPrefix(u, "m"):
			unit = time.Minute
		}
		total += time.Duration(min(n*float64(unit), float64(maxSpelledReset)))
	}
	return min(total, maxSpelledReset)
}

// maxSpelledReset bounds a delay read from a CLI's words: no quota
// resets further away than a year, and the sum must not overflow.
const maxSpelledReset = 366 * 24 * time.Hour

var (
	clockZone = regexp.MustCompile(`\(([A-Za-z_]+(?:/[A-Za-z0-9_+\-]+)*)\)\s*$`)
	clockDate = regexp.MustCompile(`(?i)^(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+(\d{1,2})(?:,?\s+\d{4})?\s+(?:at\s+)?`)
	clockTime = regexp.MustCompile(`(?i)^(\d{1,2})(?::(\d{2}))?\s*([ap])\.?m\.?`)
)

// nextClock reads a wall clock ("4:50am (Europe/Rome)", "Apr 23 at 4pm
// (America/Recife)", "9pm", "3:45 PM") as the first such moment after now
// (on its date, when it names one).
func nextClock(s string, now time.Time) (time.Time, bool) {
	s = strings.TrimSpace(s)
	loc := time.Local
	if m := clockZone.FindStringSubmatch(s); m != nil {
		l, err := time.LoadLocation(m[1])
		if err != nil {
			return time.Time{}, false
		}
		loc = l
		s = strings.TrimSpace(s[:len(s)-len(m[0])])
	}
	local := now.In(loc)
	year, month, day := local.Date()
	dated := false
	if m := clockDate.FindStringSubmatch(s); m != nil {
		t, err := time.Parse("Jan", strings.ToUpper(m[1][:1])+strings.ToLower(m[1][1:3]))
		d, derr := strconv.Atoi(m[2])
		if err != nil || derr != nil || d < 1 || d > 31 {
			return time.Time{}, false
		}
		month, day, dated = t.Month(), d, true
		s = s[len(m[0]):]
	}
	m := clockTime.FindStringSubmatch(s)
	if m == nil {
		return time.Time{}, false
	}
	hour, _ := strconv.Atoi(m[1])
	minute := 0
	if m[2] != "" {
		minute, _ = strconv.Atoi(m[2])
	}
	if hour < 1 || hour > 12 || minute > 59 {
		return time.Time{}, false
	}
	hour %= 12
	if strings.EqualFold(m[3], "p") {
		hour += 12
	}
	at := time.Date(year, month, day, hour, minute, 0, 0, loc)
	switch {
	case dated && at.Before(now.Add(-24*time.Hour)):
		at = at.AddDate(1, 0, 0) // "Jan 2" read in late December
	case !dated && !at.After(now):
		at = at.AddDate(0, 0, 1)
	}
	return at, true
}
