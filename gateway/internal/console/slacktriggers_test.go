package console_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zimmerhq/zimmer/gateway/internal/console"
	"github.com/zimmerhq/zimmer/gateway/internal/lineagefake"
	notificationv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/notification/v1"
	"github.com/zimmerhq/zimmer/services/platform/slogx"
)

// fakeSlackTriggers keeps the triggers the console manages (and answers
// the rest of the notification service, the header's unread count, as the
// session page's fake does).
type fakeSlackTriggers struct {
	fakeNotifications
	mu       sync.Mutex
	triggers []*notificationv1.SlackTrigger
}

func (f *fakeSlackTriggers) ListSlackTriggers(context.Context, *notificationv1.ListSlackTriggersRequest, ...grpc.CallOption) (*notificationv1.ListSlackTriggersResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &notificationv1.ListSlackTriggersResponse{SlackTriggers: f.triggers}, nil
}

func (f *fakeSlackTriggers) CreateSlackTrigger(_ context.Context, in *notificationv1.CreateSlackTriggerRequest, _ ...grpc.CallOption) (*notificationv1.CreateSlackTriggerResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(in.GetAllowedUserIds()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "allowed_user_ids: at least one Slack user ID")
	}
	t := &notificationv1.SlackTrigger{Id: int64(len(f.triggers) + 1), Channel: in.GetChannel(), AllowedUserIds: in.GetAllowedUserIds(),
		Prefix: in.GetPrefix(), RequireMention: in.GetRequireMention(), GitRoot: in.GetGitRoot()}
	f.triggers = append(f.triggers, t)
	return &notificationv1.CreateSlackTriggerResponse{SlackTrigger: t}, nil
}

func (f *fakeSlackTriggers) DeleteSlackTrigger(_ context.Context, in *notificationv1.DeleteSlackTriggerRequest, _ ...grpc.CallOption) (*notificationv1.DeleteSlackTriggerResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, t := range f.triggers {
		if t.GetId() == in.GetTriggerId() {
			f.triggers = append(f.triggers[:i], f.triggers[i+1:]...)
			return &notificationv1.DeleteSlackTriggerResponse{}, nil
		}
	}
	return nil, status.Errorf(codes.NotFound, "slack trigger %d: slack trigger not found", in.GetTriggerId())
}

// The console lists, adds and deletes Slack triggers, with CSRF on every
// change; a refused form keeps what was typed and says why.
func TestTheConsoleManagesSlackTriggers(t *testing.T) {
	t.Parallel()
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	require.NoError(t, err)
	f := &fakes{roster: []string{adminUser}, page: newPageFakes()}
	triggers := &fakeSlackTriggers{fakeNotifications: fakeNotifications{f: f}}
	h, err := console.New(console.Clients{
		Lifecycle: fakeLifecycle{f: f}, Queue: fakeQueue{f: f}, Runner: fakeRunner{f: f}, Provenance: fakeProvenance{f: f},
		Notifications: triggers, SignIns: lineagefake.NewSignIns().Client(),
	}, console.Options{AdminUser: adminUser, PasswordHash: string(hash), Now: time.Now}, slogx.Discard())
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	b := testBundle{fakes: f, srv: srv}
	c := b.signedIn(t)

	a := b.get(t, c, "/console/slack/triggers")
	require.Equal(t, http.StatusOK, a.code, a.body)
	require.Contains(t, a.body, "No Slack triggers yet.")
	token := b.csrf(t, c, "/console/slack/triggers")

	a = b.post(t, c, "/console/slack/triggers", url.Values{"csrf": {token}, "channel": {"C1"}, "git_root": {hostile}})
	require.Equal(t, http.StatusUnprocessableEntity, a.code, a.body)
	require.Contains(t, a.body, "at least one Slack user ID")
	require.NotContains(t, a.body, hostile, "what was typed comes back escaped")
	require.Empty(t, triggers.triggers)

	a = b.post(t, c, "/console/slack/triggers", url.Values{"csrf": {"forged"}, "channel": {"C1"}, "allowed_user_ids": {"U1"}, "git_root": {"/r"}})
	require.Equal(t, http.StatusForbidden, a.code, a.body)
	require.Empty(t, triggers.triggers)

	a = b.post(t, c, "/console/slack/triggers", url.Values{"csrf": {token}, "channel": {"C1"}, "allowed_user_ids": {"U1, U2"},
		"prefix": {"zimmer:"}, "require_mention": {"1"}, "git_root": {"/r"}})
	require.Equal(t, http.StatusSeeOther, a.code, a.body)
	require.Len(t, triggers.triggers, 1)
	require.Equal(t, []string{"U1", " U2"}, triggers.triggers[0].GetAllowedUserIds(), "the service trims")
	require.True(t, triggers.triggers[0].GetRequireMention())
	a = b.get(t, c, "/console/slack/triggers")
	require.Equal(t, http.StatusOK, a.code, a.body)
	require.Contains(t, a.body, "Slack trigger added.")
	require.Contains(t, a.body, "starts with “zimmer:”")

	a = b.post(t, c, "/console/slack/triggers/1/delete", url.Values{"csrf": {token}})
	require.Equal(t, http.StatusSeeOther, a.code, a.body)
	require.Empty(t, triggers.triggers)
}
