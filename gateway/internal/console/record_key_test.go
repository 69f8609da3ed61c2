package console_test

import (
	"net/http"
	"net/url"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/gateway/internal/console"
)

// A follow-up form sent twice (a double click, a resubmit after a lost
// answer) reaches lineage twice under one key, the form's, namespaced by
// its boundary: lineage records it once (its own test proves that half).
func TestAResubmittedFollowUpIsRecordedUnderTheFormsKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.signedIn(t)
	page := b.get(t, c, "/console/sessions/7").body
	token := csrfField.FindStringSubmatch(page)[1]
	key := regexp.MustCompile(`action="/console/sessions/7/follow-up"[^>]*>\s*<input[^>]*>\s*<input type="hidden" name="idempotency_key" value="([^"]+)"`).FindStringSubmatch(page)
	require.NotNil(t, key, page)
	form := url.Values{"csrf": {token}, "idempotency_key": {key[1]}, "prompt": {"go on"}}
	for range 2 {
		a := b.post(t, c, "/console/sessions/7/follow-up", form)
		require.Equal(t, http.StatusSeeOther, a.code, a.body)
	}
	b.fakes.mu.Lock()
	defer b.fakes.mu.Unlock()
	require.Len(t, b.fakes.recorded, 2)
	for _, r := range b.fakes.recorded {
		require.Equal(t, console.ProvenanceFollowUp+"/"+key[1], r.GetIdempotencyKey())
	}
}
