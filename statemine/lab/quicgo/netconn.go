package quicgo

// An in-memory net.PacketConn pair joined by two Links (the path model), for running
// quic-go in virtual time under testing/synctest: every wait is on a channel or a timer,
// so a goroutine waiting for a packet is durably blocked and virtual time advances.

import (
	"container/heap"
	"fmt"
	"net"
	"os"
	"sync"
	"time"
)

// inboxPackets bounds an endpoint's receive queue, in packets; a packet that arrives
// when it (or the endpoint's byte limit, the mobile socket buffer) is full is dropped,
// as by a full socket buffer, and counted in Dropped.
const inboxPackets = 8192

type datagram struct {
	data []byte
	from net.Addr
	at   time.Time
	seq  uint64 // send order: ties at the same arrival time keep it
}

type arrivals []datagram

func (a arrivals) Len() int { return len(a) }
func (a arrivals) Less(i, j int) bool {
	if !a[i].at.Equal(a[j].at) {
		return a[i].at.Before(a[j].at)
	}
	return a[i].seq < a[j].seq
}
func (a arrivals) Swap(i, j int) { a[i], a[j] = a[j], a[i] }
func (a *arrivals) Push(x any)   { *a = append(*a, x.(datagram)) }
func (a *arrivals) Pop() any {
	old := *a
	x := old[len(old)-1]
	*a = old[:len(old)-1]
	return x
}

// wire carries the packets of one direction: the path model decides when (or whether)
// each arrives, and a goroutine releases each at its own arrival time into dst's inbox.
type wire struct {
	start   time.Time // virtual time 0 of the path model
	model   *Link
	dst     *Endpoint
	mu      sync.Mutex
	pending arrivals
	seq     uint64
	wake    chan struct{}
	stop    chan struct{}
	done    chan struct{}
}

func newWire(start time.Time, model *Link, dst *Endpoint) *wire {
	w := &wire{start: start, model: model, dst: dst,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go w.deliver()
	return w
}

func (w *wire) send(b []byte, from net.Addr) {
	now := time.Now()
	w.mu.Lock()
	arrival, ok := w.model.Send(now.Sub(w.start).Seconds(), len(b))
	if ok {
		at := w.start.Add(time.Duration(arrival * 1e9))
		w.seq++
		heap.Push(&w.pending, datagram{data: append([]byte(nil), b...), from: from, at: at, seq: w.seq})
	}
	w.mu.Unlock()
	if ok {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

// deliver releases packets at their arrival times until the wire is stopped.
func (w *wire) deliver() {
	defer close(w.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		w.mu.Lock()
		var next datagram
		have := len(w.pending) > 0
		if have {
			next = w.pending[0]
		}
		w.mu.Unlock()
		if !have {
			select {
			case <-w.wake:
			case <-w.stop:
				return
			}
			continue
		}
		if d := time.Until(next.at); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-w.wake: // an earlier packet may have arrived
				timer.Stop()
			case <-w.stop:
				timer.Stop()
				return
			}
			continue
		}
		w.mu.Lock()
		heap.Pop(&w.pending)
		w.mu.Unlock()
		w.dst.receive(next)
	}
}

func (w *wire) close() {
	close(w.stop)
	<-w.done
}

// Endpoint is one end of the emulated path; it implements net.PacketConn.
type Endpoint struct {
	addr  *net.UDPAddr
	out   *wire
	inbox chan datagram
	// The mobile profile's network thread: the byte limit of the receive queue (the
	// socket buffer; 0: none) and the virtual CPU time each received packet costs.
	bufBytes int
	cpu      func() time.Duration // nil: no CPU cost

	mu        sync.Mutex
	closed    chan struct{}
	isClosed  bool
	deadline  chan struct{} // closed when the read deadline passes
	dlTimer   *time.Timer
	sent      int
	rxDropped int
	queued    int // bytes in inbox
}

var _ net.PacketConn = (*Endpoint)(nil)

func newEndpoint(addr *net.UDPAddr) *Endpoint {
	return &Endpoint{addr: addr, inbox: make(chan datagram, inboxPackets),
		closed: make(chan struct{}), deadline: make(chan struct{})}
}

func (e *Endpoint) receive(d datagram) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.bufBytes > 0 && e.queued+len(d.data) > e.bufBytes {
		e.rxDropped++
		return
	}
	select {
	case e.inbox <- d:
		e.queued += len(d.data)
	default:
		e.rxDropped++
	}
}

// SetMobile makes the endpoint the mobile profile's network thread: a socket receive
// buffer of bufBytes (0: unlimited) and cpu() of virtual time per packet taken (one
// call per packet, in the order taken), during which the reader (quic-go's receive
// loop) takes no other packet. The application reads on its own (AppReader).
func (e *Endpoint) SetMobile(bufBytes int, cpu func() time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.bufBytes, e.cpu = bufBytes, cpu
}

