// statemine's quic-go corpus program: one connection over loopback, the server sending
// BYTES on a stream the client opens; both sides write qlog through quic-go's own
// qlog.DefaultConnectionTracer into $QLOGDIR (unmodified quic-go).
// Usage: quicgo-corpus LISTEN CONNECT BYTES LATE_MS
// LATE_MS > 0 starts the server that long after the client began its handshake.
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log"
	"math/big"
	"os"
	"strconv"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/qlog"
)

func certificate() tls.Certificate {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		log.Fatal(err)
	}
	template := x509.Certificate{SerialNumber: big.NewInt(1), DNSNames: []string{"localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, &template, &template, &key.PublicKey, key)
	if err != nil {
		log.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func serve(listen string, size int, done chan<- error) {
	tlsConf := &tls.Config{Certificates: []tls.Certificate{certificate()}, NextProtos: []string{"corpus"}}
	ln, err := quic.ListenAddr(listen, tlsConf, &quic.Config{Tracer: qlog.DefaultConnectionTracer})
	if err != nil {
		done <- err
		return
	}
	conn, err := ln.Accept(context.Background())
	if err != nil {
		done <- err
		return
	}
	stream, err := conn.AcceptStream(context.Background())
	if err != nil {
		done <- err
		return
	}
	_, _ = io.ReadAll(io.LimitReader(stream, 1))
	_, err = stream.Write(make([]byte, size))
	stream.Close()
	<-conn.Context().Done()
	done <- err
}

func main() {
	listen, connect := os.Args[1], os.Args[2]
	size, _ := strconv.Atoi(os.Args[3])
	late, _ := strconv.Atoi(os.Args[4])
	done := make(chan error, 1)
	if late <= 0 {
		go serve(listen, size, done)
	} else {
		go func() {
			time.Sleep(time.Duration(late) * time.Millisecond)
			serve(listen, size, done)
		}()
	}
	tlsConf := &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"corpus"}}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn, err := quic.DialAddr(ctx, connect, tlsConf, &quic.Config{Tracer: qlog.DefaultConnectionTracer})
	if err != nil {
		log.Fatal(err)
	}
	stream, err := conn.OpenStreamSync(ctx)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := stream.Write([]byte{1}); err != nil {
		log.Fatal(err)
	}
	got, err := io.ReadAll(stream)
	if err != nil || len(got) != size {
		log.Fatalf("read %d of %d: %v", len(got), size, err)
	}
	conn.CloseWithError(0, "done")
	if err := <-done; err != nil && err.Error() != "Application error 0x0 (remote): done" {
		log.Print(err)
	}
}
