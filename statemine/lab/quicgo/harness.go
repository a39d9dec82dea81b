package quicgo

// One lab run: a quic-go server and client transferring objects over the emulated path.
// Transfer must run inside a testing/synctest bubble (see lab_test.go), so every
// time.Now, timer and sleep below is virtual.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
)

// ALPN is the application protocol of the lab: the client sends an object's size as an
// 8-byte big-endian integer on a new stream and closes its side; the server answers
// with that many bytes and closes.
const ALPN = "statemine-lab"

// serverName is the name in the lab's test certificate.
const serverName = "statemine.lab"

// certTime is the clock TLS checks the certificate against: virtual time starts in
// 2000, before the certificate's validity (2020-2099).
var certTime = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// TLSConfigs builds the server and client TLS configurations from a PEM certificate
// and key (the client trusts exactly that certificate).
func TLSConfigs(certPEM, keyPEM []byte) (server, client *tls.Config, err error) {
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("lab certificate: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(certPEM) {
		return nil, nil, errors.New("lab certificate: no certificate in PEM")
	}
	now := func() time.Time { return certTime }
	server = &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{ALPN}, Time: now}
	client = &tls.Config{RootCAs: pool, ServerName: serverName, NextProtos: []string{ALPN}, Time: now}
	return server, client, nil
}

// ErrTimeLimit is returned when the run has not finished within the virtual time limit.
var ErrTimeLimit = errors.New("virtual time limit reached")

// AppReader is the mobile client's application (docs/lab-protocol.md): its own thread,
// it reads the streams' data from quic-go and consumes it at rate bits/s, all streams
// together in the order read. quic-go returns flow-control credit for data read, so
// unread data holds the sender back. Once the transport has every byte (transport
// closed) the application takes the rest at once (credit no longer matters, and the
// connection is about to close) and only accounts for the time consuming it takes.
// A nil *AppReader reads as fast as data arrives (desktop).
type AppReader struct {
	mu        sync.Mutex
	rate      *ReadRate
	start     time.Time       // time 0 of the read-rate schedule
	free      time.Time       // when the application will have consumed all it read
	transport <-chan struct{} // closed when the transport has every byte
}

// DefaultReadInterval is how often the read rate is redrawn unless the config says, s.
const DefaultReadInterval = 0.1

// NewAppReader is the client application for profile c of run seed (nil: desktop);
// transport is closed when the client's transport has received every byte. Its read
// rate (see ReadRate) starts now.
func NewAppReader(c *Client, seed int64, transport <-chan struct{}) *AppReader {
	if c.Profile != "mobile" {
		return nil
	}
	interval := c.ReadRateIntervalS
	if interval == 0 {
		interval = DefaultReadInterval
	}
	now := time.Now()
	return &AppReader{rate: NewReadRate(*c.ReadRateBps, c.ReadRateCV, interval, seed), start: now, free: now,
		transport: transport}
}

// consume takes n bytes just read: it returns when the application has consumed them
// (or at once when the transport has every byte).
func (a *AppReader) consume(n int) {
	if a == nil || n == 0 {
		return
	}
	a.mu.Lock()
	if now := time.Now(); a.free.Before(now) {
		a.free = now
	}
	rate := a.rate.At(a.free.Sub(a.start).Seconds()) // the rate in force when reading starts
	a.free = a.free.Add(time.Duration(8 * float64(n) / rate * 1e9))
	until := a.free
	a.mu.Unlock()
	t := time.NewTimer(time.Until(until))
	defer t.Stop()
	select {
	case <-t.C:
	case <-a.transport:
	}
}

// finished is when the application has consumed everything it read.
func (a *AppReader) finished() time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.free
}

// serveObject answers one request on stream s.
func serveObject(s io.ReadWriteCloser) error {
	var hdr [8]byte
	if _, err := io.ReadFull(s, hdr[:]); err != nil {
		return err
	}
	remaining := binary.BigEndian.Uint64(hdr[:])
	buf := make([]byte, 32<<10)
	for remaining > 0 {
		n := uint64(len(buf))
		if remaining < n {
			n = remaining
		}
		if _, err := s.Write(buf[:n]); err != nil {
			return err
		}
		remaining -= n
	}
	return s.Close()
}

