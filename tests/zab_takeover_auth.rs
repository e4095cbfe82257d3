//! Issue 42: the takeover an observer's AdminServer carries out needs ZooKeeper 3.9.4's admin
//! authentication (ALL on `/`, by the client port's ACL code), and the observer checks the
//! plan itself, whoever asks. Three zkr observers of Debian's ZooKeeper 3.8, whose `/` names an
//! admin user (`digest:admin:…:cdrwa`, everyone else may only read), the participants stopped:
//! a request without credentials, with a wrong password, with a user or address `/` does not
//! name, or a scheme zkr has no provider for is refused with ZooKeeper's status and JSON; the
//! right credentials without ZooKeeper's log proof, or an accept that skipped its check, are
//! refused by the observer itself; each client's refusals are logged once. Nothing changed:
//! ZooKeeper started again has its observers back, and once it is stopped again the admin
//! user's digest (not the super user) takes over through the tool.

use crate::takeover_kit::{
    admin, error_of, log_proof, mode, start_observers, takeover, until_not_following, ObserverPlan, Secure, Secured,
};
use crate::zab_observer::{create, until_async, Ensemble, Launch, Session};
use std::path::PathBuf;
use zkr::proto::{perms, Acl, Id, OpCode, RequestBody};

const ADMIN_PASSWORD: &str = "root-of-all";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_takeover_needs_admin_authentication_and_the_log_proof_and_refused_observers_keep_observing() {
    let plan = ObserverPlan::new();
    let secured = Secured::new(Secure::None);
    let mut zk = Ensemble::start_observed(&Launch::Debian, &plan.lines);
    let zk_data: Vec<PathBuf> = (0..3).map(|i| zk.data_dir(i)).collect();
    let leader = zk.leader().await;
    let mut c = Session::open(zk.client[leader], 30_000).await;
    let admin_id = zkr::tree::acl::digest(&format!("admin:{ADMIN_PASSWORD}")).unwrap();
    let acl = vec![
        Acl { perms: perms::ALL, id: Id::new("digest", &admin_id) },
        Acl { perms: perms::READ, id: Id::new("world", "anyone") },
    ];
    c.write(OpCode::Create, RequestBody::Create(create("/before", b"", 0))).await;
    c.write(OpCode::SetAcl, RequestBody::SetAcl { path: "/".into(), acl, version: -1 }).await;
    let obs = start_observers(&plan, &zk.servers, &secured).await;
    for ch in &mut zk.children {
        let _ = ch.kill();
        let _ = ch.wait();
    }
    for o in &obs {
        until_not_following(o).await;
    }

    let (admin9, proof) = (obs[0].admin_addr(), log_proof(&zk_data));
    let check = "/zkr/takeover?seed=9&members=9,10,11&check=1";
    // No credentials: ZooKeeper's 401 and JSON.
    let (code, body) = admin(&admin9, "POST", check, None, Some(&proof)).await;
    let v: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(code, 401, "{body}");
    assert_eq!(
        (v["command"].as_str(), v["error"].as_str()),
        (Some("takeover"), Some("Auth info is missing for the command"))
    );
    // A wrong password, a user `/` does not name, an address it does not name, a wrong super
    // password: 403; a scheme without an HTTP provider, or a malformed header: 401.
    for (auth, want) in [
        ("digest admin:wrong", (403, "Not authorized")),
        ("digest bob:pw", (403, "Not authorized")),
        ("ip", (403, "Not authorized")),
        ("digest super:wrong", (403, "Not authorized")),
        ("sasl bob", (401, "Not authenticated")),
        ("digest admin:x y", (401, "Not authenticated")),
    ] {
        let answer = admin(&admin9, "POST", check, Some(auth), Some(&proof)).await;
        assert_eq!(error_of(&answer), (want.0, want.1.to_owned()), "{auth}: {answer:?}");
    }
    // The right credentials without the log proof: the observer itself refuses.
    let right = format!("digest admin:{ADMIN_PASSWORD}");
    let (code, why) = error_of(&admin(&admin9, "POST", check, Some(&right), None).await);
    assert_eq!(code, 409, "{why}");
    assert!(why.contains("carries no proof of what ZooKeeper's logs hold"), "{why}");
    // An accept that skipped its check: refused, whoever sends it.
    let accept = "/zkr/takeover?seed=9&members=9,10,11";
    let (code, why) = error_of(&admin(&admin9, "POST", accept, Some(&right), Some(&proof)).await);
    assert_eq!(code, 409, "{why}");
    assert!(why.contains("was not checked here"), "{why}");
    // Read-only commands stay as ZooKeeper serves them.
    assert_eq!(admin(&admin9, "GET", "/commands/ruok", None, None).await.0, 200);
    // Seven refusals of this client, logged once, with its address.
    let log = obs[0].log();
    let logged: Vec<&str> = log.lines().filter(|l| l.contains("AdminServer refused takeover")).collect();
    assert_eq!(logged.len(), 1, "{logged:?}");
    assert!(logged[0].contains("client=127.0.0.1:"), "{}", logged[0]);

    // Nothing changed: ZooKeeper again, and every observer observes it again.
    for i in 0..3 {
        zk.restart(i);
    }
    zk.leader().await;
    for o in &obs {
        let a = o.addr();
        until_async("the refused observer observes ZooKeeper again", 60, || {
            let a = a.clone();
            async move { mode(&a).await.as_deref() == Some("observer") }
        })
        .await;
        let cfg = std::fs::read_to_string(o.config()).unwrap();
        assert!(cfg.contains("zkr.ensembleProtocol=zab") && !o.dir.join("zoo.cfg.observer").exists(), "{cfg}");
    }

    // Stopped again: the admin user, whom `/`'s ACL grants ALL, takes over with the tool.
    for ch in &mut zk.children {
        let _ = ch.kill();
        let _ = ch.wait();
    }
    let config = obs[0].config();
    let auth = format!("digest:admin:{ADMIN_PASSWORD}");
    let out = tokio::task::spawn_blocking(move || takeover(&config, None, &zk_data, Some(&auth))).await.unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{said}");
    eprintln!("{said}");
    let a = obs[1].addr();
    until_async("server.10 serves as a member of the zkr ensemble", 30, || {
        let a = a.clone();
        async move { matches!(mode(&a).await.as_deref(), Some("leader" | "follower")) }
    })
    .await;
}
