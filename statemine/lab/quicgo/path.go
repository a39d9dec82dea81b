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

// CrossTraffic is other flows' packets sharing the bottleneck queue: Load is a fraction
// of RateBps in [0, 1); Poisson arrivals, or ON/OFF (exponential periods of means
// MeanOnS / MeanOffS seconds) when MeanOffS > 0.
type CrossTraffic struct {
	Load        float64 `json:"load"`
	PacketBytes float64 `json:"packet_bytes"`
	MeanOnS     float64 `json:"mean_on_s"`
	MeanOffS    float64 `json:"mean_off_s"`
}

// LinkTraceRef names a mahimahi link trace (an absolute path when the harness gets it)
// and an optional fixed start offset in ms (nil: drawn from the seed).
type LinkTraceRef struct {
	File     string   `json:"file"`
	OffsetMs *float64 `json:"offset_ms"`
	Sha256   *string  `json:"sha256"`
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
	CrossTraffic *CrossTraffic `json:"cross_traffic"`
	LinkTrace    *LinkTraceRef `json:"link_trace"`
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
	if x := c.CrossTraffic; x != nil {
		switch {
		case !(x.Load >= 0 && x.Load < 1):
			return fmt.Errorf("cross_traffic.load: is a fraction of the link rate and must be in [0, 1), not %v", x.Load)
		case !(x.PacketBytes >= 1 && x.PacketBytes <= 65535) || x.PacketBytes != math.Trunc(x.PacketBytes):
			return fmt.Errorf("cross_traffic.packet_bytes: must be a whole number in [1, 65535], not %v", x.PacketBytes)
		case !(x.MeanOnS >= 0) || !(x.MeanOffS >= 0) || math.IsInf(x.MeanOnS, 0) || math.IsInf(x.MeanOffS, 0):
			return fmt.Errorf("cross_traffic.mean_on_s: ON/OFF means must be >= 0")
		case x.MeanOffS > 0 && !(x.MeanOnS > 0):
			return fmt.Errorf("cross_traffic.mean_on_s: must be > 0 when mean_off_s is > 0")
		}
	}
	if r := c.LinkTrace; r != nil {
		switch {
		case r.File == "":
			return fmt.Errorf("link_trace.file: is required (a file name)")
		case r.OffsetMs != nil && (!(*r.OffsetMs >= 0) || *r.OffsetMs != math.Trunc(*r.OffsetMs) || math.IsInf(*r.OffsetMs, 0)):
			return fmt.Errorf("link_trace.offset_ms: must be a whole number >= 0, not %v", *r.OffsetMs)
		case c.RateSchedule != nil:
			return fmt.Errorf("link_trace: cannot be combined with rate_schedule (both set the rate)")
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
	CrossSent      int   // cross-traffic packets offered
	CrossDropped   int   // cross-traffic packets tail-dropped
	CrossBytes     int64 // cross-traffic bytes served
}

// Dropped is every packet the link dropped.
func (s LinkStats) Dropped() int { return s.Lost + s.TailDropped }

type queued struct {
	depart float64 // seconds
	bytes  int
}

// crossArrivals draws the arrival times (seconds) of cross-traffic packets in order:
// Poisson at lam = load*rate/(8*packet_bytes) per second; ON/OFF: the chain starts ON with
// probability on/(on+off), each period lasts an exponential time of its mean, and
// arrivals are Poisson at lam*(on+off)/on within ON periods only.
type crossArrivals struct {
	rng   *rand.Rand
	lam   float64
	onOff bool
	means [2]float64 // mean period, s: [0] OFF, [1] ON
	on    bool
	end   float64 // end of the current period
	t     float64 // last arrival (or period boundary)
}

func newCrossArrivals(c *CrossTraffic, rateBps float64, rng *rand.Rand) *crossArrivals {
	a := &crossArrivals{rng: rng, lam: c.Load * rateBps / (8 * c.PacketBytes)}
	if c.MeanOffS > 0 {
		a.onOff = true
		a.lam *= (c.MeanOnS + c.MeanOffS) / c.MeanOnS
		a.means = [2]float64{c.MeanOffS, c.MeanOnS}
		a.on = rng.Float64() < c.MeanOnS/(c.MeanOnS+c.MeanOffS)
		a.end = a.exp(a.mean())
	}
	return a
}

func (a *crossArrivals) mean() float64 {
	if a.on {
		return a.means[1]
	}
	return a.means[0]
}

func (a *crossArrivals) exp(mean float64) float64 { return a.rng.ExpFloat64() * mean }

// next is the next arrival time.
func (a *crossArrivals) next() float64 {
	if !a.onOff {
		a.t += a.exp(1 / a.lam)
		return a.t
	}
	for {
		if a.on {
			if t := a.t + a.exp(1/a.lam); t <= a.end {
				a.t = t
				return t
			}
		}
		a.t = a.end
		a.on = !a.on
		a.end += a.exp(a.mean())
	}
}

// Link is one stateful direction of the path. Send must be called with
// non-decreasing times.
type Link struct {
	cfg      LinkConfig
	rng      *rand.Rand // loss and jitter draws, in packet order
	schedRng *rand.Rand // the rate schedule (phase first), independent of the traffic
	phase    float64    // the rate schedule's phase, s
	rates    []float64  // the rate of each schedule interval drawn so far
	linkFree float64
	queue    []queued // FIFO of packets not yet fully serialised at the last Send
	head     int
	queued   int // bytes in queue[head:]
	bad      bool
	lastT    float64
	trace    *LinkTrace // the link trace, or nil
	offsetMs float64    // the trace's start offset, ms
	pos      int64      // link trace: bytes of opportunities used or lost so far
	cross    *crossArrivals
	crossAt  float64 // the next cross-traffic arrival (+Inf: none)
	Stats    LinkStats
}

// NewLink returns a link with the given (validated) configuration and PRNG seed; a
// link trace in cfg must be loaded in trace (nil otherwise).
func NewLink(cfg LinkConfig, seed uint64) *Link {
	l, err := NewLinkWithTrace(cfg, seed, nil)
	if err != nil {
		panic(err)
	}
	return l
}

// NewLinkWithTrace is NewLink with the link trace already parsed (nil: read it from
// cfg.LinkTrace.File when the config has one).
func NewLinkWithTrace(cfg LinkConfig, seed uint64, trace *LinkTrace) (*Link, error) {
	l := &Link{
		cfg:      cfg,
		rng:      rand.New(rand.NewPCG(seed, 0x5157a7e)),
		schedRng: rand.New(rand.NewPCG(seed, 0x5c4ed01e)),
		lastT:    math.Inf(-1),
		crossAt:  math.Inf(1),
	}
	if s := cfg.RateSchedule; s != nil {
		l.phase = l.uniform(l.schedRng, 0, s.IntervalS)
	}
	if ref := cfg.LinkTrace; ref != nil {
		if trace == nil {
			var err error
			if trace, err = ReadLinkTrace(ref.File); err != nil {
				return nil, err
			}
		}
		l.trace = trace
		if ref.OffsetMs != nil {
			l.offsetMs = *ref.OffsetMs
		} else {
			l.offsetMs = float64(rand.New(rand.NewPCG(seed, 0x7ace0ff5)).Int64N(trace.PeriodMs))
		}
	}
	if c := cfg.CrossTraffic; c != nil && c.Load > 0 {
		l.cross = newCrossArrivals(c, cfg.RateBps, rand.New(rand.NewPCG(seed, 0xc2055)))
		l.crossAt = l.cross.next()
	}
	return l, nil
}

// Phase is the rate schedule's phase (s); OffsetMs the link trace's start offset (ms).
func (l *Link) Phase() float64    { return l.phase }
func (l *Link) OffsetMs() float64 { return l.offsetMs }

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

// RateAt is the bottleneck rate (bits/s) in force at time t (seconds; without a trace).
// Interval k of the schedule covers [k*interval - phase, (k+1)*interval - phase).
func (l *Link) RateAt(t float64) float64 {
	s := l.cfg.RateSchedule
	if s == nil {
		return l.cfg.RateBps
	}
	k := int(math.Floor((t + l.phase) / s.IntervalS))
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

// serialise queues n bytes arriving at the bottleneck at t: the departure time, or
// ok == false when the buffer is full (tail drop).
func (l *Link) serialise(t float64, n int) (depart float64, ok bool) {
	if float64(l.QueuedBytes(t)+n) > l.cfg.BufferBytes {
		return 0, false
	}
	if tr := l.trace; tr == nil {
		start := math.Max(t, l.linkFree)
		depart = start + 8*float64(n)/l.RateAt(start)
	} else {
		before := OpportunityBytes * tr.OpportunitiesBefore(t*1000+l.offsetMs)
		pos := max(l.pos, before)
		l.pos = pos + int64(n)
		last := (l.pos - 1) / OpportunityBytes
		depart = (float64(tr.OpportunityMs(last)) - l.offsetMs) / 1000
		if depart < t { // rounding: an opportunity at t ms is not before t
			depart = t
		}
	}
	l.linkFree = depart
	l.queue = append(l.queue, queued{depart, n})
	l.queued += n
	return depart, true
}

// Advance lets the cross traffic that arrives up to time t into the queue.
func (l *Link) Advance(t float64) {
	if l.cross == nil {
		return
	}
	size := int(l.cfg.CrossTraffic.PacketBytes)
	for l.crossAt <= t {
		l.Stats.CrossSent++
		if _, ok := l.serialise(l.crossAt, size); ok {
			l.Stats.CrossBytes += int64(size)
		} else {
			l.Stats.CrossDropped++
		}
		l.crossAt = l.cross.next()
	}
}

// Send offers a packet of n bytes at time t (seconds); it returns the arrival time,
// or ok == false when the packet is dropped.
func (l *Link) Send(t float64, n int) (arrival float64, ok bool) {
	if t < l.lastT {
		panic(fmt.Sprintf("path: send times must not decrease (%v < %v)", t, l.lastT))
	}
	l.lastT = t
	l.Advance(t)
	l.Stats.Sent++
	if l.lose() {
		l.Stats.Lost++
		return 0, false
	}
	depart, ok := l.serialise(t, n)
	if !ok {
		l.Stats.TailDropped++
		return 0, false
	}
	l.Stats.DeliveredBytes += int64(n)
	return depart + l.delay(), true
}
