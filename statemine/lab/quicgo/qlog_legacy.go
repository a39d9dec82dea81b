//go:build quicgo_legacy_qlog

package quicgo

// Connection tracers for quic-go before v0.48 (the logging.ConnectionTracer interface,
// no qlog.DefaultConnectionTracer; the lab builds v0.37.5 with this file).

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/logging"
	"github.com/quic-go/quic-go/qlog"
)

// setTracer makes conf write a qlog per connection into $QLOGDIR when it is set and,
// when rx is not nil, report the STREAM frames the connection receives to rx.
func setTracer(conf *quic.Config, rx *Arrivals) {
	dir := os.Getenv("QLOGDIR")
	if dir == "" && rx == nil {
		return
	}
	conf.Tracer = func(_ context.Context, p logging.Perspective, id quic.ConnectionID) logging.ConnectionTracer {
		var tracers []logging.ConnectionTracer
		if rx != nil {
			tracers = append(tracers, rxTracer{rx: rx})
		}
		if dir != "" {
			role := "client"
			if p == logging.PerspectiveServer {
				role = "server"
			}
			if f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s_%s.qlog", id, role))); err == nil {
				tracers = append(tracers, qlog.NewConnectionTracer(f, p, id))
			}
		}
		switch len(tracers) {
		case 0:
			return nil
		case 1:
			return tracers[0]
		}
		return logging.NewMultiplexedConnectionTracer(tracers...)
	}
}

// rxTracer passes received STREAM frames to rx.
type rxTracer struct {
	logging.NullConnectionTracer
	rx *Arrivals
}

func (t rxTracer) ReceivedShortHeaderPacket(_ *logging.ShortHeader, _ logging.ByteCount, frames []logging.Frame) {
	for _, f := range frames {
		if s, ok := f.(*logging.StreamFrame); ok {
			t.rx.StreamFrame(int64(s.StreamID), int64(s.Offset), int64(s.Length))
		}
	}
}
