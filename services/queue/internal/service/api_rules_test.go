package service_test

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/queue/internal/domain"
)

// Issue 23 rule 15: one message by id (not another session's), a queue a
// page at a time with a pagination object, a status filter that refuses
// an unknown status, a position that must be 1 or more, and a timeline
// line for every enqueue.
func TestQueueAPIAsCompleteAsTheOriginals(t *testing.T) {
	t.Parallel()
	h := startHarness(t, roster()...)
	ctx := t.Context()

	var ids []int64
	for i := range 3 {
		ids = append(ids, h.enqueue(t, 2, fmt.Sprintf("message %d", i+1)).GetId())
	}
	other := h.enqueue(t, 5, "another session's")

	got, err := h.queue.GetEnqueuedMessage(ctx, &queuev1.GetEnqueuedMessageRequest{SessionId: "two", MessageId: ids[1]})
	require.NoError(t, err)
	require.Equal(t, "message 2", got.GetEnqueuedMessage().GetContent())
	require.EqualValues(t, 2, got.GetEnqueuedMessage().GetPosition())
	_, err = h.queue.GetEnqueuedMessage(ctx, &queuev1.GetEnqueuedMessageRequest{SessionId: "two", MessageId: other.GetId()})
	require.Equal(t, codes.NotFound, status.Code(err), "another session's message is not this session's: %v", err)

	page, err := h.queue.ListEnqueuedMessages(ctx, &queuev1.ListEnqueuedMessagesRequest{SessionId: "two", PerPage: 2, Page: 2})
	require.NoError(t, err)
	require.Len(t, page.GetEnqueuedMessages(), 1)
	require.Equal(t, ids[2], page.GetEnqueuedMessages()[0].GetId(), "page 2 continues in delivery order")
	require.Equal(t, &queuev1.Pagination{Page: 2, PerPage: 2, TotalCount: 3, TotalPages: 2}, page.GetPagination())
	page, err = h.queue.ListEnqueuedMessages(ctx, &queuev1.ListEnqueuedMessagesRequest{SessionId: "two", PerPage: 1000})
	require.NoError(t, err)
	require.EqualValues(t, rules.MaxPerPage, page.GetPagination().GetPerPage(), "per_page is at most %d", rules.MaxPerPage)
	page, err = h.queue.ListEnqueuedMessages(ctx, &queuev1.ListEnqueuedMessagesRequest{SessionId: "two"})
	require.NoError(t, err)
	require.EqualValues(t, rules.DefaultPerPage, page.GetPagination().GetPerPage())

	page, err = h.queue.ListEnqueuedMessages(ctx, &queuev1.ListEnqueuedMessagesRequest{SessionId: "two", Status: []string{"sent"}})
	require.NoError(t, err)
	require.Empty(t, page.GetEnqueuedMessages())
	require.Zero(t, page.GetPagination().GetTotalCount())
	page, err = h.queue.ListEnqueuedMessages(ctx, &queuev1.ListEnqueuedMessagesRequest{SessionId: "two", Status: []string{"pending"}})
	require.NoError(t, err)
	require.Len(t, page.GetEnqueuedMessages(), 3)
	_, err = h.queue.ListEnqueuedMessages(ctx, &queuev1.ListEnqueuedMessagesRequest{SessionId: "two", Status: []string{"queued"}})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	require.Contains(t, status.Convert(err).Message(), `unknown status "queued"; use one of pending, processing, sent, undelivered`)

	for _, position := range []int32{0, -1} {
		_, err = h.queue.UpdateEnqueuedMessage(ctx, &queuev1.UpdateEnqueuedMessageRequest{SessionId: "two", MessageId: ids[0], Position: position})
		require.Equal(t, codes.InvalidArgument, status.Code(err), "position %d", position)
		require.Contains(t, status.Convert(err).Message(), "position: must be 1 or more", "position %d", position)
	}

	require.Equal(t, []string{
		fmt.Sprintf(domain.LineEnqueued, ids[0], 1), fmt.Sprintf(domain.LineEnqueued, ids[1], 2), fmt.Sprintf(domain.LineEnqueued, ids[2], 3),
	}, h.lifecycle.timeline(2), "every enqueue writes a timeline line")
	require.Equal(t, []string{fmt.Sprintf(domain.LineEnqueued, other.GetId(), 1)}, h.lifecycle.timeline(5))
}

// Issue 23 rule 17: a refusal's previews are at most 160 characters, and
// the retirement alert has a title.
func TestArchiveRefusalPreviewsAndRetirementAlertTitle(t *testing.T) {
	t.Parallel()
	h := startHarness(t, roster()...)
	long := strings.Repeat("a very long queued message ", 20)
	h.enqueue(t, 5, long)

	refusal := h.archive(t, 5, false).GetRefusal()
	require.NotEmpty(t, refusal)
	var previews []string
	for _, line := range strings.Split(refusal, "\n") {
		if p, ok := strings.CutPrefix(line, "  1. "); ok {
			previews = append(previews, p)
		}
	}
	require.Len(t, previews, 1, refusal)
	require.LessOrEqual(t, utf8.RuneCountInString(previews[0]), 160, "a preview is at most 160 characters: %q", previews[0])
	require.True(t, strings.HasSuffix(previews[0], "..."), previews[0])

	require.Empty(t, h.archive(t, 5, true).GetRefusal())
	raised := h.notification.raised()
	require.Len(t, raised, 1)
	require.Equal(t, domain.RetirementAlertTitle, raised[0].GetDetails().AsMap()["title"])
	require.Equal(t, "Queued messages discarded by an archive", raised[0].GetDetails().AsMap()["title"])
}
