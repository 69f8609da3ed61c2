package console_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
)

func (l fakeLifecycle) PauseIntoSpotQueue(_ context.Context, in *lifecyclev1.PauseIntoSpotQueueRequest, _ ...grpc.CallOption) (*lifecyclev1.PauseIntoSpotQueueResponse, error) {
	if err := l.f.record("PauseIntoSpotQueue", in); err != nil {
		return nil, err
	}
	return &lifecyclev1.PauseIntoSpotQueueResponse{Session: &lifecyclev1.Session{Id: 7},
		Message: "Session #7 sleeps in the spot queue, number 1 in line."}, nil
}

// The Ranked page shows lifecycle's line in its order with each session's
// place and reason, and its edits are lifecycle's UpdateSession; a
// precedence the console cannot read, or lifecycle refuses, is shown with
// what was typed and changes nothing.
func TestTheRankedPageShowsTheLineAndEditsIt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.fakes.mu.Lock()
	b.fakes.session.SchedulingClass, b.fakes.session.Precedence, b.fakes.session.Status = "spot", 4, "waiting"
	b.fakes.session.SlotWait = &lifecyclev1.SlotWait{Reason: "spot_queue", Position: 1, Since: timestamppb.Now()}
	b.fakes.mu.Unlock()
	c := b.signedIn(t)

	page := b.get(t, c, "/console/ranked")
	require.Equal(t, http.StatusOK, page.code, page.body)
	require.Contains(t, page.body, `id="ranked-7"`)
	require.Contains(t, page.body, "asleep in the spot queue")
	require.Contains(t, page.body, `id="precedence-7" name="precedence" inputmode="numeric" size="6" value="4"`)
	b.fakes.mu.Lock()
	require.Equal(t, "ranked", b.fakes.lists[len(b.fakes.lists)-1].GetView(), "the page is lifecycle's ranked view")
	b.fakes.mu.Unlock()

	f := form(t, page.body, "/console/sessions/7/precedence")
	f.Set("precedence", "12")
	a := b.post(t, c, "/console/sessions/7/precedence", f)
	require.Equal(t, http.StatusSeeOther, a.code, a.body)
	require.Equal(t, "/console/ranked", a.header.Get("Location"))
	twelve := int32(12)
	require.True(t, proto.Equal(&lifecyclev1.UpdateSessionRequest{SessionId: "7", Precedence: &twelve}, b.calls()[0]), "%v", b.calls())

	// Not a number: refused here, nothing asked.
	f.Set("precedence", "soon")
	a = b.post(t, c, "/console/sessions/7/precedence", f)
	require.Equal(t, http.StatusBadRequest, a.code, a.body)
	require.Contains(t, a.body, `precedence: &#34;soon&#34; is not a whole number`)
	require.Contains(t, a.body, `value="soon"`, "what was typed is kept")
	require.Len(t, b.calls(), 1)

	// Lifecycle's refusal, in its words.
	b.refuseNext("UpdateSession", status.Error(codes.FailedPrecondition, "session 7 is archived: it cannot be edited"))
	f.Set("precedence", "3")
	a = b.post(t, c, "/console/sessions/7/precedence", f)
	require.Equal(t, http.StatusUnprocessableEntity, a.code, a.body)
	require.Contains(t, a.body, "session 7 is archived: it cannot be edited")

	a = b.post(t, c, "/console/sessions/7/priority", form(t, page.body, "/console/sessions/7/priority"))
	require.Equal(t, http.StatusSeeOther, a.code, a.body)
	priority := "priority"
	calls := b.calls()
	require.True(t, proto.Equal(&lifecyclev1.UpdateSessionRequest{SessionId: "7", SchedulingClass: &priority}, calls[len(calls)-1]), "%v", calls)

	for _, path := range []string{"/console/sessions/7/precedence", "/console/sessions/7/priority", "/console/sessions/7/spot-queue"} {
		a := b.post(t, c, path, url.Values{"csrf": {"forged"}, "precedence": {"1"}})
		require.Equal(t, http.StatusForbidden, a.code, path)
	}
	require.Len(t, b.calls(), len(calls), "a forged form does nothing")
}

// The Pause Until panel's last choice is the spot queue: lifecycle's
// PauseIntoSpotQueue, its words as the flash; the page says where the
// session waits.
func TestPauseIntoTheSpotQueueFromThePanel(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.signedIn(t)
	page := b.get(t, c, "/console/sessions/7").body
	require.Contains(t, page, "Pause into the spot queue")
	a := b.post(t, c, "/console/sessions/7/spot-queue", form(t, page, "/console/sessions/7/spot-queue"))
	require.Equal(t, http.StatusSeeOther, a.code, a.body)
	require.True(t, proto.Equal(&lifecyclev1.PauseIntoSpotQueueRequest{SessionId: "7"}, b.calls()[0]), "%v", b.calls())

	b.fakes.mu.Lock()
	b.fakes.session.SchedulingClass, b.fakes.session.Precedence = "spot", 2
	b.fakes.session.SlotWait = &lifecyclev1.SlotWait{Reason: "spot_queue", Position: 3}
	b.fakes.mu.Unlock()
	page = b.get(t, c, "/console/sessions/7").body
	require.Contains(t, page, "Session #7 sleeps in the spot queue, number 1 in line.", "lifecycle's words")
	require.Contains(t, page, "Asleep in the spot queue: number 3 in")
	require.Contains(t, page, "spot, precedence 2")

	b.refuseNext("PauseIntoSpotQueue", status.Error(codes.FailedPrecondition, "session #7 is failed: the spot queue needs needs_input, running or waiting"))
	a = b.post(t, c, "/console/sessions/7/spot-queue", form(t, page, "/console/sessions/7/spot-queue"))
	require.Equal(t, http.StatusUnprocessableEntity, a.code, a.body)
	require.Contains(t, a.body, "the spot queue needs needs_input, running or waiting")
}
