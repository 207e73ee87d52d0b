package recorder

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/newsflow/newsflow/machine/transcript"
	"github.com/newsflow/newsflow/runtime/testpeer/loopback"
)

// tcpPair returns both ends of a real loopback TCP connection.
var tcpPair = loopback.Pair

func TestRecorderSplitsLines(t *testing.T) {
	client, server := tcpPair(t)
	rec := NewRecorder(client, transcript.Client)
	done := make(chan error, 1)
	go func() {
		// The server writes lines split at odd places, then closes.
		for _, p := range []string{"200 he", "llo\r\n101 caps\r\nVERSION 2\r", "\n.\r\n", "bare\n", "tail"} {
			if _, err := server.Write([]byte(p)); err != nil {
				done <- err
				return
			}
			time.Sleep(time.Millisecond) // encourage separate reads; correctness does not depend on it
		}
		// Read what the client sent before closing, or the close resets.
		if _, err := io.ReadFull(server, make([]byte, len("CAPABILITIES\r\nMODE READER\r\nQUIT\r\n"))); err != nil {
			done <- err
			return
		}
		done <- server.Close()
	}()
	for _, p := range []string{"CAPA", "BILITIES\r\n", "MODE READER\r\nQUIT\r\n"} {
		if _, err := rec.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := io.Copy(io.Discard, rec); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	rec.Comment("done\nreading")
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	want := transcript.Transcript{
		transcript.Send(transcript.Client, "CAPABILITIES"),
		transcript.Send(transcript.Client, "MODE READER"),
		transcript.Send(transcript.Client, "QUIT"),
		transcript.Send(transcript.Server, "200 hello"),
		transcript.Send(transcript.Server, "101 caps"),
		transcript.Send(transcript.Server, "VERSION 2"),
		transcript.Send(transcript.Server, "."),
		{Kind: transcript.Data, Side: transcript.Server, Data: []byte("bare\n")},
		{Kind: transcript.Data, Side: transcript.Server, Data: []byte("tail")},
		{Kind: transcript.EOF, Side: transcript.Server},
		{Kind: transcript.Comment, Text: "done reading"},
		{Kind: transcript.EOF, Side: transcript.Client},
	}
	if d := cmp.Diff(want, rec.Transcript()); d != "" {
		t.Errorf("transcript (-want +got):\n%s", d)
	}
}

func TestRecorderPartialSnapshot(t *testing.T) {
	client, server := tcpPair(t)
	rec := NewRecorder(server, transcript.Server)
	if _, err := client.Write([]byte("IHAVE <a@b>\r\nTAKE")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 100)
	got := 0
	for got < 17 {
		n, err := rec.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		got += n
	}
	want := transcript.Transcript{transcript.Send(transcript.Client, "IHAVE <a@b>"), {Kind: transcript.Data, Side: transcript.Client, Data: []byte("TAKE")}}
	if d := cmp.Diff(want, rec.Transcript()); d != "" {
		t.Errorf("snapshot (-want +got):\n%s", d)
	}
	// The snapshot did not consume the partial line: it completes later.
	if _, err := client.Write([]byte("THIS <a@b>\r\n")); err != nil {
		t.Fatal(err)
	}
	for got < 29 {
		n, err := rec.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		got += n
	}
	want = transcript.Transcript{transcript.Send(transcript.Client, "IHAVE <a@b>"), transcript.Send(transcript.Client, "TAKETHIS <a@b>")}
	if d := cmp.Diff(want, rec.Transcript()); d != "" {
		t.Errorf("after completion (-want +got):\n%s", d)
	}
}

// TestRecorderConcurrent reads and writes from two goroutines at once (run
// with -race); every line of both directions must be recorded whole.
func TestRecorderConcurrent(t *testing.T) {
	client, server := tcpPair(t)
	rec := NewRecorder(client, transcript.Client)
	const n = 200
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { // the peer echoes lines back
		defer wg.Done()
		sc := bufio.NewScanner(server)
		for sc.Scan() {
			if _, err := server.Write([]byte("ok " + sc.Text() + "\n")); err != nil {
				return
			}
		}
		server.Close()
	}()
	go func() {
		defer wg.Done()
		for i := 0; i < n; i++ {
			if _, err := rec.Write([]byte("line " + string(rune('a'+i%26)) + "\r\n")); err != nil {
				t.Error(err)
				return
			}
		}
		client.(*net.TCPConn).CloseWrite()
	}()
	go func() {
		defer wg.Done()
		io.Copy(io.Discard, rec)
	}()
	wg.Wait()
	var c, s int
	for _, e := range rec.Transcript() {
		if e.Kind != transcript.Data {
			continue
		}
		if e.Side == transcript.Client {
			c++
			if string(e.Data[:5]) != "line " || len(e.Data) != 8 {
				t.Errorf("client line %q", e.Data)
			}
		} else {
			s++
			if string(e.Data[:8]) != "ok line " {
				t.Errorf("server line %q", e.Data)
			}
		}
	}
	if c != n || s != n {
		t.Errorf("recorded %d client and %d server lines, want %d each", c, s, n)
	}
}

func TestRecorderTimes(t *testing.T) {
	client, server := tcpPair(t)
	clock := transcript.Epoch
	tick := func(d time.Duration) { clock = clock.Add(d) }
	rec := NewRecorder(client, transcript.Client, WithTimes(time.Millisecond, func() time.Time { return clock }))
	tick(1500 * time.Microsecond) // rounds up to 2ms
	rec.Write([]byte("A\r\n"))
	tick(400 * time.Microsecond) // 1.9ms: still within the 2ms already marked
	rec.Write([]byte("B\r\n"))
	tick(3 * time.Second)
	rec.Close()
	server.Close()
	want := transcript.Transcript{
		{Kind: transcript.Advance, D: 2 * time.Millisecond},
		transcript.Send(transcript.Client, "A"),
		transcript.Send(transcript.Client, "B"),
		{Kind: transcript.Advance, D: 3 * time.Second},
		{Kind: transcript.EOF, Side: transcript.Client},
	}
	if d := cmp.Diff(want, rec.Transcript()); d != "" {
		t.Errorf("timed transcript (-want +got):\n%s", d)
	}
}

// selfSigned makes a certificate for 127.0.0.1 valid for an hour.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "newsflow test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}

func TestRecorderStartTLS(t *testing.T) {
	cert, pool := selfSigned(t)
	for _, tc := range []struct {
		name string
		pool *x509.CertPool
		want transcript.Transcript
	}{
		{"ok", pool, transcript.Transcript{
			transcript.Send(transcript.Client, "STARTTLS"), transcript.Send(transcript.Server, "382 go"), {Kind: transcript.TLS},
			transcript.Send(transcript.Client, "CAPABILITIES"), transcript.Send(transcript.Server, "101 secret"),
		}},
		{"untrusted", x509.NewCertPool(), transcript.Transcript{
			transcript.Send(transcript.Client, "STARTTLS"), transcript.Send(transcript.Server, "382 go"),
			{Kind: transcript.TLSFail, Text: "tls: failed to verify certificate: x509: certificate signed by unknown authority"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, server := tcpPair(t)
			rec := NewRecorder(client, transcript.Client)
			go func() {
				br := bufio.NewReader(server)
				br.ReadString('\n')
				server.Write([]byte("382 go\r\n"))
				ts := tls.Server(server, &tls.Config{Certificates: []tls.Certificate{cert}})
				if ts.Handshake() != nil {
					server.Close()
					return
				}
				bts := bufio.NewReader(ts)
				bts.ReadString('\n')
				ts.Write([]byte("101 secret\r\n"))
			}()
			rec.Write([]byte("STARTTLS\r\n"))
			br := bufio.NewReader(rec)
			if _, err := br.ReadString('\n'); err != nil {
				t.Fatal(err)
			}
			err := rec.StartTLS(context.Background(), &tls.Config{RootCAs: tc.pool, ServerName: "127.0.0.1"})
			if err == nil {
				rec.Write([]byte("CAPABILITIES\r\n"))
				if _, err := bufio.NewReader(rec).ReadString('\n'); err != nil {
					t.Fatal(err)
				}
			}
			if d := cmp.Diff(tc.want, rec.Transcript()); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}
