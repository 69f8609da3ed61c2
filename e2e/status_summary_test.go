package e2e_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

// statusSummary is a session's status_summary as GET /sessions/{id} answers
// it.
type statusSummary struct {
	Text               string `json:"text"`
	TranscriptPosition int64  `json:"transcript_position"`
	ForkSessionID      int64  `json:"fork_session_id"`
	Failure            *struct {
		Reason        string `json:"reason"`
		ForkSessionID int64  `json:"fork_session_id"`
	} `json:"failure"`
}

type summarised struct {
	ID             int64          `json:"id"`
	Status         string         `json:"status"`
	Goal           string         `json:"goal"`
	CustomMetadata map[string]any `json:"custom_metadata"`
	StatusSummary  *statusSummary `json:"status_summary"`
}

func (c restClient) summarised(t *testing.T, id int64) (summarised, *statusSummary) {
	t.Helper()
	code, body := c.do(t, "GET", fmt.Sprintf("/api/v1/sessions/%d", id), "")
	require.Equal(t, 200, code, body)
	var got struct {
		Session       summarised
		StatusSummary *statusSummary `json:"status_summary"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &got), body)
	return got.Session, got.StatusSummary
}

// waitSummary waits for session id's status summary to satisfy done.
func (c restClient) waitSummary(t *testing.T, id int64, done func(*statusSummary) bool) statusSummary {
	t.Helper()
	var last *statusSummary
	require.Eventually(t, func() bool {
		s, beside := c.summarised(t, id)
		require.Equal(t, s.StatusSummary, beside, "the same summary inside session and beside it")
		last = beside
		return last != nil && done(last)
	}, 90*time.Second, 200*time.Millisecond, "session %d's status summary never came: %+v", id, last)
	return *last
}

// forksOf lists the sessions titled as session id's status-summary forks,
// the trash included.
func (c restClient) forksOf(t *testing.T, id int64) []int64 {
	t.Helper()
	title := fmt.Sprintf("Status summary of session #%d", id)
	code, body := c.do(t, "GET", "/api/v1/sessions?show_archived=true&per_page=100&q="+url.QueryEscape(title), "")
	require.Equal(t, 200, code, body)
	var got struct {
		Sessions []struct {
			ID    int64  `json:"id"`
			Title string `json:"title"`
		}
	}
	require.NoError(t, json.Unmarshal([]byte(body), &got), body)
	var ids []int64
	for _, s := range got.Sessions {
		if s.Title == title {
			ids = append(ids, s.ID)
		}
	}
	return ids
}

// effectNames lists the effects session id's transitions requested.
func (c restClient) effectNames(t *testing.T, id int64) []string {
	t.Helper()
	code, body := c.do(t, "GET", fmt.Sprintf("/api/v1/sessions/%d/events", id), "")
	require.Equal(t, 200, code, body)
	var got struct{ Events []struct{ Name string } }
	require.NoError(t, json.Unmarshal([]byte(body), &got))
	var names []string
	for _, e := range got.Events {
		names = append(names, e.Name)
	}
	return names
}

// TestStatusSummaryForks: the real binaries on the demo runtime. A pause
// after new work forks the session once; the fork's summary lands on the
// source and the fork ends archived by Zimmer, having pushed nothing and
// drained no queue; a pause with nothing new forks nothing; a failing fork
// records its failure on the source.
func TestStatusSummaryForks(t *testing.T) {
	t.Parallel()
	s := newStackWith(t, stackOptions{turns: true, env: map[string][]string{"runner": {"RUNNER_STATUS_SUMMARIES=true"}}})
	api := restClient{base: "http://" + s.addr["gateway"], key: s.apiKey}
	repo := gitRepo(t)

	t.Run("a pause after new work forks once; the summary lands; the fork ends archived", func(t *testing.T) {
		t.Parallel()
		id := api.createRunning(t, repo, "@demo say The build is green.")
		api.waitStatus(t, id, "needs_input")
		got := api.waitSummary(t, id, func(s *statusSummary) bool { return s.Text != "" })
		require.Equal(t, fmt.Sprintf("Session #%d, as its transcript stands at line %d: ", id, got.TranscriptPosition),
			got.Text[:strings.Index(got.Text, ":")+2], "the demo summary reads the transcript it was given: %q", got.Text)
		require.True(t, strings.HasSuffix(got.Text, `the agent last said "The build is green.".`), got.Text)
		require.Positive(t, got.TranscriptPosition)
		require.Nil(t, got.Failure)

		fork, _ := api.summarised(t, got.ForkSessionID)
		require.Equal(t, []int64{fork.ID}, api.forksOf(t, id), "exactly one fork")
		require.Equal(t, true, fork.CustomMetadata["status_summary_fork"], "marked as a fork")
		require.Equal(t, float64(id), fork.CustomMetadata["status_summary_source_id"])
		require.Empty(t, fork.Goal)
		fork = api.waitStatusSummarised(t, fork.ID, "archived")
		require.Nil(t, fork.StatusSummary, "a fork is never summarised itself")
		require.Equal(t, []string{"start", "pause", "archive"}, api.transitions(t, fork.ID))
		effects := api.effectNames(t, fork.ID)
		require.Contains(t, effects, "harvest_status_summary_fork")
		for _, never := range []string{"enqueue_debounced_needs_input_push_notification", "enqueue_status_summary_refresh",
			"enqueue_session_inference_if_needed", "drain_enqueued_messages_after_pause"} {
			require.NotContains(t, effects, never, "a fork's pause notifies nobody, summarises nothing, drains no queue")
		}
		code, body := api.do(t, "GET", fmt.Sprintf("/api/v1/sessions/%d/timeline", fork.ID), "")
		require.Equal(t, 200, code, body)
		require.Contains(t, body, "Session moved to trash by Zimmer's status-summary fork clean-up")
		code, body = api.do(t, "GET", fmt.Sprintf("/api/v1/sessions/%d/timeline", id), "")
		require.Equal(t, 200, code, body)
		require.Contains(t, body, fmt.Sprintf("[Status summary] written by fork #%d", fork.ID))
		require.Empty(t, s.webhook.deliveries(fork.ID), "nobody is told about a fork")

		// The list's items carry it too.
		code, body = api.do(t, "GET", "/api/v1/sessions?per_page=100", "")
		require.Equal(t, 200, code, body)
		var list struct{ Sessions []summarised }
		require.NoError(t, json.Unmarshal([]byte(body), &list), body)
		idx := slices.IndexFunc(list.Sessions, func(l summarised) bool { return l.ID == id })
		require.GreaterOrEqual(t, idx, 0, body)
		require.Equal(t, &got, list.Sessions[idx].StatusSummary)

		t.Run("a pause with nothing new forks nothing", func(t *testing.T) {
			// A failure with no turn between: the refresh runs and finds
			// nothing past what the summary covers.
			code, body := api.do(t, "POST", fmt.Sprintf("/api/v1/sessions/%d/transition", id), `{"event":"fail","failure_reason":"failed by the e2e test"}`)
			require.Equal(t, 200, code, body)
			waitRefreshes(t, s, id, 2)
			require.Equal(t, []int64{fork.ID}, api.forksOf(t, id), "no second fork")
			_, again := api.summarised(t, id)
			require.Equal(t, got, *again, "the summary is as it was")
		})
	})

	t.Run("a failing fork records its failure on the source", func(t *testing.T) {
		t.Parallel()
		id := api.createRunning(t, repo, "demo: fail the status summary")
		api.waitStatus(t, id, "needs_input")
		got := api.waitSummary(t, id, func(s *statusSummary) bool { return s.Failure != nil })
		require.Empty(t, got.Text, "no summary was ever written")
		require.Contains(t, got.Failure.Reason, "exited with code 1")
		fork := api.waitStatusSummarised(t, got.Failure.ForkSessionID, "archived")
		require.Equal(t, []string{"start", "fail", "archive"}, api.transitions(t, fork.ID))
		effects := api.effectNames(t, fork.ID)
		require.Contains(t, effects, "harvest_status_summary_fork")
		require.NotContains(t, effects, "enqueue_failure_push_notification", "a fork's failure pages nobody")
		require.NotContains(t, effects, "enqueue_status_summary_refresh")
		require.Empty(t, s.webhook.deliveries(fork.ID))
		code, body := api.do(t, "GET", fmt.Sprintf("/api/v1/sessions/%d/timeline", id), "")
		require.Equal(t, 200, code, body)
		require.Contains(t, body, fmt.Sprintf("[Status summary] the summary fork #%d failed", fork.ID))
	})
}

// waitStatusSummarised waits for session id to reach want.
func (c restClient) waitStatusSummarised(t *testing.T, id int64, want string) summarised {
	t.Helper()
	var last summarised
	require.Eventually(t, func() bool {
		last, _ = c.summarised(t, id)
		return last.Status == want
	}, 60*time.Second, 100*time.Millisecond, "session %d never reached %s", id, want)
	return last
}

// waitRefreshes waits until session id's status-summary workflow has run
// n times to completion.
func waitRefreshes(t *testing.T, s *stack, id int64, n int) {
	t.Helper()
	tc, err := client.Dial(client.Options{HostPort: s.temporal, Namespace: s.namespace})
	require.NoError(t, err)
	defer tc.Close()
	require.Eventually(t, func() bool {
		resp, err := tc.ListWorkflow(t.Context(), &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: s.namespace, Query: fmt.Sprintf("WorkflowId = 'session/%d/status-summary'", id),
		})
		if err != nil {
			return false
		}
		done := slices.DeleteFunc(resp.GetExecutions(), func(e *workflowpb.WorkflowExecutionInfo) bool {
			return e.GetStatus() != enums.WORKFLOW_EXECUTION_STATUS_COMPLETED
		})
		return len(done) >= n
	}, 60*time.Second, 200*time.Millisecond, "session/%d/status-summary never ran %d times", id, n)
}
