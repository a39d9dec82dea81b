//! The test vectors of docs/lab-protocol.md ("Test vectors"), shared with the Python
//! reference (tests/test_lab_vectors.py) and the Go copy (vectors_test.go):
//! statemine/lab/data/path-vectors.json, or the file $STATEMINE_PATH_VECTORS names.

use std::sync::Arc;

use serde_json::Value;
use statemine_lab_path::rng::Rng;
use statemine_lab_path::variability::{CpuTime, ReadRate};
use statemine_lab_path::{Link, LinkConfig, LinkTrace};

fn vectors() -> Value {
    let path = std::env::var("STATEMINE_PATH_VECTORS").unwrap_or_else(|_| {
        format!(
            "{}/../../data/path-vectors.json",
            env!("CARGO_MANIFEST_DIR")
        )
    });
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap()
}

fn link(v: &Value, seed: u64) -> Link {
    let cfg: LinkConfig = serde_json::from_value(v["link"].clone()).unwrap();
    cfg.validate().unwrap();
    let trace = v.get("trace").and_then(Value::as_array).map(|ts| {
        let text: Vec<String> = ts.iter().map(|t| t.as_i64().unwrap().to_string()).collect();
        Arc::new(LinkTrace::parse(text.join("\n").as_bytes()).unwrap())
    });
    Link::new(cfg, seed, trace).unwrap()
}

fn f(v: &Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or_else(|| panic!("{key} missing"))
}

#[test]
fn deterministic_vectors() {
    let all = vectors();
    let vs = all["deterministic"].as_array().unwrap();
    assert!(vs.len() >= 5);
    for v in vs {
        let mut l = link(v, 1);
        let name = v["name"].as_str().unwrap();
        for (i, (s, want)) in v["sends"]
            .as_array()
            .unwrap()
            .iter()
            .zip(v["expect"].as_array().unwrap())
            .enumerate()
        {
            let got = l.send(s[0].as_f64().unwrap(), s[1].as_f64().unwrap() as usize);
            match (got, want.as_f64()) {
                (Some(a), Some(w)) => {
                    assert!((a - w).abs() <= 1e-9, "{name}: send {i}: {a} != {w}")
                }
                (None, None) => {}
                _ => panic!("{name}: send {i}: got {got:?}, want {want}"),
            }
        }
    }
}

/// The measured value of one statistical vector.
fn measure(v: &Value) -> f64 {
    let kind = v["kind"].as_str().unwrap();
    match kind {
        "loss_share" | "mean_burst" | "mean_delay" | "reordered_share" => {
            let mut l = link(v, v["seed"].as_u64().unwrap());
            let n = v["packets"].as_u64().unwrap() as usize;
            let (spacing, size) = (f(v, "spacing_s"), f(v, "size") as usize);
            let sent: Vec<Option<f64>> = (0..n).map(|i| l.send(i as f64 * spacing, size)).collect();
            match kind {
                "loss_share" => l.stats.lost as f64 / l.stats.sent as f64,
                "mean_burst" => {
                    let lost: Vec<bool> = sent.iter().map(Option::is_none).collect();
                    let bursts = (0..n)
                        .filter(|&i| lost[i] && (i == 0 || !lost[i - 1]))
                        .count();
                    lost.iter().filter(|&&x| x).count() as f64 / bursts as f64
                }
                "mean_delay" => {
                    sent.iter()
                        .enumerate()
                        .map(|(i, a)| a.unwrap() - i as f64 * spacing)
                        .sum::<f64>()
                        / n as f64
                }
                _ => {
                    let arr: Vec<f64> = sent.iter().map(|a| a.unwrap()).collect();
                    arr.windows(2).filter(|w| w[1] < w[0]).count() as f64 / (n - 1) as f64
                }
            }
        }
        "cross_load" => {
            let mut l = link(v, v["seed"].as_u64().unwrap());
            let d = f(v, "duration_s");
            l.advance(d);
            l.stats.cross_bytes as f64 * 8.0 / (f(&v["link"], "rate_bps") * d)
        }
        "phase_mean" => {
            let seeds = v["seeds"].as_u64().unwrap();
            let interval = f(&v["link"]["rate_schedule"], "interval_s");
            (1..=seeds).map(|s| link(v, s).phase()).sum::<f64>() / (seeds as f64 * interval)
        }
        "cpu_mean" | "cpu_cv" => {
            let mut c = CpuTime::new(f(v, "mean_s"), f(v, "cv"), v["seed"].as_u64().unwrap());
            let n = v["draws"].as_u64().unwrap() as usize;
            let xs: Vec<f64> = (0..n).map(|_| c.draw()).collect();
            let mean = xs.iter().sum::<f64>() / n as f64;
            if kind == "cpu_mean" {
                mean
            } else {
                (xs.iter().map(|x| x * x).sum::<f64>() / n as f64 - mean * mean).sqrt() / mean
            }
        }
        "read_factor_mean" => {
            let mut r = ReadRate::new(1.0, f(v, "cv"), 1.0, v["seed"].as_u64().unwrap());
            let k = v["intervals"].as_u64().unwrap();
            (0..k).map(|i| r.at(i as f64 + 0.5)).sum::<f64>() / k as f64
        }
        _ => panic!("{}: unknown kind {kind:?}", v["name"]),
    }
}

#[test]
fn statistical_vectors() {
    let all = vectors();
    let mut failed = Vec::new();
    for v in all["statistical"].as_array().unwrap() {
        let got = measure(v);
        let (want, tol) = (f(v, "expect"), f(v, "tol"));
        let line = format!(
            "{}: {got} (want {want} +- {tol})",
            v["name"].as_str().unwrap()
        );
        println!("{line}");
        if (got - want).abs() > tol {
            failed.push(line);
        }
    }
    assert!(failed.is_empty(), "{failed:#?}");
}

/// The seed reaches every random element: two seeds give different draws, one seed the same.
#[test]
fn seeds_are_deterministic() {
    let cfg = r#"{"rate_bps": 1e7, "buffer_bytes": 1e6, "delay_s": 0.01, "jitter_s": 0.002, "loss": 0.1,
                  "cross_traffic": {"load": 0.3, "packet_bytes": 1500}}"#;
    let run = |seed: u64| {
        let mut l = Link::new(serde_json::from_str(cfg).unwrap(), seed, None).unwrap();
        (0..2000)
            .map(|i| l.send(i as f64 * 1e-3, 1200))
            .collect::<Vec<_>>()
    };
    assert_eq!(run(5), run(5));
    assert_ne!(run(5), run(6));
    let _ = Rng::new(0, 0).next_u64(); // the all-zero seed still yields a working generator
}
