//! The run config and run result of docs/lab-protocol.md (the quiche runner's subset).

use crate::pathmodel::LinkConfig;
use serde::{Deserialize, Serialize};

/// What the client requests: `count` objects of `size_bytes` each, one stream each.
#[derive(Clone, Debug, Deserialize)]
pub struct Objects {
    pub count: u64,
    pub size_bytes: u64,
}

/// The client profile (docs/lab-protocol.md, "Run config" and "Client variability").
#[derive(Clone, Debug, Deserialize)]
pub struct Client {
    pub profile: String,
    #[serde(default)]
    pub read_rate_bps: Option<f64>,
    #[serde(default)]
    pub per_packet_cpu_s: f64,
    #[serde(default)]
    pub per_packet_cpu_cv: f64,
    #[serde(default)]
    pub read_rate_cv: f64,
    #[serde(default)]
    pub read_rate_interval_s: f64,
    #[serde(default)]
    pub socket_buffer_bytes: Option<u64>,
    #[serde(default)]
    pub max_data_bytes: Option<u64>,
    #[serde(default)]
    pub max_stream_data_bytes: Option<u64>,
}

/// Both directions: down is server -> client, up is client -> server.
#[derive(Clone, Debug, Deserialize)]
pub struct PathPair {
    pub down: LinkConfig,
    pub up: LinkConfig,
}

/// One run.
#[derive(Clone, Debug, Deserialize)]
pub struct Config {
    pub seed: u64,
    #[serde(default)]
    pub version: String,
    pub objects: Objects,
    pub client: Client,
    pub path: PathPair,
    /// The congestion controller of both ends: reno, cubic or bbr2 (None: quiche's, CUBIC).
    #[serde(default)]
    pub cc: Option<String>,
    #[serde(default)]
    pub reordering_threshold: Option<u64>,
    #[serde(default)]
    pub time_threshold: Option<f64>,
    pub time_limit_s: f64,
    pub log_path: String,
    pub result_path: String,
}

/// The congestion controllers a run may name (scenario key `cc`), as quiche names them
/// (`bbr2`: the gcongestion port of Google's BBRv2 from quiche 0.25 on, quiche's own BBR2
/// before).
pub const CONTROLLERS: [&str; 3] = ["reno", "cubic", "bbr2"];

/// Linux's rmem_default: the mobile client's socket receive buffer unless set, bytes.
pub const DEFAULT_SOCKET_BUFFER: u64 = 212_992;
/// How often the read rate is redrawn unless the config says, s.
pub const DEFAULT_READ_INTERVAL_S: f64 = 0.1;

impl Config {
    /// quiche's name of the run's controller (quiche's default: cubic).
    pub fn quiche_cc(&self) -> &str {
        self.cc.as_deref().unwrap_or("cubic")
    }

    /// Whether the client is the mobile profile.
    pub fn mobile(&self) -> bool {
        self.client.profile == "mobile"
    }

    /// The first impossible value, naming its key.
    pub fn validate(&self) -> Result<(), String> {
        let c = &self.client;
        if self.objects.count < 1 {
            return Err("objects.count: must be >= 1".into());
        }
        if self.objects.size_bytes < 1 {
            return Err("objects.size_bytes: must be >= 1".into());
        }
        if self.objects.count.saturating_mul(self.objects.size_bytes) > 1 << 30 {
            return Err("objects: count x size_bytes must be <= 2^30 bytes".into());
        }
        if c.profile != "desktop" && c.profile != "mobile" {
            return Err(format!(
                "client.profile: must be desktop or mobile, not {:?}",
                c.profile
            ));
        }
        if self.mobile() && !c.read_rate_bps.is_some_and(|r| r > 0.0 && r.is_finite()) {
            return Err("client.read_rate_bps: the mobile profile needs a rate > 0".into());
        }
        if !(0.0..=1.0).contains(&c.per_packet_cpu_s) {
            return Err(format!(
                "client.per_packet_cpu_s: must be in [0, 1], not {}",
                c.per_packet_cpu_s
            ));
        }
        if !(0.0..=10.0).contains(&c.per_packet_cpu_cv) {
            return Err(format!(
                "client.per_packet_cpu_cv: must be in [0, 10], not {}",
                c.per_packet_cpu_cv
            ));
        }
        if !(0.0..=10.0).contains(&c.read_rate_cv) {
            return Err(format!(
                "client.read_rate_cv: must be in [0, 10], not {}",
                c.read_rate_cv
            ));
        }
        if c.read_rate_cv > 0.0
            && !(c.read_rate_interval_s > 0.0 && c.read_rate_interval_s <= 3600.0)
        {
            return Err(
                "client.read_rate_interval_s: must be in (0, 3600] with read_rate_cv".into(),
            );
        }
        for (key, v) in [
            ("client.socket_buffer_bytes", c.socket_buffer_bytes),
            ("client.max_data_bytes", c.max_data_bytes),
            ("client.max_stream_data_bytes", c.max_stream_data_bytes),
        ] {
            if v == Some(0) {
                return Err(format!("{key}: must be >= 1"));
            }
        }
        if let Some(cc) = &self.cc {
            if !CONTROLLERS.contains(&cc.as_str()) {
                return Err(format!(
                    "cc: unknown congestion controller {cc:?} (known: {})",
                    CONTROLLERS.join(", ")
                ));
            }
        }
        if self
            .reordering_threshold
            .is_some_and(|r| !(1..=65535).contains(&r))
        {
            return Err("reordering_threshold: must be an integer in [1, 65535]".into());
        }
        if self
            .time_threshold
            .is_some_and(|t| !(1.0..=32.0).contains(&t))
        {
            return Err("time_threshold: must be in [1, 32]".into());
        }
        if !(self.time_limit_s > 0.0 && self.time_limit_s <= 3600.0) {
            return Err(format!(
                "time_limit_s: must be in (0, 3600], not {}",
                self.time_limit_s
            ));
        }
        if self.log_path.is_empty() || self.result_path.is_empty() {
            return Err("log_path and result_path are required".into());
        }
        self.path
            .down
            .validate()
            .map_err(|e| format!("path.down.{e}"))?;
        self.path
            .up
            .validate()
            .map_err(|e| format!("path.up.{e}"))?;
        Ok(())
    }
}

/// The run result (docs/lab-protocol.md, "Run result").
#[derive(Clone, Debug, Default, Serialize)]
pub struct RunResult {
    pub ok: bool,
    pub error: Option<String>,
    pub plt_s: Option<f64>,
    pub bytes: u64,
    pub throughput_bps: Option<f64>,
    pub retransmissions: u64,
    pub packets_sent: u64,
    pub packets_dropped: u64,
    pub virtual_time_s: f64,
    pub wall_time_s: f64,
    pub cpu_time_s: Option<f64>,
    /// The server's smoothed and minimum RTT at the end, s (real-time mode only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub srtt_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_rtt_s: Option<f64>,
    pub implementation: String,
    pub version: String,
    pub cc: String,
}
