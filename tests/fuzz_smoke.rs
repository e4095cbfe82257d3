//! The fuzz targets of `fuzz/` run on stable Rust for a short, deterministic while (CI), plus
//! every input that ever broke one (`fuzz/regressions/<target>/`). The long, coverage-guided run
//! is `cargo +nightly fuzz run <target>` (see docs/security.md).
//!
//! Inputs: recorded ZooKeeper frames from `protocol-fixtures/` (bit flips, truncations,
//! splices, length changes) and plain random bytes. `ZKR_FUZZ_ITERS` (default 20000 per
//! target) and `ZKR_FUZZ_SEED` make a longer or different run.

#[path = "../fuzz/src/checks.rs"]
mod checks;
#[path = "../fuzz/src/model.rs"]
mod model;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::path::{Path, PathBuf};

fn iters() -> usize {
    std::env::var("ZKR_FUZZ_ITERS").ok().and_then(|v| v.parse().ok()).unwrap_or(20_000)
}

fn seed() -> u64 {
    std::env::var("ZKR_FUZZ_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(0x2026_1129)
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len() / 2).filter_map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()).collect()
}

/// Every frame payload recorded from ZooKeeper (client and server side).
fn corpus() -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("protocol-fixtures");
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).expect("protocol-fixtures/") {
        let text = std::fs::read_to_string(e.unwrap().path()).unwrap_or_default();
        for l in text.lines() {
            if let Some(("C" | "S", h)) = l.split_once(' ') {
                out.push(hex(h.trim()));
            }
        }
    }
    assert!(out.len() > 100, "too few recorded frames: {}", out.len());
    out
}

fn mutate(rng: &mut StdRng, corpus: &[Vec<u8>]) -> Vec<u8> {
    if rng.gen_ratio(1, 8) {
        return (0..rng.gen_range(0..256)).map(|_| rng.gen()).collect();
    }
    let mut v = corpus[rng.gen_range(0..corpus.len())].clone();
    for _ in 0..rng.gen_range(1..5) {
        match rng.gen_range(0..6) {
            0 if !v.is_empty() => {
                let i = rng.gen_range(0..v.len());
                v[i] ^= 1 << rng.gen_range(0..8);
            }
            1 if !v.is_empty() => v.truncate(rng.gen_range(0..v.len())),
            2 => {
                let i = rng.gen_range(0..=v.len());
                let extra: Vec<u8> = (0..rng.gen_range(1..16)).map(|_| rng.gen()).collect();
                v.splice(i..i, extra);
            }
            3 if v.len() >= 4 => {
                // An interesting int (a length or a count) somewhere.
                let i = rng.gen_range(0..=v.len() - 4);
                let x: i32 = [-1, 0, 1, 0x7fff_ffff, i32::MIN, 0x10_0000, 255][rng.gen_range(0..7)];
                v[i..i + 4].copy_from_slice(&x.to_be_bytes());
            }
            4 => {
                let other = &corpus[rng.gen_range(0..corpus.len())];
                let cut = rng.gen_range(0..=other.len());
                v.extend_from_slice(&other[cut..]);
            }
            _ => {}
        }
    }
    v
}

fn run_target(name: &str, f: fn(&[u8])) {
    let corpus = corpus();
    let mut rng = StdRng::seed_from_u64(seed() ^ name.len() as u64);
    for c in &corpus {
        f(c);
    }
    for _ in 0..iters() {
        let input = mutate(&mut rng, &corpus);
        let caught = std::panic::catch_unwind(|| f(&input));
        if caught.is_err() {
            let dir = std::env::temp_dir().join(format!("zkr-fuzz-crash-{name}"));
            let _ = std::fs::create_dir_all(&dir);
            let file = dir.join(format!("{:016x}", rng.gen::<u64>()));
            let _ = std::fs::write(&file, &input);
            panic!("{name} failed on an input saved to {} (add it to fuzz/regressions/{name}/)", file.display());
        }
    }
}

#[test]
fn fuzz_frame_decoder() {
    run_target("frames", checks::frames);
}

#[test]
fn fuzz_request_records() {
    run_target("request", checks::request);
}

#[test]
fn fuzz_connect_request() {
    run_target("connect_request", checks::connect_request);
}

/// The SASL GSSAPI token path: MIT's accept through zkr's FFI and the RFC 4752 state machine.
#[test]
fn fuzz_sasl_gssapi_tokens() {
    run_target("sasl_gssapi", checks::sasl_gssapi);
}

#[test]
fn fuzz_reply_records() {
    run_target("replies", checks::replies);
}

#[test]
fn fuzz_log_records() {
    run_target("txn_record", checks::txn_record);
}

#[test]
fn fuzz_request_sequences_against_the_model() {
    let mut rng = StdRng::seed_from_u64(seed());
    let programs = iters() / 40;
    for _ in 0..programs {
        let len = rng.gen_range(16..1600);
        let bytes: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
        let ops = model::ops_from_bytes(&bytes);
        if std::panic::catch_unwind(|| model::run(&ops)).is_err() {
            let file = std::env::temp_dir().join(format!("zkr-fuzz-tree-{:016x}", rng.gen::<u64>()));
            let _ = std::fs::write(&file, &bytes);
            panic!("tree_ops failed on an input saved to {} (add it to fuzz/regressions/tree_ops/)", file.display());
        }
    }
}

/// A target's name (its directory under fuzz/regressions/) and its check.
type Target = (&'static str, fn(&[u8]));

/// Every input a fuzzer ever found, replayed through its target.
#[test]
fn fuzz_regressions_stay_fixed() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions");
    let targets: [Target; 7] = [
        ("frames", checks::frames),
        ("request", checks::request),
        ("connect_request", checks::connect_request),
        ("replies", checks::replies),
        ("txn_record", checks::txn_record),
        ("sasl_gssapi", checks::sasl_gssapi),
        ("tree_ops", |b| model::run(&model::ops_from_bytes(b))),
    ];
    for (name, f) in targets {
        let dir: PathBuf = root.join(name);
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for e in entries {
            let p = e.unwrap().path();
            let input = std::fs::read(&p).unwrap();
            if std::panic::catch_unwind(|| f(&input)).is_err() {
                panic!("regression {} fails again", p.display());
            }
        }
    }
}
