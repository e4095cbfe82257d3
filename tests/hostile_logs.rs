//! Secrets never reach the log (issue #5 item 4): zkr runs with every log level on
//! (`RUST_LOG=trace`) through addauth, digest ACLs, setACL, getACL, a super login, failed
//! authentications and a re-attach with a wrong password, and its whole log must contain no
//! password and no digest hash.

use crate::common;

use common::zkr_proc::ZkrProc;
use std::time::Duration;
use zookeeper_client as zk;

async fn connect(addr: &str, auth: Option<&[u8]>) -> Result<zk::Client, zk::Error> {
    let mut c = zk::Client::connector();
    c.session_timeout(Duration::from_secs(10));
    if let Some(a) = auth {
        c.auth("digest".to_string(), a.to_vec());
    }
    c.connect(addr).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_password_or_digest_appears_in_a_trace_log() {
    let alice_pw = "Alice-pw-7f3a9c";
    let bob_pw = "Bob-pw-0d81e2";
    let super_pw = "Super-pw-c4b6aa";
    let alice_hash = zkr::tree::acl::digest(&format!("alice:{alice_pw}")).unwrap();
    let bob_hash = zkr::tree::acl::digest(&format!("bob:{bob_pw}")).unwrap();
    let super_digest = zkr::tree::acl::digest(&format!("super:{super_pw}")).unwrap();
    let zkr = ZkrProc::start(&["--super-digest", &super_digest], "trace");

    let alice = connect(&zkr.addr, Some(format!("alice:{alice_pw}").as_bytes())).await.unwrap();
    let creator = zk::CreateMode::Persistent.with_acls(zk::Acls::creator_all());
    alice.create("/private", b"x", &creator).await.unwrap();
    let (acl, _) = alice.get_acl("/private").await.unwrap();
    assert_eq!(acl[0].id(), alice_hash, "the test's own digest is what zkr stores");
    // setACL naming another user's digest, then that user reads.
    let bob_acl = [zk::Acl::new(zk::Permission::ALL, zk::AuthId::new("digest", &bob_hash))];
    alice.set_acl("/private", &bob_acl, None).await.unwrap();
    let bob = connect(&zkr.addr, Some(format!("bob:{bob_pw}").as_bytes())).await.unwrap();
    assert_eq!(bob.get_data("/private").await.unwrap().0, b"x");
    // A wrong password is just another identity: NoAuth, and nothing logged about it.
    let mallory = connect(&zkr.addr, Some(format!("bob:{alice_pw}").as_bytes())).await.unwrap();
    assert_eq!(mallory.get_data("/private").await.unwrap_err(), zk::Error::NoAuth);
    assert_eq!(mallory.get_acl("/private").await.unwrap_err(), zk::Error::NoAuth);
    // Super reads everything.
    let root = connect(&zkr.addr, Some(format!("super:{super_pw}").as_bytes())).await.unwrap();
    assert_eq!(root.get_data("/private").await.unwrap().0, b"x");
    // A malformed digest credential fails authentication (the connection closes).
    let bad = connect(&zkr.addr, Some(alice_pw.as_bytes())).await;
    if let Ok(c) = bad {
        assert!(c.get_data("/private").await.is_err(), "a malformed digest credential was accepted");
    }
    drop((alice, bob, mallory, root));
    tokio::time::sleep(Duration::from_millis(300)).await;

    let log = zkr.log();
    assert!(log.lines().count() > 5, "zkr logged nearly nothing at trace level:\n{log}");
    assert!(log.contains("authentication failed"), "the failed authentication was not logged at all");
    let super_hash = super_digest.split_once(':').unwrap().1;
    for secret in [
        alice_pw,
        bob_pw,
        super_pw,
        alice_hash.split_once(':').unwrap().1,
        bob_hash.split_once(':').unwrap().1,
        super_hash,
    ] {
        assert!(!log.contains(secret), "{secret:?} appears in zkr's log:\n{log}");
    }
}