type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }
func (timeoutError) Unwrap() error   { return os.ErrDeadlineExceeded }

// ReadFrom waits for the next packet, the read deadline or Close.
func (e *Endpoint) ReadFrom(p []byte) (int, net.Addr, error) {
	e.mu.Lock()
	dl, cpu := e.deadline, e.cpu
	e.mu.Unlock()
	select {
	case <-e.closed:
		return 0, nil, net.ErrClosed
	default:
	}
	select {
	case d := <-e.inbox:
		e.mu.Lock()
		e.queued -= len(d.data)
		e.mu.Unlock()
		if cpu != nil {
			if c := cpu(); c > 0 {
				time.Sleep(c)
			}
		}
		return copy(p, d.data), d.from, nil
	case <-dl:
		return 0, nil, timeoutError{}
	case <-e.closed:
		return 0, nil, net.ErrClosed
	}
}

// WriteTo hands a packet to the path towards the peer (addr is not checked: the path
// has exactly two ends).
func (e *Endpoint) WriteTo(p []byte, _ net.Addr) (int, error) {
	e.mu.Lock()
	if e.isClosed {
		e.mu.Unlock()
		return 0, net.ErrClosed
	}
	e.sent++
	e.mu.Unlock()
	e.out.send(p, e.addr)
	return len(p), nil
}

// Close makes pending and future reads and writes fail with net.ErrClosed.
func (e *Endpoint) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.isClosed {
		e.isClosed = true
		close(e.closed)
		if e.dlTimer != nil {
			e.dlTimer.Stop()
		}
	}
	return nil
}

// LocalAddr is the endpoint's (fictitious) UDP address.
func (e *Endpoint) LocalAddr() net.Addr { return e.addr }

// SetDeadline sets the read deadline (writes never block).
func (e *Endpoint) SetDeadline(t time.Time) error { return e.SetReadDeadline(t) }

// SetWriteDeadline is a no-op: writes never block.
func (e *Endpoint) SetWriteDeadline(time.Time) error { return nil }

// SetReadDeadline makes ReadFrom fail with a timeout from t on (zero: no deadline).
func (e *Endpoint) SetReadDeadline(t time.Time) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.dlTimer != nil {
		e.dlTimer.Stop()
		e.dlTimer = nil
	}
	select {
	case <-e.deadline: // expired: a new channel for the new deadline
		e.deadline = make(chan struct{})
	default:
	}
	if t.IsZero() {
		return nil
	}
	ch := e.deadline
	if d := time.Until(t); d > 0 {
		e.dlTimer = time.AfterFunc(d, func() { close(ch) })
	} else {
		close(ch)
	}
	return nil
}

// Path joins a server and a client Endpoint through two Links.
type Path struct {
	Server, Client *Endpoint
	Down, Up       *Link // server -> client, client -> server
	down, up       *wire
}

// NewPath builds the emulated path; time zero of the path model is now. It fails when
// a link trace cannot be read.
func NewPath(down, up LinkConfig, seed int64) (*Path, error) {
	start := time.Now()
	dl, err := NewLinkWithTrace(down, DirectionSeed(seed, true), nil)
	if err != nil {
		return nil, fmt.Errorf("path.down.%v", err)
	}
	ul, err := NewLinkWithTrace(up, DirectionSeed(seed, false), nil)
	if err != nil {
		return nil, fmt.Errorf("path.up.%v", err)
	}
	p := &Path{
		Server: newEndpoint(&net.UDPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 443}),
		Client: newEndpoint(&net.UDPAddr{IP: net.IPv4(10, 0, 0, 2), Port: 50000}),
		Down:   dl,
		Up:     ul,
	}
	p.down = newWire(start, p.Down, p.Client)
	p.up = newWire(start, p.Up, p.Server)
	p.Server.out, p.Client.out = p.down, p.up
	return p, nil
}

// Close closes both endpoints and stops the wires' goroutines.
func (p *Path) Close() {
	p.Server.Close()
	p.Client.Close()
	p.down.close()
	p.up.close()
}

// Sent is the number of packets both endpoints handed to the path.
func (p *Path) Sent() int {
	p.Server.mu.Lock()
	defer p.Server.mu.Unlock()
	p.Client.mu.Lock()
	defer p.Client.mu.Unlock()
	return p.Server.sent + p.Client.sent
}

// Dropped is the number of packets dropped by the path model or a full receive buffer.
func (p *Path) Dropped() int {
	p.down.mu.Lock()
	n := p.Down.Stats.Dropped()
	p.down.mu.Unlock()
	p.up.mu.Lock()
	n += p.Up.Stats.Dropped()
	p.up.mu.Unlock()
	p.Server.mu.Lock()
	n += p.Server.rxDropped
	p.Server.mu.Unlock()
	p.Client.mu.Lock()
	n += p.Client.rxDropped
	p.Client.mu.Unlock()
	return n
}
