//go:build !quicgo_legacy_qlog

package quicgo

import (
	"os"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/qlog"
)

// enableQlog makes conf write a qlog per connection into $QLOGDIR when it is set
// (quic-go v0.48 and later).
func enableQlog(conf *quic.Config) {
	if os.Getenv("QLOGDIR") != "" {
		conf.Tracer = qlog.DefaultConnectionTracer
	}
}