// fetchObject requests size bytes on stream s and reads them; it returns when the
// server closed the stream, adding every byte read to got.
func fetchObject(s io.ReadWriteCloser, size int, app *AppReader, got *atomic.Int64) error {
	var hdr [8]byte
	binary.BigEndian.PutUint64(hdr[:], uint64(size))
	if _, err := s.Write(hdr[:]); err != nil {
		return err
	}
	if err := s.Close(); err != nil {
		return err
	}
	buf := make([]byte, 16<<10)
	total := 0
	for {
		n, err := s.Read(buf)
		total += n
		got.Add(int64(n))
		app.consume(n)
		if err == io.EOF {
			if total != size {
				return fmt.Errorf("object of %d bytes ended after %d", size, total)
			}
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// quic-go's default maximum receive windows (auto-tuning grows the windows up to them).
const (
	defaultMaxStreamWindow = 6 << 20
	defaultMaxConnWindow   = 15 << 20
)

// clientQUICConfig sets the client's initial flow-control windows from the profile.
func clientQUICConfig(c *Client) *quic.Config {
	conf := &quic.Config{}
	if c.MaxStreamDataBytes != nil {
		conf.InitialStreamReceiveWindow = uint64(*c.MaxStreamDataBytes)
		conf.MaxStreamReceiveWindow = max(uint64(*c.MaxStreamDataBytes), defaultMaxStreamWindow)
	}
	if c.MaxDataBytes != nil {
		conf.InitialConnectionReceiveWindow = uint64(*c.MaxDataBytes)
		conf.MaxConnectionReceiveWindow = max(uint64(*c.MaxDataBytes), defaultMaxConnWindow)
	}
	return conf
}

// Outcome is what Transfer measured.
type Outcome struct {
	PLT      time.Duration // client's first packet (the dial) to the last byte of the last object
	Received int64         // bytes of object data the client read
}

// Transfer runs the client/server transfer of cfg between the packet connections
// server and client (the client dials server.LocalAddr()) and tears everything down
// (connections, transports, both packet connections) before returning. The mobile
// client's application reads at cfg.Client.ReadRateBps (see AppReader) and the client
// closes the connection as soon as its transport has every byte; the desktop client
// reads as data arrives and closes when it has read everything.
func Transfer(cfg *Config, server, client net.PacketConn, serverTLS, clientTLS *tls.Config) (Outcome, error) {
	var out Outcome
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(cfg.TimeLimitS*1e9))
	defer cancel()
	serverConf := &quic.Config{MaxIncomingStreams: int64(max(100, cfg.Objects.Count))}
	clientConf := clientQUICConfig(&cfg.Client)
	var rx *Arrivals
	var app *AppReader
	if cfg.Client.Profile == "mobile" {
		rx = NewArrivals(int64(cfg.Objects.Count) * int64(cfg.Objects.SizeBytes))
		app = NewAppReader(&cfg.Client, cfg.Seed, rx.Done())
	}
	setTracer(serverConf, nil)
	setTracer(clientConf, rx)

	serverTr := &quic.Transport{Conn: server}
	clientTr := &quic.Transport{Conn: client}
	var wg sync.WaitGroup
	defer func() {
		serverTr.Close()
		clientTr.Close()
		server.Close()
		client.Close()
		wg.Wait()
	}()
	ln, err := serverTr.Listen(serverTLS, serverConf)
	if err != nil {
		return out, err
	}
	defer ln.Close()
	serverClosed := make(chan (<-chan struct{}), 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		conn, err := ln.Accept(ctx)
		if err != nil {
			return
		}
		serverClosed <- conn.Context().Done()
		for {
			s, err := conn.AcceptStream(ctx)
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = serveObject(s)
			}()
		}
	}()

	dialed := time.Now()
	conn, err := clientTr.Dial(ctx, server.LocalAddr(), clientTLS, clientConf)
	if err != nil {
		if ctx.Err() != nil {
			return out, ErrTimeLimit
		}
		return out, fmt.Errorf("handshake: %w", err)
	}
	// Reads do not take a context: closing the connection ends them at the time limit.
	stop := context.AfterFunc(ctx, func() { conn.CloseWithError(2, ErrTimeLimit.Error()) })
	defer stop()
	var got atomic.Int64
	type done struct {
		err error
		at  time.Time
	}
	results := make(chan done, cfg.Objects.Count)
	for i := 0; i < cfg.Objects.Count; i++ {
		s, err := conn.OpenStreamSync(ctx)
		if err != nil {
			results <- done{err: err}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := fetchObject(s, cfg.Objects.SizeBytes, app, &got)
			results <- done{err: err, at: time.Now()}
		}()
	}
	var last time.Time
	var firstErr error
	for i := 0; i < cfg.Objects.Count; i++ {
		r := <-results
		if r.err != nil && firstErr == nil {
			firstErr = r.err
		}
		if r.at.After(last) {
			last = r.at
		}
	}
	out.Received = got.Load()
	if ctx.Err() != nil {
		return out, ErrTimeLimit
	}
	if firstErr != nil {
		conn.CloseWithError(1, "failed")
		return out, firstErr
	}
	if app != nil && app.finished().After(last) {
		last = app.finished() // the application is still consuming what it read
	}
	out.PLT = last.Sub(dialed)
	conn.CloseWithError(0, "done")
	// Let the server see the CONNECTION_CLOSE (it may be lost: then the transport's
	// close below ends the server's connection).
	select {
	case closed := <-serverClosed:
		select {
		case <-closed:
		case <-time.After(2 * time.Second):
		}
	case <-time.After(2 * time.Second):
	}
	return out, nil
}
