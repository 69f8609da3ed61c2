package sink_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"io"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/http"
	"net/http/httptest"
	"net/mail"
	"net/textproto"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/notification/internal/sink"
)

// smtpMail is what the in-test SMTP server received in one transaction.
type smtpMail struct {
	auth, from string
	to         []string
	data       []byte
	overTLS    bool
}

// startSMTP runs a minimal SMTP server on loopback speaking what net/smtp's
// client needs (EHLO with AUTH PLAIN, STARTTLS when tlsConfig is set, MAIL,
// RCPT, DATA, RSET, QUIT); each RCPT is answered rcptReply. Without TLS the
// plain-auth path is the loopback exception net/smtp allows.
func startSMTP(t *testing.T, rcptReply string, tlsConfig *tls.Config) (string, <-chan smtpMail) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	got := make(chan smtpMail, 4)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go serveSMTP(conn, rcptReply, tlsConfig, got)
		}
	}()
	return ln.Addr().String(), got
}

func serveSMTP(conn net.Conn, rcptReply string, tlsConfig *tls.Config, got chan<- smtpMail) {
	defer func() { _ = conn.Close() }()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	tp := textproto.NewConn(conn)
	reply := func(line string) { _ = tp.PrintfLine("%s", line) }
	reply("220 test.local ESMTP")
	var m smtpMail
	for {
		line, err := tp.ReadLine()
		if err != nil {
			return
		}
		verb, arg, _ := strings.Cut(line, " ")
		switch strings.ToUpper(verb) {
		case "EHLO":
			reply("250-test.local")
			if tlsConfig != nil && !m.overTLS {
				reply("250-STARTTLS")
			}
			reply("250-8BITMIME")
			reply("250 AUTH PLAIN")
		case "STARTTLS":
			reply("220 2.0.0 Ready to start TLS")
			conn = tls.Server(conn, tlsConfig)
			tp = textproto.NewConn(conn)
			m = smtpMail{overTLS: true}
		case "AUTH":
			m.auth = arg
			reply("235 2.7.0 Authentication successful")
		case "MAIL":
			m.from = arg
			reply("250 2.1.0 OK")
		case "RCPT":
			m.to = append(m.to, arg)
			reply(rcptReply)
		case "DATA":
			reply("354 End data with <CR><LF>.<CR><LF>")
			data, err := tp.ReadDotBytes()
			if err != nil {
				return
			}
			m.data = data
			got <- m
			m = smtpMail{overTLS: m.overTLS}
			reply("250 2.0.0 queued")
		case "RSET":
			m = smtpMail{overTLS: m.overTLS}
			reply("250 2.0.0 OK")
		case "QUIT":
			reply("221 2.0.0 Bye")
			return
		default:
			reply("502 5.5.2 command not recognized")
		}
	}
}

func TestEmailIsDeliveredOverSMTPWithPlainAuth(t *testing.T) {
	t.Parallel()
	addr, got := startSMTP(t, "250 2.1.5 OK", nil)
	e := sink.Email{
		Addr: addr, From: "zimmer@example.com", To: []string{"op@example.com", "oncall@example.com"},
		Username: "zimmer", Password: "pw", Timeout: 5 * time.Second,
		Now: func() time.Time { return sentAt },
	}
	msg := pushMessage()
	msg.Title = "Session needs input — café"

	require.NoError(t, e.Send(context.Background(), msg))
	m := <-got

	creds, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(m.auth, "PLAIN "))
	require.NoError(t, err)
	require.Equal(t, "\x00zimmer\x00pw", string(creds))
	require.False(t, m.overTLS, "the server offered no STARTTLS")
	require.Equal(t, "FROM:<zimmer@example.com>", strings.Fields(m.from)[0])
	require.Len(t, m.to, 2)
	require.Equal(t, "TO:<op@example.com>", m.to[0])

	parsed, err := mail.ReadMessage(strings.NewReader(string(m.data)))
	require.NoError(t, err)
	subject, err := new(mime.WordDecoder).DecodeHeader(parsed.Header.Get("Subject"))
	require.NoError(t, err)
	require.Equal(t, "[zimmer] Session needs input — café", subject)
	require.Equal(t, "op@example.com, oncall@example.com", parsed.Header.Get("To"))
	date, err := parsed.Header.Date()
	require.NoError(t, err)
	require.True(t, date.Equal(sentAt))
	require.Equal(t, "needs_input:sess-1:3", parsed.Header.Get("X-Zimmer-Dedup-Key"))
	body, err := io.ReadAll(quotedprintable.NewReader(parsed.Body))
	require.NoError(t, err)
	// ReadDotBytes turns CRLF into LF; the DATA writer ends the last line.
	require.Equal(t, "fix-login is waiting for you\n\nSession: sess-1\nhttps://zimmer.example/sessions/sess-1\n", string(body))
}

func TestEmailFailuresAreClassifiedByReplyCode(t *testing.T) {
	t.Parallel()
	send := func(addr string) error {
		return sink.Email{Addr: addr, From: "zimmer@example.com", To: []string{"op@example.com"}, Timeout: 5 * time.Second}.
			Send(context.Background(), pushMessage())
	}

	addr, _ := startSMTP(t, "550 5.1.1 no such user", nil)
	err := send(addr)
	require.Error(t, err)
	require.False(t, sink.Retryable(err), "5xx is permanent: %v", err)
	require.Contains(t, err.Error(), "no such user")

	addr, _ = startSMTP(t, "451 4.3.0 try again later", nil)
	err = send(addr)
	require.Error(t, err)
	require.True(t, sink.Retryable(err), "4xx is transient: %v", err)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	refused := ln.Addr().String()
	require.NoError(t, ln.Close())
	err = send(refused)
	require.Error(t, err)
	require.True(t, sink.Retryable(err), "connection refused is transient: %v", err)
}

func TestEmailUpgradesWithSTARTTLSWhenOffered(t *testing.T) {
	t.Parallel()
	// httptest's certificate is valid for 127.0.0.1; borrow it and its pool.
	certSrv := httptest.NewTLSServer(http.NotFoundHandler())
	t.Cleanup(certSrv.Close)
	roots := x509.NewCertPool()
	roots.AddCert(certSrv.Certificate())
	addr, got := startSMTP(t, "250 2.1.5 OK", &tls.Config{Certificates: certSrv.TLS.Certificates, MinVersion: tls.VersionTLS12})

	e := sink.Email{
		Addr: addr, From: "zimmer@example.com", To: []string{"op@example.com"},
		Username: "zimmer", Password: "pw", Timeout: 5 * time.Second,
		TLSConfig: &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12},
	}
	require.NoError(t, e.Send(context.Background(), pushMessage()))
	m := <-got
	require.True(t, m.overTLS, "credentials and mail went over TLS")
	require.NotEmpty(t, m.auth)

	// A server whose certificate the client does not trust is refused, not
	// retried: the same certificate will be presented again.
	e.TLSConfig = &tls.Config{ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
	err := e.Send(context.Background(), pushMessage())
	require.Error(t, err)
	require.False(t, sink.Retryable(err), "untrusted certificate: %v", err)
}
