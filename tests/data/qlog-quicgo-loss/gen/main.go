// The generator of statemine's quic-go qlogs with losses (tests/data/qlog-quicgo-loss).
//
// One process, all on loopback (127.0.0.1): an unmodified quic-go server, a relay and a
// client. The client opens a stream, the server sends -bytes on it and the connection
// closes; -conns connections one after the other. The server writes qlog through quic-go's
// own qlog.DefaultConnectionTracer into $QLOGDIR/<i>/ (quic-go's file name
// <odcid>_server.sqlog); the client writes none.
//
// The relay is the path: both directions -delay ms; the server-to-client direction also
// has a -rate bit/s bottleneck with a drop-tail queue of -queue bytes, seeded random loss
// (-loss, Bernoulli per packet) and seeded jitter (each packet delayed by a further
// uniform 0..-jitter ms, so packets overtake each other: reordering). It prints one JSON
// line per connection: the packets it forwarded, dropped at random and dropped at the
// queue in each direction (its ground truth).
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"math/big"
	mrand "math/rand"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/qlog"
)

type pathConfig struct {
	delay, jitter time.Duration
	rate          float64 // bit/s, server to client
	queue         int     // bytes
	loss          float64
}

type counts struct {
	Conn         int `json:"conn"`
	Down         int `json:"down_packets"`
	DownRandom   int `json:"down_dropped_random"`
	DownQueue    int `json:"down_dropped_queue"`
	Up           int `json:"up_packets"`
	DownReorders int `json:"down_overtaken"`
}

// relay forwards between one client and the server with the path of cfg.
type relay struct {
	conn    *net.UDPConn
	server  *net.UDPAddr
	cfg     pathConfig
	rng     *mrand.Rand
	mu      sync.Mutex
	client  *net.UDPAddr
	free    time.Time // when the bottleneck is free again
	lastDue time.Time // latest delivery time scheduled downstream
	counts  counts
}

func (r *relay) run() {
	buf := make([]byte, 65536)
	for {
		n, from, err := r.conn.ReadFromUDP(buf)
		if err != nil {
			return
		}
		pkt := append([]byte(nil), buf[:n]...)
		now := time.Now()
		r.mu.Lock()
		if from.Port == r.server.Port && from.IP.Equal(r.server.IP) {
			r.down(pkt, now)
		} else {
			r.client = from
			r.counts.Up++
			r.send(pkt, r.server, r.cfg.delay)
		}
		r.mu.Unlock()
	}
}

// down: the server-to-client direction (mu held).
func (r *relay) down(pkt []byte, now time.Time) {
	r.counts.Down++
	if r.client == nil {
		return
	}
	lossDraw, jitterDraw := r.rng.Float64(), r.rng.Float64()
	if lossDraw < r.cfg.loss {
		r.counts.DownRandom++
		return
	}
	start := now
	if r.free.After(now) {
		start = r.free
	}
	if backlog := start.Sub(now).Seconds() * r.cfg.rate / 8; backlog+float64(len(pkt)) > float64(r.cfg.queue) {
		r.counts.DownQueue++
		return
	}
	r.free = start.Add(time.Duration(float64(len(pkt)*8) / r.cfg.rate * float64(time.Second)))
	due := r.free.Add(r.cfg.delay + time.Duration(jitterDraw*float64(r.cfg.jitter)))
	if due.Before(r.lastDue) {
		r.counts.DownReorders++
	} else {
		r.lastDue = due
	}
	r.send(pkt, r.client, due.Sub(now))
}

func (r *relay) send(pkt []byte, to *net.UDPAddr, after time.Duration) {
	time.AfterFunc(after, func() { _, _ = r.conn.WriteToUDP(pkt, to) })
}

func certificate() tls.Certificate {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		log.Fatal(err)
	}
	tmpl := x509.Certificate{SerialNumber: big.NewInt(1), DNSNames: []string{"localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, &tmpl, &tmpl, &key.PublicKey, key)
	if err != nil {
		log.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// one runs connection i through a fresh relay and returns the relay's counts.
func one(i int, size int, cfg pathConfig, seed int64, out string) counts {
	if err := os.Setenv("QLOGDIR", filepath.Join(out, fmt.Sprint(i))); err != nil {
		log.Fatal(err)
	}
	tlsConf := &tls.Config{Certificates: []tls.Certificate{certificate()}, NextProtos: []string{"statemine"}}
	ln, err := quic.ListenAddr("127.0.0.1:0", tlsConf, &quic.Config{Tracer: qlog.DefaultConnectionTracer})
	if err != nil {
		log.Fatal(err)
	}
	relayConn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		log.Fatal(err)
	}
	r := &relay{conn: relayConn, server: ln.Addr().(*net.UDPAddr), cfg: cfg,
		rng: mrand.New(mrand.NewSource(seed))}
	r.counts.Conn = i
	go r.run()

	served := make(chan error, 1)
	go func() {
		conn, err := ln.Accept(context.Background())
		if err != nil {
			served <- err
			return
		}
		str, err := conn.AcceptStream(context.Background())
		if err != nil {
			served <- err
			return
		}
		if _, err := io.ReadFull(str, make([]byte, 1)); err != nil {
			served <- err
			return
		}
		if _, err := str.Write(make([]byte, size)); err != nil {
			served <- err
			return
		}
		served <- str.Close()
		<-conn.Context().Done()
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	clientTLS := &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"statemine"}}
	conn, err := quic.DialAddr(ctx, relayConn.LocalAddr().String(), clientTLS, &quic.Config{})
	if err != nil {
		log.Fatal(err)
	}
	str, err := conn.OpenStreamSync(ctx)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := str.Write([]byte{1}); err != nil {
		log.Fatal(err)
	}
	got, err := io.Copy(io.Discard, str)
	if err != nil || got != int64(size) {
		log.Fatalf("connection %d: read %d of %d bytes: %v", i, got, size, err)
	}
	if err := <-served; err != nil {
		log.Fatal(err)
	}
	_ = conn.CloseWithError(0, "done")
	time.Sleep(200 * time.Millisecond) // the close reaches the server, its qlog is flushed
	_ = ln.Close()
	time.Sleep(100 * time.Millisecond)
	_ = relayConn.Close()
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts
}

func main() {
	out := flag.String("out", "", "folder for the qlogs (one sub-folder per connection)")
	conns := flag.Int("conns", 6, "connections")
	size := flag.Int("bytes", 300000, "bytes the server sends per connection")
	delay := flag.Float64("delay", 20, "one-way delay, ms")
	jitter := flag.Float64("jitter", 0, "extra uniform 0..jitter ms per server-to-client packet")
	rate := flag.Float64("rate", 20e6, "server-to-client bottleneck, bit/s")
	queue := flag.Int("queue", 60000, "bottleneck queue, bytes")
	loss := flag.Float64("loss", 0.02, "server-to-client random loss probability")
	seed := flag.Int64("seed", 1, "seed of the relay's draws (connection i uses seed+i)")
	flag.Parse()
	if *out == "" {
		log.Fatal("-out is required")
	}
	cfg := pathConfig{
		delay:  time.Duration(*delay * float64(time.Millisecond)),
		jitter: time.Duration(*jitter * float64(time.Millisecond)),
		rate:   *rate, queue: *queue, loss: *loss,
	}
	enc := json.NewEncoder(os.Stdout)
	for i := 0; i < *conns; i++ {
		if err := enc.Encode(one(i, *size, cfg, *seed+int64(i), *out)); err != nil {
			log.Fatal(err)
		}
	}
}
