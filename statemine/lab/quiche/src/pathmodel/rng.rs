//! A small seedable PRNG: xoshiro256** (Blackman and Vigna, "Scrambled linear
//! pseudorandom number generators", 2021), its state filled by SplitMix64 from a seed and
//! a stream constant (as the Go twin uses PCG(seed, stream)), and the draws the lab needs.

/// One SplitMix64 step (Steele, Lea and Flood, 2014): the next state and output.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// xoshiro256** with helpers for uniform, exponential and normal draws.
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// A generator for `seed` and a `stream` constant (independent streams of one seed).
    pub fn new(seed: u64, stream: u64) -> Rng {
        let mut st = seed ^ stream.wrapping_mul(0xd134_2543_de82_ef95);
        let mut s = [0u64; 4];
        for x in s.iter_mut() {
            *x = splitmix64(&mut st);
        }
        if s == [0; 4] {
            s[0] = 1; // the all-zero state is the one xoshiro cannot leave
        }
        Rng { s }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let r = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        r
    }

    /// Uniform in [0, 1) with 53 random bits.
    pub fn float(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in [lo, hi).
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.float()
    }

    /// Uniform whole number in [0, n) (n > 0), without modulo bias (Lemire's method).
    pub fn below(&mut self, n: u64) -> u64 {
        let threshold = n.wrapping_neg() % n;
        loop {
            let m = (self.next_u64() as u128) * (n as u128);
            if (m as u64) >= threshold {
                return (m >> 64) as u64;
            }
        }
    }

    /// Exponential of mean 1 (inversion; 1 - u is in (0, 1]).
    pub fn exp(&mut self) -> f64 {
        -(1.0 - self.float()).ln()
    }

    /// Standard normal (Box-Muller; one draw of the pair is used, so every call takes
    /// exactly two uniforms and the stream never depends on earlier calls' parity).
    pub fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.float(); // (0, 1]
        let u2 = self.float();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_differ_and_repeat() {
        let (mut a, mut b, mut c) = (Rng::new(1, 7), Rng::new(1, 8), Rng::new(1, 7));
        let xa: Vec<u64> = (0..4).map(|_| a.next_u64()).collect();
        let xb: Vec<u64> = (0..4).map(|_| b.next_u64()).collect();
        let xc: Vec<u64> = (0..4).map(|_| c.next_u64()).collect();
        assert_ne!(xa, xb);
        assert_eq!(xa, xc);
    }

    #[test]
    fn moments() {
        let mut r = Rng::new(3, 1);
        let n = 200_000;
        let (mut su, mut se, mut sn, mut sn2) = (0.0, 0.0, 0.0, 0.0);
        let mut counts = [0u32; 3];
        for _ in 0..n {
            su += r.float();
            se += r.exp();
            let z = r.normal();
            sn += z;
            sn2 += z * z;
            counts[r.below(3) as usize] += 1;
        }
        let n = n as f64;
        assert!((su / n - 0.5).abs() < 0.005);
        assert!((se / n - 1.0).abs() < 0.01);
        assert!((sn / n).abs() < 0.01);
        assert!((sn2 / n - 1.0).abs() < 0.015);
        for c in counts {
            assert!((c as f64 / n - 1.0 / 3.0).abs() < 0.005);
        }
    }
}
