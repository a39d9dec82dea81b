package quicgo

import (
	"math"
	"testing"
	"testing/synctest"
	"time"
)

func link(cfg LinkConfig, seed uint64) *Link {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	return NewLink(cfg, seed)
}

func mustPath(p *Path, err error) *Path {
	if err != nil {
		panic(err)
	}
	return p
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

func TestLinkSerialisation(t *testing.T) {
	// 8 Mbit/s: 1000 bytes take 1 ms to serialise; 10 ms delay.
	l := link(LinkConfig{RateBps: 8e6, BufferBytes: 3000, DelayS: 0.01}, 1)
	for i, want := range []float64{0.011, 0.012, 0.013} {
		got, ok := l.Send(0, 1000)
		if !ok || !near(got, want) {
			t.Fatalf("packet %d: got %v %v, want %v", i, got, ok, want)
		}
	}
	// the queue holds 3000 bytes until the first departure at 1 ms: tail drop
	if _, ok := l.Send(0.0005, 1000); ok {
		t.Fatal("a packet beyond the buffer was not dropped")
	}
	if q := l.QueuedBytes(0.0015); q != 2000 {
		t.Fatalf("queued after one departure: %d, want 2000", q)
	}
	// after one departure there is room again; it departs after the third
	got, ok := l.Send(0.0015, 1000)
	if !ok || !near(got, 0.014) {
		t.Fatalf("got %v %v, want 0.014", got, ok)
	}
	// an idle link serialises from the send time
	got, _ = l.Send(1, 500)
	if !near(got, 1+0.0005+0.01) {
		t.Fatalf("idle link: got %v", got)
	}
	if l.Stats.Sent != 6 || l.Stats.TailDropped != 1 || l.Stats.Lost != 0 || l.Stats.DeliveredBytes != 4500 {
		t.Fatalf("stats %+v", l.Stats)
	}
}

func TestLinkZeroBufferDropsAll(t *testing.T) {
	l := link(LinkConfig{RateBps: 1e6, BufferBytes: 0, DelayS: 0}, 1)
	if _, ok := l.Send(0, 1); ok {
		t.Fatal("a zero-byte buffer must drop every packet")
	}
}

// sigma is a binomial standard deviation.
func sigma(n int, p float64) float64 { return math.Sqrt(float64(n) * p * (1 - p)) }

func TestLinkRandomLoss(t *testing.T) {
	const n, p = 200000, 0.05
	l := link(LinkConfig{RateBps: 1e12, BufferBytes: 1e12, Loss: p}, 7)
	for i := 0; i < n; i++ {
		l.Send(float64(i)*1e-3, 100)
	}
	if d := math.Abs(float64(l.Stats.Lost) - n*p); d > 5*sigma(n, p) {
		t.Fatalf("lost %d of %d, want about %v", l.Stats.Lost, n, n*p)
	}
}

func TestLinkGilbertElliott(t *testing.T) {
	g := &Gilbert{PGB: 0.01, PBG: 0.25, LossGood: 0, LossBad: 1}
	l := link(LinkConfig{RateBps: 1e12, BufferBytes: 1e12, Gilbert: g, Loss: 0.9}, 3)
	const n = 400000
	lost := make([]bool, n)
	for i := range lost {
		_, ok := l.Send(float64(i)*1e-3, 100)
		lost[i] = !ok
	}
	// stationary loss: p_gb/(p_gb+p_bg) of the time in the bad state, losing all
	want := g.PGB / (g.PGB + g.PBG)
	if got := float64(l.Stats.Lost) / n; math.Abs(got-want) > 0.01 {
		t.Fatalf("loss rate %v, want %v (gilbert replaces loss)", got, want)
	}
	// bursts last 1/p_bg packets on average (geometric sojourn in the bad state)
	bursts, inBurst := 0, 0
	for i, x := range lost {
		if x {
			inBurst++
			if i == 0 || !lost[i-1] {
				bursts++
			}
		}
	}
	if mean := float64(inBurst) / float64(bursts); math.Abs(mean-1/g.PBG) > 0.3 {
		t.Fatalf("mean burst %v packets, want %v", mean, 1/g.PBG)
	}
}

func TestLinkJitterBoundsAndReordering(t *testing.T) {
	const delay, jitter, spacing = 0.02, 0.005, 0.001
	l := link(LinkConfig{RateBps: 1e12, BufferBytes: 1e12, DelayS: delay, JitterS: jitter}, 11)
	var sum float64
	reordered, prev := 0, math.Inf(-1)
	const n = 50000
	for i := 0; i < n; i++ {
		t0 := float64(i) * spacing
		at, ok := l.Send(t0, 1000)
		if !ok {
			t.Fatal("dropped without loss")
		}
		d := at - t0 // serialisation is negligible at 1 Tbit/s
		if d < delay-jitter-1e-9 || d > delay+jitter+1e-9 {
			t.Fatalf("delay %v outside [%v, %v]", d, delay-jitter, delay+jitter)
		}
		sum += d
		if at < prev {
			reordered++
		}
		prev = math.Max(prev, at)
	}
	if mean := sum / n; math.Abs(mean-delay) > 1e-4 {
		t.Fatalf("mean delay %v, want %v", mean, delay)
	}
	if reordered == 0 {
		t.Fatal("jitter larger than the spacing must reorder packets")
	}
	// without jitter, nothing reorders
	l = link(LinkConfig{RateBps: 1e12, BufferBytes: 1e12, DelayS: delay}, 11)
	prev = math.Inf(-1)
	for i := 0; i < 1000; i++ {
		at, _ := l.Send(float64(i)*spacing, 1000)
		if at < prev {
			t.Fatal("reordered without jitter")
		}
		prev = at
	}
}

func TestLinkJitterClampedAtZero(t *testing.T) {
	l := link(LinkConfig{RateBps: 1e12, BufferBytes: 1e12, DelayS: 0.001, JitterS: 0.01}, 5)
	zero := 0
	for i := 0; i < 10000; i++ {
		t0 := float64(i)
		at, _ := l.Send(t0, 1)
		if at < t0 {
			t.Fatal("delivered before it was sent")
		}
		if at-t0 < 1e-9 {
			zero++
		}
	}
	// P(delay + j < 0) = (0.01-0.001)/0.02 = 0.45
	if f := float64(zero) / 10000; math.Abs(f-0.45) > 0.03 {
		t.Fatalf("clamped share %v, want 0.45", f)
	}
}

func TestLinkRateSchedule(t *testing.T) {
	s := &RateSchedule{LoBps: 1e6, HiBps: 5e6, IntervalS: 0.5}
	a := link(LinkConfig{RateBps: 1, BufferBytes: 1e12, RateSchedule: s}, 9)
	b := link(LinkConfig{RateBps: 1, BufferBytes: 1e12, RateSchedule: s, Loss: 0.5}, 9)
	distinct := map[float64]bool{}
	ph := a.Phase() // interval k covers [k*0.5 - ph, (k+1)*0.5 - ph)
	if ph < 0 || ph >= s.IntervalS || b.Phase() != ph {
		t.Fatalf("phase %v outside [0, %v) or not seeded", ph, s.IntervalS)
	}
	for k := 1; k < 41; k++ {
		t0 := float64(k)*0.5 - ph
		r := a.RateAt(t0 + 0.25)
		if r < s.LoBps || r > s.HiBps {
			t.Fatalf("rate %v outside the schedule", r)
		}
		if a.RateAt(t0+1e-9) != r || a.RateAt(t0+0.49) != r {
			t.Fatal("the rate changed within an interval")
		}
		// the schedule does not depend on the traffic (b draws losses in between)
		b.Send(t0, 100)
		if b.RateAt(t0+0.1) != r {
			t.Fatal("same seed, different schedule")
		}
		distinct[r] = true
	}
	if len(distinct) < 35 {
		t.Fatalf("only %d distinct rates in 40 intervals", len(distinct))
	}
	// a packet keeps the rate of the interval where its serialisation starts
	c := link(LinkConfig{RateBps: 1, BufferBytes: 1e12, RateSchedule: s}, 9)
	r0 := c.RateAt(0.49)
	at, _ := c.Send(0.49, 100000)
	if !near(at, 0.49+8*100000/r0) {
		t.Fatalf("departure %v, want %v", at, 0.49+8*100000/r0)
	}
}

func TestLinkDeterminism(t *testing.T) {
	cfg := LinkConfig{RateBps: 1e7, BufferBytes: 20000, DelayS: 0.01, JitterS: 0.003, Loss: 0.02}
	run := func(seed uint64) []float64 {
		l := link(cfg, seed)
		var out []float64
		for i := 0; i < 5000; i++ {
			at, ok := l.Send(float64(i)*2e-4, 1200)
			if !ok {
				at = -1
			}
			out = append(out, at)
		}
		return out
	}
	a, b, c := run(3), run(3), run(4)
	same := true
	for i := range a {
		if a[i] != b[i] {
			t.Fatal("same seed, different deliveries")
		}
		same = same && a[i] == c[i]
	}
	if same {
		t.Fatal("different seeds, same deliveries")
	}
	if DirectionSeed(7, true) != 15 || DirectionSeed(7, false) != 16 {
		t.Fatal("direction seeds are seed*2+1 (down) and seed*2+2 (up)")
	}
}

func TestLinkSendBackwardsPanics(t *testing.T) {
	l := link(LinkConfig{RateBps: 1e6, BufferBytes: 1e6}, 1)
	l.Send(1, 10)
	defer func() {
		if recover() == nil {
			t.Fatal("no panic for a decreasing send time")
		}
	}()
	l.Send(0.5, 10)
}

func TestLinkConfigValidate(t *testing.T) {
	ok := LinkConfig{RateBps: 1e6, BufferBytes: 1000, DelayS: 0.01}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := map[string]LinkConfig{
		"rate_bps":                 {RateBps: 0, BufferBytes: 1},
		"buffer_bytes":             {RateBps: 1, BufferBytes: 1.5},
		"delay_s":                  {RateBps: 1, DelayS: -1},
		"jitter_s":                 {RateBps: 1, JitterS: math.NaN()},
		"loss":                     {RateBps: 1, Loss: 1.5},
		"gilbert.p_bg":             {RateBps: 1, Gilbert: &Gilbert{PGB: 0.1, PBG: -1}},
		"rate_schedule.hi_bps":     {RateBps: 1, RateSchedule: &RateSchedule{LoBps: 2, HiBps: 1, IntervalS: 1}},
		"rate_schedule.interval_s": {RateBps: 1, RateSchedule: &RateSchedule{LoBps: 1, HiBps: 1}},
	}
	for key, cfg := range bad {
		err := cfg.Validate()
		if err == nil || len(err.Error()) < len(key) || err.Error()[:len(key)] != key {
			t.Errorf("%s: got error %v", key, err)
		}
	}
}

// The wire releases each packet at the arrival time the model computed, in arrival
// order (so jitter reorders), in virtual time.
func TestPathDeliversAtModelTimes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		down := LinkConfig{RateBps: 8e6, BufferBytes: 1e6, DelayS: 0.02, JitterS: 0.004}
		up := LinkConfig{RateBps: 8e6, BufferBytes: 1e6, DelayS: 0.02}
		p := mustPath(NewPath(down, up, 42))
		defer p.Close()
		start := time.Now()
		type arrival struct {
			id byte
			at time.Duration
		}
		got := make(chan arrival, 50)
		go func() {
			buf := make([]byte, 2000)
			for i := 0; i < 50; i++ {
				n, from, err := p.Client.ReadFrom(buf)
				if err != nil || n != 1000 || from.String() != p.Server.LocalAddr().String() {
					t.Errorf("read %d %v %v", n, from, err)
					return
				}
				got <- arrival{buf[0], time.Since(start)}
			}
		}()
		model := NewLink(down, DirectionSeed(42, true)) // the same draws as p.Down
		want := map[byte]time.Duration{}
		for i := 0; i < 50; i++ {
			at, _ := model.Send(time.Since(start).Seconds(), 1000)
			want[byte(i)] = time.Duration(at * 1e9)
			p.Server.WriteTo(append([]byte{byte(i)}, make([]byte, 999)...), nil)
			time.Sleep(500 * time.Microsecond)
		}
		prev, reordered := time.Duration(-1), false
		for i := 0; i < 50; i++ {
			a := <-got
			if w := want[a.id]; a.at != w {
				t.Fatalf("packet %d arrived at %v, want %v", a.id, a.at, w)
			}
			if a.at < prev {
				t.Fatal("arrivals out of time order")
			}
			reordered = reordered || int(a.id) < i
			prev = a.at
		}
		if !reordered {
			t.Fatal("4 ms jitter at 0.5 ms spacing should reorder")
		}
		if p.Sent() != 50 || p.Dropped() != 0 {
			t.Fatalf("sent %d dropped %d", p.Sent(), p.Dropped())
		}
	})
}

func TestEndpointDeadlineAndClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := LinkConfig{RateBps: 1e6, BufferBytes: 1e6, DelayS: 0.01}
		p := mustPath(NewPath(cfg, cfg, 1))
		start := time.Now()
		p.Client.SetReadDeadline(start.Add(time.Second))
		_, _, err := p.Client.ReadFrom(make([]byte, 10))
		if ne, ok := err.(interface{ Timeout() bool }); !ok || !ne.Timeout() || time.Since(start) != time.Second {
			t.Fatalf("deadline: %v after %v", err, time.Since(start))
		}
		p.Client.SetReadDeadline(time.Time{})
		go func() {
			time.Sleep(3 * time.Second)
			p.Close()
		}()
		_, _, err = p.Client.ReadFrom(make([]byte, 10))
		if err == nil || time.Since(start) != 4*time.Second {
			t.Fatalf("close: %v after %v", err, time.Since(start))
		}
		if _, err := p.Client.WriteTo([]byte{1}, nil); err == nil {
			t.Fatal("write after close")
		}
	})
}

// The mobile profile's per-packet CPU time spaces out reads.
func TestEndpointCPUCost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := LinkConfig{RateBps: 1e9, BufferBytes: 1e6}
		p := mustPath(NewPath(cfg, cfg, 1))
		defer p.Close()
		p.Client.SetMobile(0, func() time.Duration { return 5 * time.Millisecond })
		start := time.Now()
		for i := 0; i < 4; i++ {
			p.Server.WriteTo([]byte{1}, nil)
		}
		for i := 0; i < 4; i++ {
			p.Client.ReadFrom(make([]byte, 10))
		}
		if d := time.Since(start); d < 20*time.Millisecond || d > 21*time.Millisecond {
			t.Fatalf("4 packets at 5 ms each took %v", d)
		}
	})
}

// The mobile socket buffer drops what does not fit, counted as dropped.
func TestEndpointSocketBuffer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := LinkConfig{RateBps: 1e12, BufferBytes: 1e6}
		p := mustPath(NewPath(cfg, cfg, 1))
		defer p.Close()
		p.Client.SetMobile(3000, nil)
		for i := 0; i < 4; i++ {
			p.Server.WriteTo(make([]byte, 1000), nil)
		}
		time.Sleep(time.Millisecond)
		if p.Dropped() != 1 {
			t.Fatalf("dropped %d, want 1 of 4 packets of 1000 bytes into 3000", p.Dropped())
		}
		for i := 0; i < 3; i++ {
			p.Client.ReadFrom(make([]byte, 2000))
		}
		p.Server.WriteTo(make([]byte, 1000), nil) // room again
		time.Sleep(time.Millisecond)
		if n, _, err := p.Client.ReadFrom(make([]byte, 2000)); n != 1000 || err != nil || p.Dropped() != 1 {
			t.Fatalf("read %d %v, dropped %d", n, err, p.Dropped())
		}
	})
}
