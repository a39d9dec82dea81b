package quicgo

// Link traces in the mahimahi format (docs/lab-protocol.md, "Link traces"), the Go twin
// of statemine/lab/cellular.py's LinkTrace: one line per delivery opportunity for one
// 1500-byte packet, a whole number of ms, non-decreasing; the trace loops with period
// its last timestamp. Both lookups are O(1).

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"strconv"
)

// OpportunityBytes is what one delivery opportunity carries.
const OpportunityBytes = 1500

// Limits on a trace: its period (the lookup table has one entry per ms), its lines and
// its file size.
const (
	MaxTracePeriodMs = 3_600_000
	MaxTraceLines    = 5_000_000
	MaxTraceBytes    = 64 << 20
)

// LinkTrace is a parsed trace.
type LinkTrace struct {
	TimesMs  []int64 // loop 0's opportunities, ms
	PeriodMs int64   // the last timestamp (> 0)
	before   []int64 // before[c] = number of timestamps < c, c in [0, PeriodMs]
	atPeriod int64   // number of timestamps equal to PeriodMs
}

// ParseLinkTrace parses a trace's text; errors name the line ("line N: ...").
func ParseLinkTrace(data []byte) (*LinkTrace, error) {
	data = bytes.TrimSuffix(data, []byte("\n"))
	if len(data) == 0 {
		return nil, fmt.Errorf("empty link trace (one timestamp in ms per line expected)")
	}
	lines := bytes.Split(data, []byte("\n"))
	if len(lines) > MaxTraceLines {
		return nil, fmt.Errorf("line %d: more than %d lines", MaxTraceLines+1, MaxTraceLines)
	}
	times := make([]int64, len(lines))
	for i, ln := range lines {
		s := bytes.TrimSpace(ln)
		v, err := strconv.ParseInt(string(s), 10, 64)
		if err != nil || v < 0 || len(s) > 12 || (len(s) > 0 && (s[0] == '+' || s[0] == '-')) {
			q := string(ln)
			if len(q) > 40 {
				q = q[:40]
			}
			return nil, fmt.Errorf("line %d: not a whole number of milliseconds: %q", i+1, q)
		}
		if i > 0 && v < times[i-1] {
			return nil, fmt.Errorf("line %d: timestamps decrease (%d then %d)", i+1, times[i-1], v)
		}
		times[i] = v
	}
	period := times[len(times)-1]
	if period == 0 {
		return nil, fmt.Errorf("every timestamp is 0: the trace has no duration")
	}
	if period > MaxTracePeriodMs {
		return nil, fmt.Errorf("line %d: the trace lasts %d ms, longer than %d ms", len(times), period, MaxTracePeriodMs)
	}
	tr := &LinkTrace{TimesMs: times, PeriodMs: period, before: make([]int64, period+1)}
	counts := make([]int64, period+1)
	for _, v := range times {
		counts[v]++
	}
	for c := int64(1); c <= period; c++ {
		tr.before[c] = tr.before[c-1] + counts[c-1]
	}
	tr.atPeriod = counts[period]
	return tr, nil
}

// ReadLinkTrace reads and parses a trace file; errors name the file.
func ReadLinkTrace(path string) (*LinkTrace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("link_trace: %v", err)
	}
	defer f.Close()
	data := make([]byte, MaxTraceBytes+1)
	n, _ := f.Read(data)
	for n < len(data) {
		m, err := f.Read(data[n:])
		n += m
		if err != nil || m == 0 {
			break
		}
	}
	if n > MaxTraceBytes {
		return nil, fmt.Errorf("%s: link trace larger than %d bytes", path, MaxTraceBytes)
	}
	tr, err := ParseLinkTrace(data[:n])
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return tr, nil
}

// MeanRateBps is the trace's average capacity, bits/s.
func (t *LinkTrace) MeanRateBps() float64 {
	return OpportunityBytes * 8 * float64(len(t.TimesMs)) / (float64(t.PeriodMs) / 1000)
}

// OpportunitiesBefore is how many opportunities lie strictly before trace time tt (ms, >= 0).
func (t *LinkTrace) OpportunitiesBefore(tt float64) int64 {
	p := float64(t.PeriodMs)
	r := math.Floor(tt / p)
	x := math.Min(math.Max(tt-r*p, 0), p)
	c := int64(math.Ceil(x))
	n := int64(r)*int64(len(t.TimesMs)) + t.before[c]
	if c == 0 && r > 0 { // loop r-1's opportunities at exactly r*P are not before
		n -= t.atPeriod
	}
	return n
}

// OpportunityMs is the trace time (ms) of opportunity k (0-based, counting every loop).
func (t *LinkTrace) OpportunityMs(k int64) int64 {
	l := int64(len(t.TimesMs))
	return t.TimesMs[k%l] + (k/l)*t.PeriodMs
}
