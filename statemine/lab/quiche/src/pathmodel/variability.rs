//! The mobile client's random elements (docs/lab-protocol.md, "Client variability"), the
//! Rust twin of statemine/lab/variability.py: a lognormal per-packet CPU time and an
//! application read rate redrawn every interval. Each has its own generator of the run's
//! seed; a coefficient of variation of 0 turns the source off.

use super::rng::Rng;

const STREAM_CPU: u64 = 0xc0c0;
const STREAM_READ: u64 = 0x4ead;

/// A lognormal draw of the given mean and coefficient of variation (the mean itself when
/// cv or mean is 0): exp(mu + sigma*z), sigma^2 = ln(1+cv^2), mu = ln(mean) - sigma^2/2.
pub fn lognormal(rng: &mut Rng, mean: f64, cv: f64) -> f64 {
    if cv == 0.0 || mean == 0.0 {
        return mean;
    }
    let s2 = (cv * cv).ln_1p();
    (mean.ln() - s2 / 2.0 + s2.sqrt() * rng.normal()).exp()
}

/// The per-packet CPU time of the mobile network thread, s.
pub struct CpuTime {
    pub mean_s: f64,
    pub cv: f64,
    rng: Rng,
}

impl CpuTime {
    pub fn new(mean_s: f64, cv: f64, seed: u64) -> CpuTime {
        CpuTime {
            mean_s,
            cv,
            rng: Rng::new(seed, STREAM_CPU),
        }
    }

    /// The CPU time of the next packet taken from the socket, s.
    pub fn draw(&mut self) -> f64 {
        lognormal(&mut self.rng, self.mean_s, self.cv)
    }
}

/// The application's read rate over time: rate_bps times a lognormal factor of mean 1 and
/// coefficient of variation cv, redrawn every interval_s from t=0 (lazily, in order).
pub struct ReadRate {
    pub rate_bps: f64,
    pub cv: f64,
    pub interval_s: f64,
    rng: Rng,
    factors: Vec<f64>,
}

impl ReadRate {
    pub fn new(rate_bps: f64, cv: f64, interval_s: f64, seed: u64) -> ReadRate {
        ReadRate {
            rate_bps,
            cv,
            interval_s,
            rng: Rng::new(seed, STREAM_READ),
            factors: Vec::new(),
        }
    }

    /// The read rate (bits/s) in force at t (s since the start of the run).
    pub fn at(&mut self, t: f64) -> f64 {
        if self.cv == 0.0 {
            return self.rate_bps;
        }
        let k = (t / self.interval_s).floor().max(0.0) as usize;
        while self.factors.len() <= k {
            let f = lognormal(&mut self.rng, 1.0, self.cv);
            self.factors.push(f);
        }
        self.rate_bps * self.factors[k]
    }
}
