//! One direction of the emulated path (docs/lab-protocol.md, "Path model"): random loss
//! (Bernoulli or Gilbert-Elliott), a tail-drop bottleneck queue served at a fixed rate, a
//! rate schedule or the opportunities of a link trace, delay with jitter that reorders,
//! and cross traffic (Poisson or ON/OFF) sharing the queue.

use std::collections::VecDeque;
use std::sync::Arc;

use serde::Deserialize;

use super::rng::Rng;
use super::trace::{LinkTrace, OPPORTUNITY_BYTES};

/// Stream constants of the generators of one direction's seed (loss and jitter; the rate
/// schedule; the trace offset; the cross traffic), so none depends on the traffic.
const STREAM_PACKETS: u64 = 0x5157_a7e;
const STREAM_SCHEDULE: u64 = 0x5c4e_d01e;
const STREAM_OFFSET: u64 = 0x7ace_0ff5;
const STREAM_CROSS: u64 = 0xc2055;

/// A two-state Gilbert-Elliott loss chain stepped once per packet.
#[derive(Clone, Debug, Deserialize)]
pub struct Gilbert {
    pub p_gb: f64,
    pub p_bg: f64,
    pub loss_good: f64,
    pub loss_bad: f64,
}

/// The bottleneck rate redrawn uniformly in [lo_bps, hi_bps] every interval_s seconds.
#[derive(Clone, Debug, Deserialize)]
pub struct RateSchedule {
    pub lo_bps: f64,
    pub hi_bps: f64,
    pub interval_s: f64,
}

/// Other flows' packets at the bottleneck: `load` is a fraction of rate_bps in [0, 1);
/// Poisson, or ON/OFF (exponential periods of means mean_on_s / mean_off_s) when
/// mean_off_s > 0.
#[derive(Clone, Debug, Deserialize)]
pub struct CrossTraffic {
    pub load: f64,
    #[serde(default = "default_packet_bytes")]
    pub packet_bytes: f64,
    #[serde(default)]
    pub mean_on_s: f64,
    #[serde(default)]
    pub mean_off_s: f64,
}

fn default_packet_bytes() -> f64 {
    1500.0
}

/// A mahimahi link trace: the file (absolute when the harness gets it) and an optional
/// fixed start offset, ms (None: drawn from the seed).
#[derive(Clone, Debug, Deserialize)]
pub struct LinkTraceRef {
    pub file: String,
    #[serde(default)]
    pub offset_ms: Option<f64>,
    #[serde(default)]
    pub sha256: Option<String>,
}

/// One direction of the path.
#[derive(Clone, Debug, Deserialize)]
pub struct LinkConfig {
    pub rate_bps: f64,
    pub buffer_bytes: f64,
    pub delay_s: f64,
    #[serde(default)]
    pub jitter_s: f64,
    #[serde(default)]
    pub loss: f64,
    #[serde(default)]
    pub gilbert: Option<Gilbert>,
    #[serde(default)]
    pub rate_schedule: Option<RateSchedule>,
    #[serde(default)]
    pub cross_traffic: Option<CrossTraffic>,
    #[serde(default)]
    pub link_trace: Option<LinkTraceRef>,
}

fn finite(key: &str, v: f64) -> Result<(), String> {
    if v.is_finite() {
        Ok(())
    } else {
        Err(format!("{key}: must be finite, not {v}"))
    }
}

fn probability(key: &str, v: f64) -> Result<(), String> {
    if (0.0..=1.0).contains(&v) {
        Ok(())
    } else {
        Err(format!(
            "{key}: is a probability and must be in [0, 1], not {v}"
        ))
    }
}

