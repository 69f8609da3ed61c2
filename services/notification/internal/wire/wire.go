// Package wire reads the protobuf messages of other contexts into the
// notification domain's types, once for every adapter that receives them
// (the lifecycle client and the effect consumer).
package wire

import (
	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/notification/internal/domain"
)

// Session is what notification needs of a lifecycle session.
func Session(s *lifecyclev1.Session) domain.Session {
	return domain.Session{
		ID:                s.GetId(),
		Title:             s.GetTitle(),
		Status:            s.GetStatus(),
		NeedsInputCount:   s.GetNeedsInputCount(),
		PushNotifications: s.GetPushNotifications(),
	}
}
