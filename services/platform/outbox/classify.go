package outbox

import (
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// failureClass is what a failed delivery means for its message.
type failureClass int

const (
	// transient: the subscriber could not take the message now (down,
	// overloaded, too slow); retried with backoff for as long as it takes.
	transient failureClass = iota
	// permanentFailure: the subscriber answered, and retrying the same
	// message may never help (a bug, a missing method, a refused key);
	// retried until Relay.DeadAfter of them, then parked as dead.
	permanentFailure
	// rejected: the subscriber says the message itself is invalid; parked
	// as dead at once.
	rejected
	// unreachable: the subscriber is not there (gRPC Unavailable: down,
	// restarting, not yet started). Retried within PollInterval, so a
	// backlog flows within a second of the subscriber coming back, and the
	// round stops: the rest of the batch waits untouched instead of each
	// message failing in turn, so an outage costs one probe per poll.
	unreachable
)

func (c failureClass) String() string {
	switch c {
	case permanentFailure:
		return "permanent"
	case unreachable:
		return "unreachable"
	case rejected:
		return "rejected"
	default:
		return "transient"
	}
}

// Reject marks a DeliverFunc's own error as one no retry can fix (e.g. a
// payload that does not decode), so the message is parked as dead at once.
func Reject(err error) error { return rejection{err} }

type rejection struct{ err error }

func (r rejection) Error() string { return r.err.Error() }
func (r rejection) Unwrap() error { return r.err }

// classify is the one place a failed delivery is classified. Every
// subscriber is a gRPC service implementing its producer's consumer
// contract, so the status code says what the subscriber meant; the relay,
// which acts on the class, reads it here rather than each DeliverFunc
// deciding for itself. An error with no status is not the subscriber's
// answer (it is the DeliverFunc's own, e.g. a request it could not build)
// and is transient, unless the DeliverFunc wrapped it with Reject.
//
// Internal and Unknown count as permanent, not transient, although a
// subscriber whose database is down may answer Internal: the cap of
// DeadAfter failures with backoff gives such an outage a quarter of an
// hour, and a dead message raises an alert and can be re-driven, while a
// bug retried forever only fills the logs.
func classify(err error) failureClass {
	if errors.As(err, new(rejection)) {
		return rejected
	}
	st, ok := status.FromError(err)
	if !ok {
		return transient
	}
	switch st.Code() {
	case codes.InvalidArgument:
		return rejected
	case codes.Unavailable:
		return unreachable
	case codes.DeadlineExceeded, codes.ResourceExhausted, codes.Aborted, codes.Canceled:
		return transient
	default:
		return permanentFailure
	}
}