impl LinkConfig {
    /// The first impossible parameter, naming its key.
    pub fn validate(&self) -> Result<(), String> {
        for (k, v) in [
            ("rate_bps", self.rate_bps),
            ("buffer_bytes", self.buffer_bytes),
            ("delay_s", self.delay_s),
            ("jitter_s", self.jitter_s),
        ] {
            finite(k, v)?;
        }
        if self.rate_bps <= 0.0 {
            return Err(format!("rate_bps: must be > 0, not {}", self.rate_bps));
        }
        if self.buffer_bytes < 0.0 || self.buffer_bytes.fract() != 0.0 {
            return Err(format!(
                "buffer_bytes: must be a whole number >= 0, not {}",
                self.buffer_bytes
            ));
        }
        if self.delay_s < 0.0 {
            return Err(format!("delay_s: must be >= 0, not {}", self.delay_s));
        }
        if self.jitter_s < 0.0 {
            return Err(format!("jitter_s: must be >= 0, not {}", self.jitter_s));
        }
        probability("loss", self.loss)?;
        if let Some(g) = &self.gilbert {
            probability("gilbert.p_gb", g.p_gb)?;
            probability("gilbert.p_bg", g.p_bg)?;
            probability("gilbert.loss_good", g.loss_good)?;
            probability("gilbert.loss_bad", g.loss_bad)?;
        }
        if let Some(s) = &self.rate_schedule {
            if !(s.lo_bps > 0.0 && s.lo_bps.is_finite()) {
                return Err(format!(
                    "rate_schedule.lo_bps: must be > 0, not {}",
                    s.lo_bps
                ));
            }
            if !(s.hi_bps >= s.lo_bps && s.hi_bps.is_finite()) {
                return Err(format!(
                    "rate_schedule.hi_bps: must be >= lo_bps ({}), not {}",
                    s.lo_bps, s.hi_bps
                ));
            }
            if !(s.interval_s > 0.0 && s.interval_s.is_finite()) {
                return Err(format!(
                    "rate_schedule.interval_s: must be > 0, not {}",
                    s.interval_s
                ));
            }
        }
        if let Some(x) = &self.cross_traffic {
            if !(x.load >= 0.0 && x.load < 1.0) {
                return Err(format!(
                    "cross_traffic.load: is a fraction of the link rate and must be in [0, 1), not {}",
                    x.load
                ));
            }
            if !(1.0..=65535.0).contains(&x.packet_bytes) || x.packet_bytes.fract() != 0.0 {
                return Err(format!(
                    "cross_traffic.packet_bytes: must be a whole number in [1, 65535], not {}",
                    x.packet_bytes
                ));
            }
            if !(x.mean_on_s >= 0.0
                && x.mean_off_s >= 0.0
                && x.mean_on_s.is_finite()
                && x.mean_off_s.is_finite())
            {
                return Err("cross_traffic.mean_on_s: ON/OFF means must be >= 0".into());
            }
            if x.mean_off_s > 0.0 && x.mean_on_s <= 0.0 {
                return Err("cross_traffic.mean_on_s: must be > 0 when mean_off_s is > 0".into());
            }
        }
        if let Some(r) = &self.link_trace {
            if r.file.is_empty() {
                return Err("link_trace.file: is required (a file name)".into());
            }
            if let Some(o) = r.offset_ms {
                if !(o >= 0.0 && o.is_finite() && o.fract() == 0.0) {
                    return Err(format!(
                        "link_trace.offset_ms: must be a whole number >= 0, not {o}"
                    ));
                }
            }
            if self.rate_schedule.is_some() {
                return Err(
                    "link_trace: cannot be combined with rate_schedule (both set the rate)".into(),
                );
            }
        }
        Ok(())
    }
}

/// The PRNG seed of one direction: seed*2+1 for down (server -> client), seed*2+2 for up.
pub fn direction_seed(seed: u64, down: bool) -> u64 {
    seed.wrapping_mul(2).wrapping_add(if down { 1 } else { 2 })
}

/// Packet counts of one link.
#[derive(Clone, Debug, Default)]
pub struct LinkStats {
    /// Offered to the link.
    pub sent: u64,
    /// Dropped by random (or Gilbert-Elliott) loss.
    pub lost: u64,
    /// Dropped by the full bottleneck queue.
    pub tail_dropped: u64,
    /// Bytes of the packets not dropped.
    pub delivered_bytes: u64,
    /// Cross-traffic packets offered, tail-dropped, and bytes served.
    pub cross_sent: u64,
    pub cross_dropped: u64,
    pub cross_bytes: u64,
}

impl LinkStats {
    /// Every packet the link dropped.
    pub fn dropped(&self) -> u64 {
        self.lost + self.tail_dropped
    }
}

