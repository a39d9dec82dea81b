//! statemine lab: quiche's own random draws (packet-number skipping, connection ids it
//! makes itself) from a generator the lab harness seeds, so a run repeats byte for byte.
//! statemine/lab/runners/quiche.py copies this file into the patched quiche tree as
//! src/statemine_lab_rand.rs and makes src/rand.rs's rand_bytes call `fill` first (the
//! role testing/cryptotest.SetGlobalRandom plays in the quic-go harness). It is not a
//! module of the harness itself. TLS secrets still come from BoringSSL (packet sizes, so
//! the path and the congestion controller, do not depend on them).

use std::cell::Cell;

thread_local! {
    static STATE: Cell<Option<u64>> = const { Cell::new(None) };
}

/// Seeds this thread's draws; None: BoringSSL's RAND_bytes again.
pub fn seed(s: Option<u64>) {
    STATE.with(|c| c.set(s));
}

/// Fills `buf` from the seeded SplitMix64 stream (Steele, Lea and Flood, 2014) and returns
/// true when this thread is seeded; false (buf untouched) otherwise.
pub fn fill(buf: &mut [u8]) -> bool {
    STATE.with(|c| {
        let Some(mut x) = c.get() else { return false };
        for chunk in buf.chunks_mut(8) {
            x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            let n = chunk.len();
            chunk.copy_from_slice(&z.to_le_bytes()[..n]);
        }
        c.set(Some(x));
        true
    })
}
