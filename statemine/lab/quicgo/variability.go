package quicgo

// The mobile client's random elements (docs/lab-protocol.md, "Client variability"), the
// Go twin of statemine/lab/variability.py: per-packet CPU time drawn from a lognormal
// law, and an application read rate redrawn every interval. Each has its own PRNG
// seeded from the run's seed. A coefficient of variation of 0 turns the source off.

import (
	"math"
	"math/rand/v2"
	"time"
)

// Lognormal draws from a lognormal law of the given mean and coefficient of variation
// (mean itself when cv is 0): exp(mu + sigma*z), sigma^2 = ln(1+cv^2), mu = ln(mean) - sigma^2/2.
func Lognormal(rng *rand.Rand, mean, cv float64) float64 {
	if cv == 0 || mean == 0 {
		return mean
	}
	s2 := math.Log1p(cv * cv)
	return math.Exp(math.Log(mean) - s2/2 + math.Sqrt(s2)*rng.NormFloat64())
}

// CPUTime draws the per-packet CPU time of the mobile network thread.
type CPUTime struct {
	MeanS, CV float64
	rng       *rand.Rand
}

// NewCPUTime is the per-packet CPU time of run seed.
func NewCPUTime(meanS, cv float64, seed int64) *CPUTime {
	return &CPUTime{MeanS: meanS, CV: cv, rng: rand.New(rand.NewPCG(uint64(seed), 0xc0c0))}
}

// Draw is the CPU time of the next packet.
func (c *CPUTime) Draw() time.Duration {
	return time.Duration(Lognormal(c.rng, c.MeanS, c.CV) * 1e9)
}

// ReadRate is the application's read rate over time: RateBps times a lognormal factor
// of mean 1 and coefficient of variation CV, redrawn every IntervalS from t=0 (drawn
// lazily, in interval order).
type ReadRate struct {
	RateBps, CV, IntervalS float64
	rng                    *rand.Rand
	factors                []float64
}

// NewReadRate is the read rate of run seed.
func NewReadRate(rateBps, cv, intervalS float64, seed int64) *ReadRate {
	return &ReadRate{RateBps: rateBps, CV: cv, IntervalS: intervalS, rng: rand.New(rand.NewPCG(uint64(seed), 0x4ead))}
}

// At is the read rate (bits/s) in force at time t (seconds since the start of the run).
func (r *ReadRate) At(t float64) float64 {
	if r.CV == 0 {
		return r.RateBps
	}
	k := int(math.Floor(t / r.IntervalS))
	for len(r.factors) <= k {
		r.factors = append(r.factors, Lognormal(r.rng, 1, r.CV))
	}
	return r.RateBps * r.factors[k]
}
