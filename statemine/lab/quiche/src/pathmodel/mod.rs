//! The emulated network path of the statemine lab (docs/lab-protocol.md, "Path model"),
//! the Rust twin of the Python reference `statemine/lab/path.py` and the Go copy
//! `statemine/lab/quicgo/path.go`: same semantics, its own PRNG. Units: rates in bits per
//! second, sizes in bytes, times in seconds of virtual time since the start of the run.

pub mod path;
pub mod rng;
pub mod trace;
pub mod variability;

pub use path::{direction_seed, Link, LinkConfig, LinkStats};
pub use trace::{LinkTrace, OPPORTUNITY_BYTES};