/// Arrival times (s) of cross-traffic packets, in order: Poisson at
/// lam = load*rate/(8*packet_bytes) per second; ON/OFF: the chain starts ON with
/// probability on/(on+off), each period lasts an exponential time of its mean, and
/// arrivals are Poisson at lam*(on+off)/on within ON periods only.
struct CrossArrivals {
    rng: Rng,
    lam: f64,
    on_off: bool,
    mean_off: f64,
    mean_on: f64,
    on: bool,
    end: f64,
    t: f64,
}

impl CrossArrivals {
    fn new(c: &CrossTraffic, rate_bps: f64, mut rng: Rng) -> CrossArrivals {
        let mut lam = c.load * rate_bps / (8.0 * c.packet_bytes);
        let on_off = c.mean_off_s > 0.0;
        let (mut on, mut end) = (true, 0.0);
        if on_off {
            lam *= (c.mean_on_s + c.mean_off_s) / c.mean_on_s;
            on = rng.float() < c.mean_on_s / (c.mean_on_s + c.mean_off_s);
            end = rng.exp() * if on { c.mean_on_s } else { c.mean_off_s };
        }
        CrossArrivals {
            rng,
            lam,
            on_off,
            mean_off: c.mean_off_s,
            mean_on: c.mean_on_s,
            on,
            end,
            t: 0.0,
        }
    }

    fn next(&mut self) -> f64 {
        if !self.on_off {
            self.t += self.rng.exp() / self.lam;
            return self.t;
        }
        loop {
            if self.on {
                let t = self.t + self.rng.exp() / self.lam;
                if t <= self.end {
                    self.t = t;
                    return t;
                }
            }
            self.t = self.end;
            self.on = !self.on;
            self.end += self.rng.exp() * if self.on { self.mean_on } else { self.mean_off };
        }
    }
}

/// One stateful direction of the path. `send` must be called with non-decreasing times.
pub struct Link {
    cfg: LinkConfig,
    rng: Rng,
    sched_rng: Rng,
    phase: f64,
    rates: Vec<f64>,
    link_free: f64,
    queue: VecDeque<(f64, i64)>, // (departure s, bytes) not yet fully serialised
    queued: i64,
    bad: bool,
    last_t: f64,
    trace: Option<Arc<LinkTrace>>,
    offset_ms: f64,
    pos: i64,
    cross: Option<CrossArrivals>,
    cross_at: f64,
    cross_bytes: i64,
    pub stats: LinkStats,
}

impl Link {
    /// A link with the given (validated) configuration and direction seed; a link trace
    /// in `cfg` must be given parsed in `trace` (None: read cfg.link_trace.file).
    pub fn new(cfg: LinkConfig, seed: u64, trace: Option<Arc<LinkTrace>>) -> Result<Link, String> {
        let mut sched_rng = Rng::new(seed, STREAM_SCHEDULE);
        let phase = match &cfg.rate_schedule {
            Some(s) => sched_rng.uniform(0.0, s.interval_s),
            None => 0.0,
        };
        let (mut trace_out, mut offset_ms) = (None, 0.0);
        if let Some(r) = &cfg.link_trace {
            let tr = match trace {
                Some(t) => t,
                None => Arc::new(LinkTrace::read(&r.file)?),
            };
            offset_ms = match r.offset_ms {
                Some(o) => o,
                None => Rng::new(seed, STREAM_OFFSET).below(tr.period_ms as u64) as f64,
            };
            trace_out = Some(tr);
        }
        let (mut cross, mut cross_at, mut cross_bytes) = (None, f64::INFINITY, 0);
        if let Some(c) = cfg.cross_traffic.as_ref().filter(|c| c.load > 0.0) {
            let mut a = CrossArrivals::new(c, cfg.rate_bps, Rng::new(seed, STREAM_CROSS));
            cross_at = a.next();
            cross_bytes = c.packet_bytes as i64;
            cross = Some(a);
        }
        Ok(Link {
            cfg,
            rng: Rng::new(seed, STREAM_PACKETS),
            sched_rng,
            phase,
            rates: Vec::new(),
            link_free: 0.0,
            queue: VecDeque::new(),
            queued: 0,
            bad: false,
            last_t: f64::NEG_INFINITY,
            trace: trace_out,
            offset_ms,
            pos: 0,
            cross,
            cross_at,
            cross_bytes,
            stats: LinkStats::default(),
        })
    }

