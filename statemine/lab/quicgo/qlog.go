//go:build !quicgo_legacy_qlog && !quicgo_logging_qlog

package quicgo

// Connection tracers for quic-go with the qlogwriter API (v0.55 and later; the lab
// builds v0.63.0 and v0.65.0 with this file).

import (
	"context"
	"os"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/qlog"
	"github.com/quic-go/quic-go/qlogwriter"
)

// setTracer makes conf write a qlog per connection into $QLOGDIR when it is set and,
// when rx is not nil, report the STREAM frames the connection receives to rx.
func setTracer(conf *quic.Config, rx *Arrivals) {
	var file func(context.Context, bool, quic.ConnectionID) qlogwriter.Trace
	if os.Getenv("QLOGDIR") != "" {
		file = qlog.DefaultConnectionTracer
	}
	if rx == nil {
		if file != nil {
			conf.Tracer = file
		}
		return
	}
	conf.Tracer = func(ctx context.Context, isClient bool, id quic.ConnectionID) qlogwriter.Trace {
		t := &rxTrace{rx: rx}
		if file != nil {
			t.inner = file(ctx, isClient, id)
		}
		return t
	}
}

// rxTrace is a qlog trace that passes received STREAM frames to rx (and every event to
// inner, when set).
type rxTrace struct {
	rx    *Arrivals
	inner qlogwriter.Trace
}

func (t *rxTrace) AddProducer() qlogwriter.Recorder {
	r := &rxRecorder{rx: t.rx}
	if t.inner != nil {
		r.inner = t.inner.AddProducer()
	}
	return r
}

// SupportsSchemas: v0.63.0's Trace interface has it (v0.65.0's does not).
func (t *rxTrace) SupportsSchemas(string) bool { return true }

type rxRecorder struct {
	rx    *Arrivals
	inner qlogwriter.Recorder
}

func (r *rxRecorder) RecordEvent(ev qlogwriter.Event) {
	if p, ok := ev.(qlog.PacketReceived); ok {
		for _, f := range p.Frames {
			if s, ok := f.Frame.(*qlog.StreamFrame); ok {
				r.rx.StreamFrame(int64(s.StreamID), s.Offset, s.Length)
			}
		}
	}
	if r.inner != nil {
		r.inner.RecordEvent(ev)
	}
}

func (r *rxRecorder) Close() error {
	if r.inner != nil {
		return r.inner.Close()
	}
	return nil
}
