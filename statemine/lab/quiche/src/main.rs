//! `statemine-quiche-harness CONFIG.json`: one lab run of quiche (docs/lab-protocol.md).
//! Writes the statemine log (the instrument patch's lines, virtual `t=`; real time over
//! inherited sockets with $STATEMINE_REALNET_FDS, src/realnet.rs) to the config's
//! `log_path`, a qlog per connection into $QLOGDIR when set, and the run result to
//! `result_path`. Exit 0 when a result was written (ok or not), 2 for a bad config (one
//! line on stderr naming the key), 1 when even the result could not be written.

mod config;
#[allow(dead_code, unused_imports)] // the vectors crate uses all of it, the harness not
mod pathmodel;
mod realnet;
mod sim;

use std::io::Write;
use std::time::Instant;

use config::{Config, RunResult};

/// Where the lab certificate is unless $STATEMINE_LAB_DATA says (the source tree's).
const DEFAULT_CERT_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../data");

fn read_config(path: &str) -> Result<Config, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("{path}: {e}"))?;
    if !meta.is_file() || meta.len() > 1 << 20 {
        return Err(format!(
            "{path}: not a run config (a JSON file of at most 1 MiB)"
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let cfg: Config =
        serde_json::from_str(&text).map_err(|e| format!("{path}: not a run config: {e}"))?;
    cfg.validate().map_err(|e| format!("{path}: {e}"))?;
    Ok(cfg)
}

/// Writes `text` to `path` through a temporary file beside it and a rename.
fn write_atomic(path: &str, text: &str) -> std::io::Result<()> {
    let tmp = format!("{path}.{}.tmp", std::process::id());
    let res = std::fs::File::create(&tmp)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .and_then(|_| std::fs::rename(&tmp, path));
    if res.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    res
}

/// CPU seconds this process has used (user + system, all threads).
fn cpu_seconds() -> Option<f64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through a valid pointer.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    (rc == 0).then(|| ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 2 {
        eprintln!("usage: statemine-quiche-harness CONFIG.json");
        std::process::exit(2);
    }
    let cfg = match read_config(&args[1]) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("statemine-quiche-harness: {e}");
            std::process::exit(2);
        }
    };
    // The patch's log and loss-detection knobs are read from the environment on first use.
    if let Err(e) = std::fs::File::create(&cfg.log_path) {
        eprintln!("statemine-quiche-harness: {}: {e}", cfg.log_path);
        std::process::exit(2);
    }
    std::env::set_var("STATEMINE_LOG", &cfg.log_path);
    for (var, v) in [
        (
            "STATEMINE_REORDERING_THRESHOLD",
            cfg.reordering_threshold.map(|r| r.to_string()),
        ),
        (
            "STATEMINE_TIME_THRESHOLD",
            cfg.time_threshold.map(|t| t.to_string()),
        ),
    ] {
        match v {
            Some(v) => std::env::set_var(var, v),
            None => std::env::remove_var(var),
        }
    }
    let cert_dir =
        std::env::var("STATEMINE_LAB_DATA").unwrap_or_else(|_| DEFAULT_CERT_DIR.to_string());
    let qlog_dir = std::env::var("QLOGDIR").ok().filter(|d| !d.is_empty());
    let started = Instant::now();
    let cpu_started = cpu_seconds();
    let mut res = RunResult {
        implementation: "quiche".into(),
        version: cfg.version.clone(),
        cc: cfg.cc.clone().unwrap_or_else(|| "cubic".into()),
        ..Default::default()
    };
    // $STATEMINE_REALNET_FDS = "SERVER,CLIENT": real time over the caller's sockets
    let realnet = std::env::var("STATEMINE_REALNET_FDS").ok().map(|v| {
        let fd = |s: Option<&str>| s.and_then(|x| x.parse::<i32>().ok()).unwrap_or(-1);
        let mut it = v.split(',');
        (fd(it.next()), fd(it.next()))
    });
    let outcome = match realnet {
        Some(fds) => realnet::simulate(&cfg, &cert_dir, qlog_dir, fds),
        None => sim::simulate(&cfg, &cert_dir, qlog_dir),
    };
    match outcome {
        Ok(out) => {
            res.ok = out.error.is_none();
            res.error = out.error;
            res.plt_s = out.plt_s;
            res.bytes = out.bytes;
            res.throughput_bps = out
                .plt_s
                .filter(|p| *p > 0.0)
                .map(|p| 8.0 * out.bytes as f64 / p);
            res.retransmissions = out.retransmissions;
            res.packets_sent = out.packets_sent;
            res.packets_dropped = out.packets_dropped;
            res.virtual_time_s = out.virtual_time_s;
            res.srtt_s = out.srtt_s;
            res.min_rtt_s = out.min_rtt_s;
        }
        Err(e) => res.error = Some(e),
    }
    res.wall_time_s = started.elapsed().as_secs_f64();
    res.cpu_time_s = cpu_seconds().zip(cpu_started).map(|(b, a)| b - a); // the simulation's
    let text = serde_json::to_string_pretty(&res).unwrap() + "\n";
    if let Err(e) = write_atomic(&cfg.result_path, &text) {
        eprintln!("statemine-quiche-harness: {}: {e}", cfg.result_path);
        std::process::exit(1);
    }
}
