// Package quicgo is the quic-go runner of the statemine lab (docs/lab-protocol.md): a
// quic-go server and client transfer objects over an in-memory net.PacketConn pair that
// implements the lab's path model (path.go, netconn.go), in virtual time under
// testing/synctest. It is built as a test binary (go test -c) against a fetched, patched
// quic-go by statemine/lab/runners/quicgo.py and started as `harness CONFIG.json`
// (lab_test.go).
package quicgo
