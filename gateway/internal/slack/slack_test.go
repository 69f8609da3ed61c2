package slack_test

import (
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/gateway/internal/slack"
)

// Slack's documented example: the signing secret, timestamp, body and the
// signature Slack computed for them.
const (
	docSecret = "8f742231b10e8888abcd99yyyzzz85a5"
	docTS     = "1531420618"
	docBody   = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
	docSig    = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"
)

func header(ts, sig string) http.Header {
	h := http.Header{}
	h.Set("X-Slack-Request-Timestamp", ts)
	h.Set("X-Slack-Signature", sig)
	return h
}

func TestVerifyAsSlackDocumentsIt(t *testing.T) {
	t.Parallel()
	sent, err := strconv.ParseInt(docTS, 10, 64)
	require.NoError(t, err)
	at := time.Unix(sent, 0)
	require.Equal(t, docSig, "v0="+hex.EncodeToString(slack.Sign([]byte(docSecret), docTS, []byte(docBody))), "Slack's own example")

	require.NoError(t, slack.Verify([]byte(docSecret), header(docTS, docSig), []byte(docBody), at))
	require.NoError(t, slack.Verify([]byte(docSecret), header(docTS, docSig), []byte(docBody), at.Add(slack.MaxAge)), "five minutes is still fresh")
	require.ErrorIs(t, slack.Verify([]byte(docSecret), header(docTS, docSig), []byte(docBody), at.Add(slack.MaxAge+time.Second)), slack.ErrStale)
	require.ErrorIs(t, slack.Verify([]byte(docSecret), header(docTS, docSig), []byte(docBody), at.Add(-slack.MaxAge-time.Second)), slack.ErrStale)
	require.ErrorIs(t, slack.Verify([]byte("another"), header(docTS, docSig), []byte(docBody), at), slack.ErrBadSignature)
	require.ErrorIs(t, slack.Verify([]byte(docSecret), header(docTS, docSig), []byte(docBody+"x"), at), slack.ErrBadSignature)
	require.ErrorIs(t, slack.Verify([]byte(docSecret), header(docTS, "v1"+docSig[2:]), []byte(docBody), at), slack.ErrBadSignature)
	require.ErrorIs(t, slack.Verify([]byte(docSecret), header(docTS, "v0=zz"), []byte(docBody), at), slack.ErrBadSignature)
	require.ErrorIs(t, slack.Verify([]byte(docSecret), header("", docSig), []byte(docBody), at), slack.ErrNoSignature)
	require.ErrorIs(t, slack.Verify([]byte(docSecret), header("soon", docSig), []byte(docBody), at), slack.ErrNoSignature)
	require.ErrorIs(t, slack.Verify([]byte(docSecret), http.Header{}, []byte(docBody), at), slack.ErrNoSignature)
}

func TestParseEnvelope(t *testing.T) {
	t.Parallel()
	e, err := slack.ParseEnvelope([]byte(`{"token":"x","challenge":"abc","type":"url_verification"}`))
	require.NoError(t, err)
	require.Equal(t, slack.Envelope{Type: "url_verification", Challenge: "abc"}, e)
	e, err = slack.ParseEnvelope([]byte(`{"type":"event_callback","event_id":"Ev1","event":{}}`))
	require.NoError(t, err)
	require.Equal(t, "Ev1", e.EventID)
	for _, body := range []string{`{`, `{"type":"url_verification"}`, `{"type":"event_callback"}`} {
		_, err := slack.ParseEnvelope([]byte(body))
		require.Error(t, err, body)
	}
}

// FuzzVerify: no header or body makes Verify panic or accept what the
// secret did not sign.
func FuzzVerify(f *testing.F) {
	f.Add(docTS, docSig, []byte(docBody))
	f.Add("", "", []byte(nil))
	f.Add("-99999999999999999999", "v0=", []byte("{}"))
	sent, _ := strconv.ParseInt(docTS, 10, 64)
	at := time.Unix(sent, 0)
	f.Fuzz(func(t *testing.T, ts, sig string, body []byte) {
		err := slack.Verify([]byte(docSecret), header(ts, sig), body, at)
		if err == nil {
			require.True(t, strings.EqualFold("v0="+hex.EncodeToString(slack.Sign([]byte(docSecret), ts, body)), sig), sig)
		}
		_, _ = slack.ParseEnvelope(body)
	})
}
