package quicgo

// What the client's transport has received of the objects, seen through quic-go's
// connection tracer (the version-specific hook is in qlog*.go): the mobile client closes
// the connection as soon as its transport has every byte (docs/lab-protocol.md), while
// its application may still be reading.

import (
	"sort"
	"sync"
)

// Arrivals counts the distinct stream bytes the client's transport received (STREAM
// frames, duplicates and overlaps counted once) and closes Done when they reach want.
type Arrivals struct {
	mu     sync.Mutex
	want   int64
	got    int64
	ranges map[int64][][2]int64 // per stream: disjoint, sorted [start, end) byte ranges
	done   chan struct{}
}

// NewArrivals waits for want bytes of stream data (want > 0).
func NewArrivals(want int64) *Arrivals {
	return &Arrivals{want: want, ranges: map[int64][][2]int64{}, done: make(chan struct{})}
}

// Done is closed once the transport has received every byte.
func (a *Arrivals) Done() <-chan struct{} { return a.done }

// Got is the number of distinct stream bytes received so far.
func (a *Arrivals) Got() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.got
}

// StreamFrame records a received STREAM frame: length bytes from offset of stream id.
func (a *Arrivals) StreamFrame(id, offset, length int64) {
	if length <= 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	rs, added := addRange(a.ranges[id], offset, offset+length)
	a.ranges[id] = rs
	before := a.got
	a.got += added
	if before < a.want && a.got >= a.want {
		close(a.done)
	}
}

// addRange inserts [lo, hi) into the disjoint sorted ranges rs; it returns the new
// ranges and how many bytes were not covered before. Frames mostly arrive in order, so
// extending the last range is the fast path.
func addRange(rs [][2]int64, lo, hi int64) ([][2]int64, int64) {
	if n := len(rs); n == 0 || lo > rs[n-1][1] {
		return append(rs, [2]int64{lo, hi}), hi - lo
	} else if lo >= rs[n-1][0] {
		if hi <= rs[n-1][1] {
			return rs, 0
		}
		added := hi - rs[n-1][1]
		rs[n-1][1] = hi
		return rs, added
	}
	// first range that ends at or after lo, first range that starts after hi
	i := sort.Search(len(rs), func(k int) bool { return rs[k][1] >= lo })
	j := sort.Search(len(rs), func(k int) bool { return rs[k][0] > hi })
	added := hi - lo
	for k := i; k < j; k++ {
		added -= min(rs[k][1], hi) - max(rs[k][0], lo)
	}
	if i < j {
		lo, hi = min(lo, rs[i][0]), max(hi, rs[j-1][1])
	}
	merged := append(append(append([][2]int64(nil), rs[:i]...), [2]int64{lo, hi}), rs[j:]...)
	return merged, added
}
