package sink

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/smtp"
	"net/textproto"
	"strings"
	"time"
)

// Email sends the message over SMTP with net/smtp: STARTTLS whenever the
// server offers it, and PLAIN auth when a username is configured (net/smtp
// refuses to send PLAIN credentials unencrypted except to localhost).
type Email struct {
	Addr     string // host:port
	From     string
	To       []string
	Username string
	Password string
	// TLSConfig is used for STARTTLS; nil verifies the server against the
	// host part of Addr.
	TLSConfig *tls.Config
	// Timeout bounds the whole SMTP conversation (0: only ctx bounds it).
	Timeout time.Duration
	Now     func() time.Time // nil: time.Now
}

var _ Sink = Email{}

// Name implements Sink.
func (Email) Name() string { return "email" }

// Send implements Sink.
func (e Email) Send(ctx context.Context, m Message) error {
	host, _, err := net.SplitHostPort(e.Addr)
	if err != nil {
		return permanent(e.Name(), fmt.Errorf("SMTP address %q: %w", e.Addr, err))
	}
	if e.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, e.Timeout)
		defer cancel()
	}
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", e.Addr)
	if err != nil {
		return transient(e.Name(), err)
	}
	defer conn.Close()
	// net/smtp has no context: the deadline bounds the whole conversation,
	// and cancellation closes the connection under it.
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()

	if err := e.converse(conn, host, m); err != nil {
		return classifySMTP(e.Name(), err)
	}
	return nil
}

func (e Email) converse(conn net.Conn, host string, m Message) error {
	c, err := smtp.NewClient(conn, host)
	if err != nil {
		return err
	}
	defer c.Close()
	if ok, _ := c.Extension("STARTTLS"); ok {
		cfg := e.TLSConfig
		if cfg == nil {
			cfg = &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
		}
		if err := c.StartTLS(cfg); err != nil {
			return fmt.Errorf("STARTTLS: %w", err)
		}
	}
	if e.Username != "" {
		if err := c.Auth(smtp.PlainAuth("", e.Username, e.Password, host)); err != nil {
			return fmt.Errorf("AUTH: %w", err)
		}
	}
	if err := c.Mail(e.From); err != nil {
		return fmt.Errorf("MAIL FROM: %w", err)
	}
	for _, to := range e.To {
		if err := c.Rcpt(to); err != nil {
			return fmt.Errorf("RCPT TO %s: %w", to, err)
		}
	}
	w, err := c.Data()
	if err != nil {
		return fmt.Errorf("DATA: %w", err)
	}
	if _, err := w.Write(e.compose(m)); err != nil {
		return fmt.Errorf("DATA: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("DATA: %w", err)
	}
	return c.Quit()
}

// compose renders an RFC 5322 message: UTF-8 subject encoded per RFC 2047,
// quoted-printable text body so any line length and charset survive.
func (e Email) compose(m Message) []byte {
	now := time.Now
	if e.Now != nil {
		now = e.Now
	}
	prefix := "[zimmer] "
	if m.Kind == KindAlert {
		prefix = "[zimmer alert] "
	}
	var b bytes.Buffer
	header := func(k, v string) { fmt.Fprintf(&b, "%s: %s\r\n", k, v) }
	header("From", e.From)
	header("To", strings.Join(e.To, ", "))
	header("Subject", mime.QEncoding.Encode("utf-8", prefix+m.Title))
	header("Date", now().Format(time.RFC1123Z))
	if m.DedupKey != "" {
		header("X-Zimmer-Dedup-Key", mime.QEncoding.Encode("utf-8", m.DedupKey))
	}
	header("MIME-Version", "1.0")
	header("Content-Type", "text/plain; charset=utf-8")
	header("Content-Transfer-Encoding", "quoted-printable")
	b.WriteString("\r\n")
	qp := quotedprintable.NewWriter(&b)
	text := m.Body
	if m.SessionID != "" {
		text += "\n\nSession: " + m.SessionID
	}
	if m.URL != "" {
		text += "\n" + m.URL
	}
	_, _ = qp.Write([]byte(strings.ReplaceAll(text, "\n", "\r\n")))
	_ = qp.Close()
	return b.Bytes()
}

// classifySMTP: the server's 4xx replies are temporary by definition (RFC
// 5321 §4.2.1) and 5xx permanent; a conversation cut short (connection
// refused or reset, timeout) is transient; anything else (an untrusted TLS
// certificate, plain auth refused without TLS, a bad address) will fail the
// same way next time, so it is permanent.
func classifySMTP(sink string, err error) error {
	var reply *textproto.Error
	if errors.As(err, &reply) {
		if reply.Code >= 400 && reply.Code < 500 {
			return transient(sink, err)
		}
		return permanent(sink, err)
	}
	var netErr net.Error
	if errors.As(err, &netErr) || errors.Is(err, net.ErrClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return transient(sink, err)
	}
	return permanent(sink, err)
}
