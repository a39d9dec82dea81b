//! Link traces in the mahimahi format (docs/lab-protocol.md, "Link traces"): one line per
//! delivery opportunity for one 1500-byte packet, a whole number of ms, non-decreasing;
//! the trace loops with period its last timestamp. Both lookups are O(1) through a table
//! with one entry per ms of the period. Twin of statemine/lab/cellular.py's LinkTrace.

use std::io::Read;

/// What one delivery opportunity carries, bytes.
pub const OPPORTUNITY_BYTES: i64 = 1500;
/// Longest period (ms), most lines and largest file (bytes) of a trace.
pub const MAX_TRACE_PERIOD_MS: i64 = 3_600_000;
pub const MAX_TRACE_LINES: usize = 5_000_000;
pub const MAX_TRACE_BYTES: u64 = 64 << 20;

/// A parsed trace.
#[derive(Clone, Debug)]
pub struct LinkTrace {
    /// Loop 0's opportunities, ms.
    pub times_ms: Vec<i64>,
    /// The last timestamp (> 0), ms.
    pub period_ms: i64,
    /// before[c] = number of timestamps < c, for c in [0, period_ms].
    before: Vec<i64>,
    /// Number of timestamps equal to period_ms.
    at_period: i64,
}

impl LinkTrace {
    /// Parses a trace's text; errors name the line ("line N: ...").
    pub fn parse(text: &[u8]) -> Result<LinkTrace, String> {
        let text = text.strip_suffix(b"\n").unwrap_or(text);
        if text.is_empty() {
            return Err("empty link trace (one timestamp in ms per line expected)".into());
        }
        let mut times: Vec<i64> = Vec::new();
        for (i, raw) in text.split(|&b| b == b'\n').enumerate() {
            if i >= MAX_TRACE_LINES {
                return Err(format!(
                    "line {}: more than {} lines",
                    i + 1,
                    MAX_TRACE_LINES
                ));
            }
            let s = raw.trim_ascii();
            let ok = !s.is_empty() && s.len() <= 12 && s.iter().all(|b| b.is_ascii_digit());
            if !ok {
                let shown = String::from_utf8_lossy(&raw[..raw.len().min(40)]).into_owned();
                return Err(format!(
                    "line {}: not a whole number of milliseconds: {:?}",
                    i + 1,
                    shown
                ));
            }
            let v: i64 = std::str::from_utf8(s).unwrap().parse().unwrap();
            if let Some(&prev) = times.last() {
                if v < prev {
                    return Err(format!(
                        "line {}: timestamps decrease ({} then {})",
                        i + 1,
                        prev,
                        v
                    ));
                }
            }
            times.push(v);
        }
        let period = *times.last().unwrap();
        if period == 0 {
            return Err("every timestamp is 0: the trace has no duration".into());
        }
        if period > MAX_TRACE_PERIOD_MS {
            return Err(format!(
                "line {}: the trace lasts {} ms, longer than {} ms",
                times.len(),
                period,
                MAX_TRACE_PERIOD_MS
            ));
        }
        let mut counts = vec![0i64; period as usize + 1];
        for &v in &times {
            counts[v as usize] += 1;
        }
        let mut before = vec![0i64; period as usize + 1];
        for c in 1..=period as usize {
            before[c] = before[c - 1] + counts[c - 1];
        }
        let at_period = counts[period as usize];
        Ok(LinkTrace {
            times_ms: times,
            period_ms: period,
            before,
            at_period,
        })
    }

    /// Reads and parses a trace file (only a regular file of at most MAX_TRACE_BYTES);
    /// errors name the file.
    pub fn read(path: &str) -> Result<LinkTrace, String> {
        let meta = std::fs::metadata(path).map_err(|e| format!("{path}: {e}"))?;
        if !meta.is_file() {
            return Err(format!("{path}: not a regular file"));
        }
        let mut data = Vec::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(MAX_TRACE_BYTES + 1).read_to_end(&mut data))
            .map_err(|e| format!("{path}: {e}"))?;
        if data.len() as u64 > MAX_TRACE_BYTES {
            return Err(format!(
                "{path}: link trace larger than {MAX_TRACE_BYTES} bytes"
            ));
        }
        LinkTrace::parse(&data).map_err(|e| format!("{path}: {e}"))
    }

    /// The trace's average capacity, bits/s.
    pub fn mean_rate_bps(&self) -> f64 {
        (OPPORTUNITY_BYTES * 8) as f64 * self.times_ms.len() as f64
            / (self.period_ms as f64 / 1000.0)
    }

    /// How many opportunities lie strictly before trace time `tt` (ms, >= 0), counting
    /// every loop (loop r has the opportunities T_i + r*P).
    pub fn opportunities_before(&self, tt: f64) -> i64 {
        let p = self.period_ms as f64;
        let r = (tt / p).floor();
        let x = (tt - r * p).clamp(0.0, p);
        let c = x.ceil() as usize;
        let mut n = r as i64 * self.times_ms.len() as i64 + self.before[c];
        if c == 0 && r > 0.0 {
            n -= self.at_period; // loop r-1's opportunities at exactly r*P are not before
        }
        n
    }

    /// The trace time (ms) of opportunity k (0-based, counting every loop).
    pub fn opportunity_ms(&self, k: i64) -> i64 {
        let l = self.times_ms.len() as i64;
        self.times_ms[(k % l) as usize] + (k / l) * self.period_ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_traces_name_the_line() {
        for (text, want) in [
            ("", "empty link trace"),
            ("1\nx\n", "line 2: not a whole number"),
            ("5\n3\n", "line 2: timestamps decrease"),
            ("0\n0\n", "every timestamp is 0"),
            ("1\n-2\n", "line 2: not a whole number"),
            ("1\n2.5\n", "line 2: not a whole number"),
            ("1\n\n3\n", "line 2: not a whole number"),
            ("3600001\n", "line 1: the trace lasts"),
        ] {
            let err = LinkTrace::parse(text.as_bytes()).unwrap_err();
            assert!(err.contains(want), "{text:?}: {err}");
        }
        assert!(LinkTrace::read("/nonexistent/trace.down").is_err());
        assert!(LinkTrace::read("/")
            .unwrap_err()
            .contains("not a regular file"));
    }

    #[test]
    fn lookups_count_every_loop() {
        let t = LinkTrace::parse(b"0\n0\n5\n10\n").unwrap();
        assert_eq!(t.period_ms, 10);
        assert_eq!(t.opportunities_before(0.0), 0);
        assert_eq!(t.opportunities_before(0.5), 2);
        assert_eq!(t.opportunities_before(10.0), 3); // loop 0's "10" is not before 10
        assert_eq!(t.opportunities_before(10.5), 6);
        assert_eq!(t.opportunity_ms(4), 10);
        assert_eq!(t.opportunity_ms(7), 20);
        assert!((t.mean_rate_bps() - 4.0 * 12000.0 / 0.01).abs() < 1e-6);
    }
}
