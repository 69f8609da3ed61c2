package principal

import (
	"context"
	"encoding/json"
	"fmt"

	"google.golang.org/grpc/metadata"
)

// MetadataKey carries a forwarded principal from the gateway to a service.
const MetadataKey = "x-zimmer-principal"

// Outgoing returns ctx forwarding p to the called service. Only a caller
// that authenticates as a service is believed (see Incoming); anyone else
// sending it is refused.
func Outgoing(ctx context.Context, p Principal) (context.Context, error) {
	b, err := json.Marshal(wire(p))
	if err != nil {
		return ctx, fmt.Errorf("encode principal: %w", err)
	}
	return metadata.AppendToOutgoingContext(ctx, MetadataKey, string(b)), nil
}

// Forwarded returns the principal a call's metadata forwards, if any. The
// caller must already have established that the direct caller is a service.
func Forwarded(ctx context.Context) (Principal, bool, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	v := md.Get(MetadataKey)
	if len(v) == 0 {
		return Principal{}, false, nil
	}
	if len(v) > 1 {
		return Principal{}, false, fmt.Errorf("%s sent %d times", MetadataKey, len(v))
	}
	var w wirePrincipal
	if err := json.Unmarshal([]byte(v[0]), &w); err != nil {
		return Principal{}, false, fmt.Errorf("decode %s: %w", MetadataKey, err)
	}
	return w.principal(), true, nil
}

// wirePrincipal is Principal's form in metadata: the domain type carries
// no encoding tags.
type wirePrincipal struct {
	Kind         Kind     `json:"kind"`
	KeyHint      string   `json:"key_hint,omitempty"`
	SessionID    int64    `json:"session_id,omitempty"`
	CredentialID string   `json:"credential_id,omitempty"`
	Scopes       []string `json:"scopes,omitempty"`
	Service      string   `json:"service,omitempty"`
}

func wire(p Principal) wirePrincipal { return wirePrincipal(p) }

func (w wirePrincipal) principal() Principal { return Principal(w) }
