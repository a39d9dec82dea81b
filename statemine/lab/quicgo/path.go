package quicgo

// The path model of docs/lab-protocol.md ("Path model"), the Go twin of the Python
// reference statemine/lab/path.py: same semantics, its own PRNG (math/rand/v2 PCG).
// Units: rates in bits per second, sizes in bytes, times in seconds of virtual time
// since the start of the run.

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Gilbert is a two-state Gilbert-Elliott loss chain stepped once per packet.
type Gilbert struct {
	PGB      float64 `json:"p_gb"`      // good -> bad per packet
	PBG      float64 `json:"p_bg"`      // bad -> good per packet
	LossGood float64 `json:"loss_good"` // drop probability in the good state
	LossBad  float64 `json:"loss_bad"`  // drop probability in the bad state
}

// RateSchedule redraws the bottleneck rate uniformly in [LoBps, HiBps] every IntervalS.
type RateSchedule struct {
	LoBps     float64 `json:"lo_bps"`
	HiBps     float64 `json:"hi_bps"`
	IntervalS float64 `json:"interval_s"`
}

// LinkConfig is one direction of the path.
type LinkConfig struct {
	RateBps      float64       `json:"rate_bps"`
	BufferBytes  float64       `json:"buffer_bytes"`
	DelayS       float64       `json:"delay_s"`
	JitterS      float64       `json:"jitter_s"`
	Loss         float64       `json:"loss"`
	Gilbert      *Gilbert      `json:"gilbert"`
	RateSchedule *RateSchedule `json:"rate_schedule"`
}

// param is a named parameter value, for validation.
type param struct {
	key   string
	value float64
}

// firstError is the first error check reports for the parameters, or nil.
func firstError(check func(key string, v float64) error, ps ...param) error {
	for _, p := range ps {
		if err := check(p.key, p.value); err != nil {
			return err
		}
	}
	return nil
}

func finite(key string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("%s: must be finite, not %v", key, v)
	}
	return nil
}

func probability(key string, v float64) error {
	if !(v >= 0 && v <= 1) {
		return fmt.Errorf("%s: is a probability and must be in [0, 1], not %v", key, v)
	}
	return nil
}

// Validate reports the first impossible parameter, naming its key.
func (c *LinkConfig) Validate() error {
	if err := firstError(finite, param{"rate_bps", c.RateBps}, param{"buffer_bytes", c.BufferBytes},
		param{"delay_s", c.DelayS}, param{"jitter_s", c.JitterS}); err != nil {
		return err
	}
	switch {
	case !(c.RateBps > 0):
		return fmt.Errorf("rate_bps: must be > 0, not %v", c.RateBps)
	case c.BufferBytes < 0 || c.BufferBytes != math.Trunc(c.BufferBytes):
		return fmt.Errorf("buffer_bytes: must be a whole number >= 0, not %v", c.BufferBytes)
	case c.DelayS < 0:
		return fmt.Errorf("delay_s: must be >= 0, not %v", c.DelayS)
	case c.JitterS < 0:
		return fmt.Errorf("jitter_s: must be >= 0, not %v", c.JitterS)
	}
	if err := probability("loss", c.Loss); err != nil {
		return err
	}
	if g := c.Gilbert; g != nil {
		if err := firstError(probability, param{"gilbert.p_gb", g.PGB}, param{"gilbert.p_bg", g.PBG},
			param{"gilbert.loss_good", g.LossGood}, param{"gilbert.loss_bad", g.LossBad}); err != nil {
			return err
		}
	}
	if s := c.RateSchedule; s != nil {
		switch {
		case !(s.LoBps > 0) || math.IsInf(s.LoBps, 0):
			return fmt.Errorf("rate_schedule.lo_bps: must be > 0, not %v", s.LoBps)
		case !(s.HiBps >= s.LoBps) || math.IsInf(s.HiBps, 0):
			return fmt.Errorf("rate_schedule.hi_bps: must be >= lo_bps (%v), not %v", s.LoBps, s.HiBps)
		case !(s.IntervalS > 0) || math.IsInf(s.IntervalS, 0):
			return fmt.Errorf("rate_schedule.interval_s: must be > 0, not %v", s.IntervalS)
		}
	}
	return nil
}

