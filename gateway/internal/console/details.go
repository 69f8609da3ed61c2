package console

import (
	"context"
	"fmt"
	"sync"
	"time"
	// The zones Pause Until's triggers are shown in, whatever the host has.
	_ "time/tzdata"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/zimmerhq/zimmer/gateway/internal/grpcerr"
	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
	notificationv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/notification/v1"
	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"
	runnerv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/runner/v1"
)

const (
	// TimelineLines is how many of the newest timeline lines the page
	// shows; the older ones are counted.
	TimelineLines = 200
	// QueueListSize is how many of the queue's messages the page lists
	// (the queue's own page size limit).
	QueueListSize = 100
)

// queueShown are the queue's statuses the page lists: what is still to
// be delivered, and what never was (the spec lists it, marked, outside
// the live queue). Sent messages are turns, in the transcript.
var queueShown = []string{queuePending, "processing", "undelivered"}

// queuePending is the queue's word for a message still waiting its turn:
// the only one it lets a caller send now, interrupt with, move or delete.
const queuePending = "pending"

func pending(m *queuev1.EnqueuedMessage) bool { return m.GetStatus() == queuePending }

// details are the session page's parts beyond its header: each from the
// service that owns it, each failing alone (its error said in its place)
// rather than failing the page.
type details struct {
	// Trashed: the page was reached by archiving from it, so it offers the
	// archive's Undo beside the flash.
	Trashed bool
	// Hierarchy is lineage's graph around the session, HierarchyTree the
	// same nodes nested by depth for the indented rendering.
	Hierarchy        *lineagev1.SessionHierarchy
	HierarchyTree    []*hierarchyNode
	HierarchyError   string
	ElsewhereIsFloor bool
	// Queue is the session's queued messages (pending first, in delivery
	// order, then the undelivered ones).
	Queue      []*queuev1.EnqueuedMessage
	QueueTotal int64
	QueueError string
	// QueuePending is how many of them wait their turn (the last of them
	// cannot move down).
	QueuePending int32
	// Timeline is the newest TimelineLines lines, oldest first;
	// TimelineOlder counts the ones left out.
	Timeline      []*lifecyclev1.TimelineLine
	TimelineOlder int
	TimelineError string
	// Clone is the runner's record of the session's clone; NoClone when it
	// made none.
	Clone      *runnerv1.Clone
	NoClone    bool
	CloneError string
	// Triggers are the session's armed wake-ups and watchers.
	Triggers      []*lifecyclev1.Trigger
	TriggersError string
	// RestartKey makes the Resume/Restart form act once however often it
	// is submitted.
	RestartKey string
	// StreamAfter is the last transcript line shown: the live stream
	// starts after it.
	StreamAfter int64
	// TitleDraft and NotesDraft keep what was typed when lifecycle refused
	// it (nil: show the session's own).
	TitleDraft, NotesDraft *string
	// TitleValue and NotesValue are what the edit forms show: the draft,
	// else the session's own.
	TitleValue, NotesValue string
	// WakeAtDraft and TimezoneDraft keep a refused Pause Until's fields.
	WakeAtDraft, TimezoneDraft, WakePromptDraft string
}

// loadDetails asks each service for its part of the page, on wg.
func (h *Handler) loadDetails(ctx context.Context, wg *sync.WaitGroup, id string, d *details) {
	d.RestartKey = randomToken()
	wg.Go(func() {
		resp, err := h.clients.Queue.ListEnqueuedMessages(ctx, &queuev1.ListEnqueuedMessagesRequest{
			SessionId: id, Status: queueShown, PerPage: QueueListSize,
		})
		if err != nil {
			d.QueueError = h.partError(ctx, "queue", err)
			return
		}
		d.Queue, d.QueueTotal = resp.GetEnqueuedMessages(), resp.GetPagination().GetTotalCount()
		for _, m := range d.Queue {
			if pending(m) {
				d.QueuePending++
			}
		}
	})
	wg.Go(func() {
		resp, err := h.clients.Lifecycle.GetSessionTimeline(ctx, &lifecyclev1.GetSessionTimelineRequest{SessionId: id})
		if err != nil {
			d.TimelineError = h.partError(ctx, "lifecycle", err)
			return
		}
		lines := resp.GetTimeline()
		if len(lines) > TimelineLines {
			d.TimelineOlder = len(lines) - TimelineLines
			lines = lines[d.TimelineOlder:]
		}
		d.Timeline = lines
	})
	wg.Go(func() {
		resp, err := h.clients.Runner.GetClone(ctx, &runnerv1.GetCloneRequest{SessionId: id})
		switch {
		case status.Code(err) == codes.NotFound:
			d.NoClone = true
		case err != nil:
			d.CloneError = h.partError(ctx, "runner", err)
		default:
			d.Clone = resp.GetClone()
		}
	})
	wg.Go(func() {
		resp, err := h.clients.Triggers.ListTriggers(ctx, &lifecyclev1.ListTriggersRequest{SessionId: id})
		if err != nil {
			d.TriggersError = h.partError(ctx, "lifecycle", err)
			return
		}
		d.Triggers = resp.GetTriggers()
	})
}

