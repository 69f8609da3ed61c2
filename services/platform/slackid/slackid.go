// Package slackid is the shape of a Slack ID, the one rule the roster
// (lineage: whose Slack IDs) and the Slack triggers (notification: who may
// fire one) both check. Slack's user IDs (U…, W…) and conversation IDs
// (C…, G…, D…) are uppercase letters and digits.
package slackid

import "regexp"

// Shape says what Valid accepts, in words, for refusals.
const Shape = "uppercase letters and digits, e.g. U012AB3CD"

var pattern = regexp.MustCompile(`^[A-Z0-9]{2,32}$`)

// Valid reports whether id has the shape of a Slack ID.
func Valid(id string) bool { return pattern.MatchString(id) }