// DirectionSeed is the PRNG seed of one direction: seed*2+1 for "down", seed*2+2 for "up".
func DirectionSeed(seed int64, down bool) uint64 {
	if down {
		return uint64(seed*2 + 1)
	}
	return uint64(seed*2 + 2)
}

// LinkStats counts the packets of one link.
type LinkStats struct {
	Sent           int   // offered to the link
	Lost           int   // dropped by random (or Gilbert-Elliott) loss
	TailDropped    int   // dropped by the full bottleneck queue
	DeliveredBytes int64 // bytes of the packets not dropped
}

// Dropped is every packet the link dropped.
func (s LinkStats) Dropped() int { return s.Lost + s.TailDropped }

type queued struct {
	depart float64 // seconds
	bytes  int
}

// Link is one stateful direction of the path. Send must be called with
// non-decreasing times.
type Link struct {
	cfg      LinkConfig
	rng      *rand.Rand // loss and jitter draws, in packet order
	schedRng *rand.Rand // the rate schedule, independent of the traffic
	rates    []float64  // the rate of each schedule interval drawn so far
	linkFree float64
	queue    []queued // FIFO of packets not yet fully serialised at the last Send
	head     int
	queued   int // bytes in queue[head:]
	bad      bool
	lastT    float64
	Stats    LinkStats
}

// NewLink returns a link with the given (validated) configuration and PRNG seed.
func NewLink(cfg LinkConfig, seed uint64) *Link {
	return &Link{
		cfg:      cfg,
		rng:      rand.New(rand.NewPCG(seed, 0x5157a7e)),
		schedRng: rand.New(rand.NewPCG(seed, 0x5c4ed01e)),
		lastT:    math.Inf(-1),
	}
}

func (l *Link) uniform(r *rand.Rand, lo, hi float64) float64 { return lo + (hi-lo)*r.Float64() }

func (l *Link) lose() bool {
	g := l.cfg.Gilbert
	if g == nil {
		return l.cfg.Loss > 0 && l.rng.Float64() < l.cfg.Loss
	}
	if l.bad {
		l.bad = l.rng.Float64() >= g.PBG
	} else {
		l.bad = l.rng.Float64() < g.PGB
	}
	p := g.LossGood
	if l.bad {
		p = g.LossBad
	}
	return p > 0 && l.rng.Float64() < p
}

// RateAt is the bottleneck rate (bits/s) in force at time t (seconds).
func (l *Link) RateAt(t float64) float64 {
	s := l.cfg.RateSchedule
	if s == nil {
		return l.cfg.RateBps
	}
	k := int(math.Floor(t / s.IntervalS))
	for len(l.rates) <= k {
		l.rates = append(l.rates, l.uniform(l.schedRng, s.LoBps, s.HiBps))
	}
	return l.rates[k]
}

// QueuedBytes is the number of bytes at the bottleneck not yet fully serialised at t.
func (l *Link) QueuedBytes(t float64) int {
	for l.head < len(l.queue) && l.queue[l.head].depart <= t {
		l.queued -= l.queue[l.head].bytes
		l.head++
	}
	if l.head > 1024 && l.head*2 > len(l.queue) { // compact the consumed prefix
		l.queue = append(l.queue[:0], l.queue[l.head:]...)
		l.head = 0
	}
	return l.queued
}

func (l *Link) delay() float64 {
	d := l.cfg.DelayS
	if j := l.cfg.JitterS; j > 0 {
		d += l.uniform(l.rng, -j, j)
	}
	if d > 0 {
		return d
	}
	return 0
}

// Send offers a packet of n bytes at time t (seconds); it returns the arrival time,
// or ok == false when the packet is dropped.
func (l *Link) Send(t float64, n int) (arrival float64, ok bool) {
	if t < l.lastT {
		panic(fmt.Sprintf("path: send times must not decrease (%v < %v)", t, l.lastT))
	}
	l.lastT = t
	l.Stats.Sent++
	if l.lose() {
		l.Stats.Lost++
		return 0, false
	}
	if float64(l.QueuedBytes(t)+n) > l.cfg.BufferBytes {
		l.Stats.TailDropped++
		return 0, false
	}
	start := math.Max(t, l.linkFree)
	depart := start + 8*float64(n)/l.RateAt(start)
	l.linkFree = depart
	l.queue = append(l.queue, queued{depart, n})
	l.queued += n
	l.Stats.DeliveredBytes += int64(n)
	return depart + l.delay(), true
}