// partError is what a part of the page says when its service failed: the
// service's words, and a log line when it is the system's fault.
func (h *Handler) partError(ctx context.Context, service string, err error) string {
	p := grpcerr.From(service, err)
	if p.Internal() {
		h.logger.WarnContext(ctx, "console could not read part of a page", "service", service, "error", err)
	}
	return fmt.Sprintf("The %s service could not be read: %s", service, p.Message)
}

// hierarchyNode is a node of the hierarchy with the nodes below it, so
// the page renders the tree as nested lists (the indent is the nesting).
type hierarchyNode struct {
	*lineagev1.HierarchyNode
	Children []*hierarchyNode
}

// hierarchyTree nests nodes, which lineage gives in outline order (depth
// first from each root) with their depths: each node goes under the
// nearest node before it that is shallower.
func hierarchyTree(nodes []*lineagev1.HierarchyNode) []*hierarchyNode {
	var roots, path []*hierarchyNode
	for _, n := range nodes {
		node := &hierarchyNode{HierarchyNode: n}
		for len(path) > 0 && path[len(path)-1].GetDepth() >= n.GetDepth() {
			path = path[:len(path)-1]
		}
		if len(path) == 0 {
			roots = append(roots, node)
		} else {
			parent := path[len(path)-1]
			parent.Children = append(parent.Children, node)
		}
		path = append(path, node)
	}
	return roots
}

// lastLineID is the newest line id among lines (0 for none).
func lastLineID(lines []*runnerv1.TranscriptLine) int64 {
	var last int64
	for _, l := range lines {
		last = max(last, l.GetId())
	}
	return last
}

// unreadCount is the inbox's unread count for the header; 0 when the
// notification service cannot say (logged: the page is still worth
// showing).
func (h *Handler) unreadCount(ctx context.Context) int32 {
	if h.clients.Notifications == nil {
		return 0
	}
	resp, err := h.clients.Notifications.ListNotifications(ctx, &notificationv1.ListNotificationsRequest{Unread: true, PageSize: 1})
	if err != nil {
		h.logger.WarnContext(ctx, "console could not count the unread notifications", "error", err)
		return 0
	}
	return resp.GetUnreadCount()
}

// at renders a timestamp for a reader, in UTC ("" when unset).
func at(ts *timestamppb.Timestamp) string {
	if ts == nil {
		return ""
	}
	return ts.AsTime().UTC().Format("2006-01-02 15:04:05 UTC")
}

// inZone renders ts in the IANA zone it was asked in (a trigger's
// timezone), falling back to UTC for a zone this host does not know.
func inZone(ts *timestamppb.Timestamp, zone string) string {
	if ts == nil {
		return ""
	}
	loc, err := time.LoadLocation(zone)
	if err != nil || zone == "" {
		return at(ts)
	}
	return ts.AsTime().In(loc).Format("2006-01-02 15:04 MST") + " (" + zone + ")"
}

// size renders a byte count for a reader.
func size(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// alertDetails renders an alert's details as indented JSON (escaped by
// the template like every other text).
func alertDetails(s *structpb.Struct) string {
	if s == nil || len(s.GetFields()) == 0 {
		return ""
	}
	b, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(s)
	if err != nil {
		return ""
	}
	return string(b)
}
