//! Quorum SASL between zkr's own members (`quorum.auth.enableSasl`): three members in one
//! process whose peer connections log in with DIGEST-MD5 before their hello, used by a real
//! client. A member with the wrong password, or with no quorum SASL among members that require
//! it, stays out; with `serverRequireSasl=false` members that log in and members that do not
//! form one ensemble (ZooKeeper's way to turn quorum SASL on one member at a time).

use crate::common;

use common::cluster::*;
use std::collections::BTreeMap;
use std::time::Duration;
use zkr::config::Config;
use zkr::security::quorum_sasl::{Accounts, Credentials, Login, QuorumSasl};
use zookeeper_client as zk;

/// The settings of a member whose JAAS file has `QuorumServer { user_m="<accounts>" }` and,
/// when `login` is given, `QuorumLearner { username="m" password="<login>" }`.
fn sasl(accounts: &str, login: Option<&str>, require: bool) -> QuorumSasl {
    QuorumSasl {
        login: login.map(|p| Login::Digest(Credentials { user: "m".into(), password: p.into() })),
        accounts: Accounts::Digest(BTreeMap::from([("m".to_owned(), accounts.to_owned())])),
        require,
    }
}

/// Three members, member i (0-based) with `sasl(i)`.
fn configs(sasl: impl Fn(usize) -> Option<QuorumSasl>) -> Vec<Config> {
    let mut cfgs = ensemble_configs(3);
    for (i, c) in cfgs.iter_mut().enumerate() {
        c.quorum_sasl = sasl(i);
    }
    cfgs
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn members_log_in_to_each_other_and_a_client_sees_one_ensemble() {
    let cl = Cluster::start_with(configs(|_| Some(sasl("pw", Some("pw"), true)))).await;
    one_ensemble_to_a_client(&cl, "/over-sasl").await;
    beats_answered(&cl).await;
    // A peer that sends no login gets no answer: not to a hello, not to a seed probe.
    plain_peer_unanswered(&cl, "a peer without a login").await;

    // One with the wrong password is told ERROR and gets no further.
    let peer = cl.cfgs[0].ensemble.as_ref().unwrap().me().unwrap().peer_addr();
    let mut s = tokio::net::TcpStream::connect(&peer).await.unwrap();
    let wrong = Login::Digest(Credentials { user: "m".into(), password: "guess".into() });
    let login = zkr::security::quorum_sasl::login(&mut s, &wrong, &peer).await;
    assert!(matches!(login, Err(zkr::security::quorum_sasl::AuthError::Refused { .. })), "{login:?}");
    cl.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_member_with_another_password_stays_out() {
    // Member 3's JAAS file has another password on both sides: it cannot log in to the others,
    // nor they to it.
    let servers = start_all(&configs(|i| {
        let pw = if i == 2 { "other" } else { "pw" };
        Some(sasl(pw, Some(pw), true))
    }))
    .await;
    third_member_stays_out(&servers, Duration::from_secs(3)).await;
    for s in servers {
        s.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn quorum_sasl_turns_on_one_member_at_a_time() {
    // ZooKeeper's steps: quorum.auth.enableSasl=true everywhere, then learnerRequireSasl=true
    // member by member, then serverRequireSasl=true. Here members 1 and 2 log in and member 3
    // does not yet (it takes logins, sends none). While nobody requires it, this is one
    // ensemble.
    let cfgs = configs(|i| Some(sasl("pw", (i < 2).then_some("pw"), false)));
    let cl = Cluster::start_with(cfgs).await;
    let c = zk::Client::connector().session_timeout(Duration::from_secs(6)).connect(&cl.addr(2)).await.unwrap();
    c.create("/mixed", b"", &persistent()).await.unwrap();
    converged(&cl).await;
    cl.shutdown().await;

    // Members 1 and 2 requiring it (serverRequireSasl=true) and member 3 with quorum SASL off
    // (enableSasl=false): member 3 stays out. They refuse its hello, it refuses their logins.
    let servers = start_all(&configs(|i| (i < 2).then(|| sasl("pw", Some("pw"), true)))).await;
    third_member_stays_out(&servers, Duration::from_secs(3)).await;
    for s in servers {
        s.shutdown().await;
    }
}
