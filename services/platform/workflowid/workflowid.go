// Package workflowid names the Temporal workflows of a session, whichever
// service starts them: each is session/<id> or under it, so an operator
// finds all of session 7's in the Web UI with
//
//	WorkflowId = "session/7" OR WorkflowId STARTS_WITH "session/7/"
//
// It imports the standard library only, so domain packages may use it.
package workflowid

import "strconv"

// Session is the session's own workflow (the runner's turns).
func Session(sessionID int64) string { return "session/" + strconv.FormatInt(sessionID, 10) }

// Drain is the queue's after-pause drain of the session's messages.
func Drain(sessionID int64) string { return Session(sessionID) + "/drain" }

// NeedsInputDebounce is notification's debounce of the session's pauses.
func NeedsInputDebounce(sessionID int64) string {
	return Session(sessionID) + "/debounce/needs-input"
}

// CloneCleanup is the runner's preservation of an archived session's clone.
func CloneCleanup(sessionID int64) string { return Session(sessionID) + "/clone-cleanup" }

// CloneRestore is the runner's restoration of an unarchived session's
// clone.
func CloneRestore(sessionID int64) string { return Session(sessionID) + "/clone-restore" }

// StatusSummary is the runner's refresh of the session's status summary:
// one at a time per session, so two refreshes never fork twice.
func StatusSummary(sessionID int64) string { return Session(sessionID) + "/status-summary" }

// StatusSummaryHarvest is the runner's harvest of a status-summary fork
// (the fork's id).
func StatusSummaryHarvest(forkID int64) string { return Session(forkID) + "/status-summary-harvest" }

// Inference is the runner's inference of the session's title and
// category: one at a time per session.
func Inference(sessionID int64) string { return Session(sessionID) + "/infer" }

// Wake is lifecycle's timer of the session's trigger.
func Wake(sessionID, triggerID int64) string {
	return Session(sessionID) + "/wake/" + strconv.FormatInt(triggerID, 10)
}

// GitHubPullRequest is lifecycle's watch of a pull request the session
// opened: session/<id>/github-pr/<owner>/<repo>/<number>.
func GitHubPullRequest(sessionID int64, owner, repo string, number int) string {
	return Session(sessionID) + "/github-pr/" + owner + "/" + repo + "/" + strconv.Itoa(number)
}
