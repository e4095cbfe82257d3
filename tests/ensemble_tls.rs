//! TLS between ensemble members (`sslQuorum`): three members in one process whose peer
//! connections are TLS with certificates made here (a CA, a certificate per member), used by a
//! real client. Members whose certificate the others cannot trust, or which names another
//! host, stay out; `portUnification` lets plaintext and TLS members form one ensemble.

use crate::common;

use common::certs::Ca;
use common::cluster::*;
use std::path::PathBuf;
use std::time::Duration;
use zkr::config::{ClientAuth, Config, Origin, QuorumTlsSettings, StorePassword, StoreSettings, StoreType, TlsStores};
use zookeeper_client as zk;

fn pem_store(path: PathBuf) -> StoreSettings {
    StoreSettings {
        path,
        kind: StoreType::Pem,
        password: StorePassword::Inline(String::new()),
        origin: Origin::Flag("test"),
    }
}

fn quorum_tls(key_store: PathBuf, trust: PathBuf, encrypt: bool, port_unification: bool) -> QuorumTlsSettings {
    let protocols = vec![zkr::security::tls_params::Protocol::Tls12, zkr::security::tls_params::Protocol::Tls13];
    QuorumTlsSettings {
        stores: TlsStores {
            key_store: pem_store(key_store),
            key_file: None,
            trust_store: Some(pem_store(trust)),
            client_auth: ClientAuth::Need,
            protocols,
            cipher_suites: zkr::security::tls_params::cipher_suites(Some(
                "TLS_AES_128_GCM_SHA256,TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
            ))
            .unwrap()
            .0,
        },
        encrypt,
        port_unification,
        hostname_verification: true,
        reload: false,
    }
}

/// Three members, member i (0-based) with `tls(i)`.
fn configs(tls: impl Fn(usize) -> Option<QuorumTlsSettings>) -> Vec<Config> {
    let mut cfgs = ensemble_configs(3);
    for (i, c) in cfgs.iter_mut().enumerate() {
        c.quorum_tls = tls(i);
    }
    cfgs
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn members_replicate_over_tls_and_a_client_sees_one_ensemble() {
    let dir = common::temp_dir();
    let ca = Ca::new(&dir, "ca");
    let cfgs = configs(|i| {
        Some(quorum_tls(ca.key_store(&format!("m{i}"), &["127.0.0.1"]), ca.trust_store("ca"), true, false))
    });
    let cl = Cluster::start_with(cfgs).await;
    one_ensemble_to_a_client(&cl, "/over-tls").await;
    beats_answered(&cl).await;
    // The peer port speaks only TLS: a plaintext peer's hello and RPC get no answer.
    plain_peer_unanswered(&cl, "a plaintext peer").await;
    cl.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_member_whose_certificate_is_not_trusted_stays_out() {
    let dir = common::temp_dir();
    let ca = Ca::new(&dir, "ca");
    let rogue = Ca::new(&dir, "rogue-ca");
    let cfgs = configs(|i| {
        let key_store = match i {
            2 => rogue.key_store("m2", &["127.0.0.1"]),
            _ => ca.key_store(&format!("m{i}"), &["127.0.0.1"]),
        };
        // Member 3 trusts the others; they do not trust it.
        Some(quorum_tls(key_store, ca.trust_store("ca"), true, false))
    });
    let servers = start_all(&cfgs).await;
    third_member_stays_out(&servers, Duration::from_secs(3)).await;
    for s in servers {
        s.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_member_whose_certificate_names_another_host_stays_out_unless_names_are_not_checked() {
    let dir = common::temp_dir();
    let ca = Ca::new(&dir, "ca");
    let elsewhere = ca.key_store("m2", &["192.0.2.7", "elsewhere.invalid"]);
    let cfgs = configs(|i| {
        let key_store = if i == 2 { elsewhere.clone() } else { ca.key_store(&format!("m{i}"), &["127.0.0.1"]) };
        Some(quorum_tls(key_store, ca.trust_store("ca"), true, false))
    });
    let servers = start_all(&cfgs).await;
    third_member_stays_out(&servers, Duration::from_secs(3)).await;
    for s in servers {
        s.shutdown().await;
    }
    // ssl.quorum.hostnameVerification=false: the same certificates form one ensemble.
    let cfgs = configs(|i| {
        let key_store = if i == 2 { elsewhere.clone() } else { ca.key_store(&format!("n{i}"), &["127.0.0.1"]) };
        let mut t = quorum_tls(key_store, ca.trust_store("ca"), true, false);
        t.hostname_verification = false;
        Some(t)
    });
    let cl = Cluster::start_with(cfgs).await;
    converged(&cl).await;
    cl.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn port_unification_lets_plaintext_and_tls_members_form_one_ensemble() {
    // ZooKeeper's way to turn quorum TLS on in a running ensemble: every member takes both
    // (portUnification=true), then members switch to sslQuorum=true one at a time. Here members
    // 1 and 2 have switched and member 3 has not: it connects in plaintext, they connect to it
    // with TLS.
    let dir = common::temp_dir();
    let ca = Ca::new(&dir, "ca");
    let cfgs = configs(|i| {
        Some(quorum_tls(ca.key_store(&format!("m{i}"), &["127.0.0.1"]), ca.trust_store("ca"), i < 2, true))
    });
    let cl = Cluster::start_with(cfgs).await;
    let c = zk::Client::connector().session_timeout(Duration::from_secs(6)).connect(&cl.addr(2)).await.unwrap();
    c.create("/mixed", b"", &zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all())).await.unwrap();
    converged(&cl).await;
    cl.shutdown().await;

    // Without portUnification, a plaintext member cannot join TLS members.
    let cfgs = configs(|i| {
        (i < 2).then(|| quorum_tls(ca.key_store(&format!("p{i}"), &["127.0.0.1"]), ca.trust_store("ca"), true, false))
    });
    let servers = start_all(&cfgs).await;
    third_member_stays_out(&servers, Duration::from_secs(3)).await;
    for s in servers {
        s.shutdown().await;
    }
}
