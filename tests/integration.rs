//! The integration tests, compiled as one binary: each `tests/*.rs` below is a module of it.
//! One binary links the library once; eighteen binaries linked it eighteen times, which was
//! most of `cargo test --release`'s 20 minutes on two cores. Run one file's tests with
//! `cargo test --release --test integration ensemble_guarantees::` (a name filter).
//! `tests/ensemble_pause.rs` stays a binary of its own: its leader pauses must not share two
//! cores with the ensembles of other tests.

mod common;
mod durable;

mod admin_backup;
mod admin_https;
mod client;
mod dubbo;
mod durability;
mod ensemble;
mod ensemble_crash;
mod ensemble_guarantees;
mod ensemble_sasl;
mod ensemble_tls;
mod export;
mod export_ensemble;
mod fixtures;
mod fuzz_smoke;
mod hostile_acl;
mod hostile_garbage;
mod hostile_limits;
mod hostile_logs;
mod import;
mod import_compressed;
mod local_reads;
mod log_damage;
mod ops;
mod pipelined;
mod raw;
mod takeover_kit;
mod zab_observer;
mod zab_quorum_sasl;
mod zab_quorum_tls;
mod zab_takeover;
mod zab_takeover_auth;
mod zab_takeover_partition;
