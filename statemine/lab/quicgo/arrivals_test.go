package quicgo

import (
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"
)

// addRange against a byte map, on random overlapping, duplicate and touching ranges.
func TestAddRangeCountsDistinctBytes(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 200; trial++ {
		var rs [][2]int64
		seen := map[int64]bool{}
		total := int64(0)
		for i := 0; i < 40; i++ {
			lo := r.Int64N(500)
			hi := lo + 1 + r.Int64N(60)
			var added int64
			rs, added = addRange(rs, lo, hi)
			want := int64(0)
			for b := lo; b < hi; b++ {
				if !seen[b] {
					seen[b] = true
					want++
				}
			}
			if added != want {
				t.Fatalf("trial %d: [%d,%d) added %d, want %d", trial, lo, hi, added, want)
			}
			total += added
			for k := 1; k < len(rs); k++ {
				if rs[k-1][1] >= rs[k][0] || rs[k][0] >= rs[k][1] {
					t.Fatalf("ranges not disjoint and sorted: %v", rs)
				}
			}
		}
		if total != int64(len(seen)) {
			t.Fatalf("total %d, distinct %d", total, len(seen))
		}
	}
}

func TestArrivalsDone(t *testing.T) {
	a := NewArrivals(100)
	a.StreamFrame(0, 0, 60)
	a.StreamFrame(0, 0, 60) // a retransmission
	a.StreamFrame(4, 0, 30)
	select {
	case <-a.Done():
		t.Fatal("done after 90 of 100 bytes")
	default:
	}
	a.StreamFrame(4, 30, 10)
	a.StreamFrame(4, 30, 10)
	<-a.Done()
	if a.Got() != 100 {
		t.Fatalf("got %d", a.Got())
	}
}

// The application consumes at its rate, all streams together, and stops waiting once
// the transport has every byte (still accounting the consumption time).
func TestAppReaderPacing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rate := 8e6 // 1 MB/s
		transport := make(chan struct{})
		app := NewAppReader(&Client{Profile: "mobile", ReadRateBps: &rate}, 1, transport)
		start := time.Now()
		app.consume(1000)
		app.consume(3000)
		if got := time.Since(start); got != 4*time.Millisecond {
			t.Fatalf("4000 bytes at 1 MB/s took %v", got)
		}
		close(transport)
		app.consume(10000)
		if got := time.Since(start); got != 4*time.Millisecond {
			t.Fatalf("waited after the transport had every byte: %v", got)
		}
		if got := app.finished().Sub(start); got != 14*time.Millisecond {
			t.Fatalf("finished after %v, want 14ms", got)
		}
		if NewAppReader(&Client{Profile: "desktop"}, 1, transport) != nil {
			t.Fatal("the desktop client has no paced application")
		}
	})
}