    /// The rate schedule's phase, s.
    pub fn phase(&self) -> f64 {
        self.phase
    }

    /// The link trace's start offset, ms.
    pub fn offset_ms(&self) -> f64 {
        self.offset_ms
    }

    fn lose(&mut self) -> bool {
        let p = match &self.cfg.gilbert {
            None => {
                return self.cfg.loss > 0.0 && self.rng.float() < self.cfg.loss;
            }
            Some(g) => {
                self.bad = if self.bad {
                    self.rng.float() >= g.p_bg
                } else {
                    self.rng.float() < g.p_gb
                };
                if self.bad {
                    g.loss_bad
                } else {
                    g.loss_good
                }
            }
        };
        p > 0.0 && self.rng.float() < p
    }

    /// The bottleneck rate (bits/s) in force at time t (without a trace). Interval k of
    /// the schedule covers [k*interval - phase, (k+1)*interval - phase).
    pub fn rate_at(&mut self, t: f64) -> f64 {
        let Some(s) = &self.cfg.rate_schedule else {
            return self.cfg.rate_bps;
        };
        let k = ((t + self.phase) / s.interval_s).floor() as usize;
        while self.rates.len() <= k {
            let r = self.sched_rng.uniform(s.lo_bps, s.hi_bps);
            self.rates.push(r);
        }
        self.rates[k]
    }

    /// Bytes at the bottleneck not yet fully serialised at t.
    pub fn queued_bytes(&mut self, t: f64) -> i64 {
        while let Some(&(depart, n)) = self.queue.front() {
            if depart > t {
                break;
            }
            self.queued -= n;
            self.queue.pop_front();
        }
        self.queued
    }

    fn delay(&mut self) -> f64 {
        let mut d = self.cfg.delay_s;
        let j = self.cfg.jitter_s;
        if j > 0.0 {
            d += self.rng.uniform(-j, j);
        }
        d.max(0.0)
    }

    /// Queues n bytes arriving at the bottleneck at t: the departure time, or None when
    /// the buffer is full (tail drop).
    fn serialise(&mut self, t: f64, n: i64) -> Option<f64> {
        if (self.queued_bytes(t) + n) as f64 > self.cfg.buffer_bytes {
            return None;
        }
        let depart = match &self.trace {
            None => {
                let start = t.max(self.link_free);
                start + 8.0 * n as f64 / self.rate_at(start)
            }
            Some(tr) => {
                let before =
                    OPPORTUNITY_BYTES * tr.opportunities_before(t * 1000.0 + self.offset_ms);
                self.pos = self.pos.max(before) + n;
                let last = (self.pos - 1) / OPPORTUNITY_BYTES;
                // never before t: an opportunity at t ms is not before t (rounding)
                ((tr.opportunity_ms(last) as f64 - self.offset_ms) / 1000.0).max(t)
            }
        };
        self.link_free = depart;
        self.queue.push_back((depart, n));
        self.queued += n;
        Some(depart)
    }

    /// Lets the cross traffic that arrives up to time t into the queue.
    pub fn advance(&mut self, t: f64) {
        while self.cross_at <= t {
            let (at, size) = (self.cross_at, self.cross_bytes);
            self.stats.cross_sent += 1;
            if self.serialise(at, size).is_some() {
                self.stats.cross_bytes += size as u64;
            } else {
                self.stats.cross_dropped += 1;
            }
            self.cross_at = self.cross.as_mut().map_or(f64::INFINITY, |c| c.next());
        }
    }

    /// Offers a packet of n bytes at time t (s); the arrival time, or None when dropped.
    /// Panics if t is earlier than the previous call's.
    pub fn send(&mut self, t: f64, n: usize) -> Option<f64> {
        assert!(
            t >= self.last_t,
            "path: send times must not decrease ({t} < {})",
            self.last_t
        );
        self.last_t = t;
        self.advance(t);
        self.stats.sent += 1;
        if self.lose() {
            self.stats.lost += 1;
            return None;
        }
        let Some(depart) = self.serialise(t, n as i64) else {
            self.stats.tail_dropped += 1;
            return None;
        };
        self.stats.delivered_bytes += n as u64;
        Some(depart + self.delay())
    }
}
