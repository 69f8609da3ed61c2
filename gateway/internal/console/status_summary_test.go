package console_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/timestamppb"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
)

// TestTheStatusSummaryIsOnTheCardAndTheSessionPage: where the work stands,
// as the session's status-summary fork wrote it (escaped like everything an
// agent writes), on the dashboard's card and on the session's page with
// what it covers and a fork that failed since.
func TestTheStatusSummaryIsOnTheCardAndTheSessionPage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.signedIn(t)
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	b.fakes.mu.Lock()
	b.fakes.session.StatusSummary = &lifecyclev1.StatusSummary{
		Text: "Tests pass; the PR is next. " + hostile, GeneratedAt: timestamppb.New(at), TranscriptPosition: 345, ForkSessionId: 8,
		Failure: &lifecyclev1.StatusSummaryFailure{Reason: "exited with code 1", FailedAt: timestamppb.New(at.Add(time.Hour)), ForkSessionId: 9},
	}
	b.fakes.mu.Unlock()

	dash := b.get(t, c, "/console/")
	require.Equal(t, http.StatusOK, dash.code, dash.body)
	require.Contains(t, dash.body, `<p class="status-summary"><span class="visually-hidden">Status summary: </span>Tests pass; the PR is next. &lt;script&gt;`)

	page := b.get(t, c, "/console/sessions/7")
	require.Equal(t, http.StatusOK, page.code, page.body)
	for _, want := range []string{
		`<h2 id="status-summary-heading">Status summary</h2>`,
		"<p>Tests pass; the PR is next. &lt;script&gt;",
		`Written by status-summary fork <a href="/console/sessions/8">#8</a>`,
		"covering the transcript to line 345.",
		`The status-summary fork <a href="/console/sessions/9">#9</a> failed`,
		": exited with code 1</p>",
	} {
		require.Contains(t, page.body, want)
	}
	require.NotContains(t, page.body, hostile)
}
