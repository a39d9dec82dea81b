package quicgo

// The test vectors of docs/lab-protocol.md ("Test vectors"), shared with the Python
// reference (tests/test_lab_vectors.py): testdata/path-vectors.json is a copy of
// statemine/lab/data/path-vectors.json made when the harness module is prepared.

import (
	"encoding/json"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
)

type vectorFile struct {
	Deterministic []struct {
		Name   string
		Link   LinkConfig
		Trace  []int64
		Sends  [][2]float64
		Expect []*float64
	}
	Statistical []struct {
		Name, Kind            string
		Seed                  int64
		Packets, Seeds, Draws int
		Intervals             int
		SpacingS              float64 `json:"spacing_s"`
		Size                  int
		DurationS             float64 `json:"duration_s"`
		MeanS                 float64 `json:"mean_s"`
		CV                    float64 `json:"cv"`
		Link                  LinkConfig
		Expect, Tol           float64
	}
}

func readVectors(t *testing.T) vectorFile {
	data, err := os.ReadFile("testdata/path-vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var v vectorFile
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func vectorLink(t *testing.T, cfg LinkConfig, trace []int64, seed uint64) *Link {
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	var tr *LinkTrace
	if trace != nil {
		lines := make([]string, len(trace))
		for i, v := range trace {
			lines[i] = strconv.FormatInt(v, 10)
		}
		var err error
		if tr, err = ParseLinkTrace([]byte(strings.Join(lines, "\n"))); err != nil {
			t.Fatal(err)
		}
	}
	l, err := NewLinkWithTrace(cfg, seed, tr)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestVectorsDeterministic(t *testing.T) {
	for _, v := range readVectors(t).Deterministic {
		l := vectorLink(t, v.Link, v.Trace, 1)
		for i, s := range v.Sends {
			at, ok := l.Send(s[0], int(s[1]))
			want := v.Expect[i]
			if ok != (want != nil) || (ok && math.Abs(at-*want) > 1e-9) {
				t.Errorf("%s: send %d: got %v %v, want %v", v.Name, i, at, ok, want)
			}
		}
	}
}

func TestVectorsStatistical(t *testing.T) {
	for _, v := range readVectors(t).Statistical {
		var got float64
		switch v.Kind {
		case "loss_share", "mean_burst", "mean_delay", "reordered_share":
			l := vectorLink(t, v.Link, nil, uint64(v.Seed))
			arr := make([]float64, v.Packets)
			lost := make([]bool, v.Packets)
			for i := range arr {
				at, ok := l.Send(float64(i)*v.SpacingS, v.Size)
				arr[i], lost[i] = at, !ok
			}
			switch v.Kind {
			case "loss_share":
				got = float64(l.Stats.Lost) / float64(l.Stats.Sent)
			case "mean_burst":
				n, bursts := 0, 0
				for i, x := range lost {
					if x {
						n++
						if i == 0 || !lost[i-1] {
							bursts++
						}
					}
				}
				got = float64(n) / float64(bursts)
			case "mean_delay":
				for i, a := range arr {
					got += a - float64(i)*v.SpacingS
				}
				got /= float64(len(arr))
			default:
				for i := 1; i < len(arr); i++ {
					if arr[i] < arr[i-1] {
						got++
					}
				}
				got /= float64(len(arr) - 1)
			}
		case "cross_load":
			l := vectorLink(t, v.Link, nil, uint64(v.Seed))
			l.Advance(v.DurationS)
			got = float64(l.Stats.CrossBytes) * 8 / (v.Link.RateBps * v.DurationS)
		case "phase_mean":
			for s := 1; s <= v.Seeds; s++ {
				got += vectorLink(t, v.Link, nil, uint64(s)).Phase()
			}
			got /= float64(v.Seeds) * v.Link.RateSchedule.IntervalS
		case "cpu_mean", "cpu_cv":
			c := NewCPUTime(v.MeanS, v.CV, v.Seed)
			var sum, sq float64
			for i := 0; i < v.Draws; i++ {
				x := c.Draw().Seconds()
				sum += x
				sq += x * x
			}
			mean := sum / float64(v.Draws)
			got = mean
			if v.Kind == "cpu_cv" {
				got = math.Sqrt(sq/float64(v.Draws)-mean*mean) / mean
			}
		case "read_factor_mean":
			r := NewReadRate(1, v.CV, 1, v.Seed)
			for k := 0; k < v.Intervals; k++ {
				got += r.At(float64(k) + 0.5)
			}
			got /= float64(v.Intervals)
		default:
			t.Fatalf("%s: unknown kind %q", v.Name, v.Kind)
		}
		if math.Abs(got-v.Expect) > v.Tol {
			t.Errorf("%s: %v, want %v +- %v", v.Name, got, v.Expect, v.Tol)
		} else {
			t.Logf("%s: %v (want %v +- %v)", v.Name, got, v.Expect, v.Tol)
		}
	}
}

// Malformed traces are refused with the line of the problem.
func TestLinkTraceErrors(t *testing.T) {
	for text, want := range map[string]string{
		"":         "empty link trace",
		"1\nx\n":   "line 2: not a whole number",
		"5\n3\n":   "line 2: timestamps decrease",
		"0\n0\n":   "every timestamp is 0",
		"1\n-2\n":  "line 2: not a whole number",
		"1\n2.5\n": "line 2: not a whole number",
	} {
		_, err := ParseLinkTrace([]byte(text))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", text, err, want)
		}
	}
	if _, err := ReadLinkTrace("/nonexistent/trace.down"); err == nil {
		t.Error("a missing file must fail")
	}
}
