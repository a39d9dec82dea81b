//go:build quicgo_logging_qlog

package quicgo

// Connection tracers for quic-go v0.48 to v0.54 (the logging.ConnectionTracer struct of
// callbacks; the lab builds v0.48.2 with this file).

import (
	"context"
	"os"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/logging"
	"github.com/quic-go/quic-go/qlog"
)

// setTracer makes conf write a qlog per connection into $QLOGDIR when it is set and,
// when rx is not nil, report the STREAM frames the connection receives to rx.
func setTracer(conf *quic.Config, rx *Arrivals) {
	file := os.Getenv("QLOGDIR") != ""
	if rx == nil {
		if file {
			conf.Tracer = qlog.DefaultConnectionTracer
		}
		return
	}
	conf.Tracer = func(ctx context.Context, p logging.Perspective, id quic.ConnectionID) *logging.ConnectionTracer {
		t := &logging.ConnectionTracer{
			ReceivedShortHeaderPacket: func(_ *logging.ShortHeader, _ logging.ByteCount, _ logging.ECN, frames []logging.Frame) {
				for _, f := range frames {
					if s, ok := f.(*logging.StreamFrame); ok {
						rx.StreamFrame(int64(s.StreamID), int64(s.Offset), int64(s.Length))
					}
				}
			},
		}
		if !file {
			return t
		}
		return logging.NewMultiplexedConnectionTracer(t, qlog.DefaultConnectionTracer(ctx, p, id))
	}
}
