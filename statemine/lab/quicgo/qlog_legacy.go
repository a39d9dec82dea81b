//go:build quicgo_legacy_qlog

package quicgo

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/logging"
	"github.com/quic-go/quic-go/qlog"
)

// enableQlog makes conf write a qlog per connection into $QLOGDIR when it is set
// (quic-go before v0.48, which has no qlog.DefaultConnectionTracer).
func enableQlog(conf *quic.Config) {
	dir := os.Getenv("QLOGDIR")
	if dir == "" {
		return
	}
	conf.Tracer = func(_ context.Context, p logging.Perspective, id quic.ConnectionID) logging.ConnectionTracer {
		role := "client"
		if p == logging.PerspectiveServer {
			role = "server"
		}
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s_%s.qlog", id, role)))
		if err != nil {
			return nil
		}
		return qlog.NewConnectionTracer(f, p, id)
	}
}
