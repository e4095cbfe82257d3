//! Reading zoo.cfg and flags, checked against ZooKeeper's behaviour.

use super::merge::USED;
use super::*;

fn with_file(text: &str, args: ServeArgs) -> Result<Config, ConfigError> {
    let keys = parse_zoo_cfg(text, "zoo.cfg")?;
    Config::merge(&args, Some(&ZooCfg { name: "zoo.cfg".to_owned(), keys }))
}

#[test]
fn defaults_match_zookeeper() {
    let c = Config::merge(&ServeArgs::default(), None).unwrap();
    assert_eq!((c.port, c.tick_time_ms, c.min_session_timeout_ms, c.max_session_timeout_ms), (2181, 2000, 4000, 40000));
    assert_eq!((c.max_client_cnxns, c.max_frame), (60, 1_048_575));
    assert_eq!((c.admin_enabled, c.admin_port), (true, 8080));
}

#[test]
fn keep_clients_on_leader_loss_is_off_unless_asked() {
    assert!(!with_file("", ServeArgs::default()).unwrap().keep_clients_on_leader_loss);
    assert!(with_file("zkr.keepClientsOnLeaderLoss=true\n", ServeArgs::default()).unwrap().keep_clients_on_leader_loss);
    let e = with_file("tickTime=2000\nzkr.keepClientsOnLeaderLoss=yes\n", ServeArgs::default())
        .err()
        .map(|e| e.to_string());
    assert!(
        e.as_deref()
            .is_some_and(|e| e.ends_with(":2: zkr.keepClientsOnLeaderLoss must be true or false, found \"yes\"")),
        "{e:?}"
    );
    let flag = ServeArgs { keep_clients_on_leader_loss: Some(false), ..Default::default() };
    assert!(
        !with_file("zkr.keepClientsOnLeaderLoss=true\n", flag).unwrap().keep_clients_on_leader_loss,
        "the flag wins"
    );
}

#[test]
fn enforce_quota_as_java_parses_it() {
    assert!(!with_file("", ServeArgs::default()).unwrap().enforce_quota, "off by default, as in ZooKeeper");
    assert!(with_file("enforceQuota=TRUE\n", ServeArgs::default()).unwrap().enforce_quota);
    assert!(!with_file("enforceQuota=yes\n", ServeArgs::default()).unwrap().enforce_quota, "Boolean.parseBoolean");
    let flag = ServeArgs { enforce_quota: Some(false), ..Default::default() };
    assert!(!with_file("enforceQuota=true\n", flag).unwrap().enforce_quota, "the flag wins");
}

#[test]
fn super_digest_from_zoo_cfg_as_zookeeper_turns_it_into_its_property() {
    let c = with_file("DigestAuthenticationProvider.superDigest=super:abc=\n", ServeArgs::default()).unwrap();
    assert_eq!(c.super_digest.as_deref(), Some("super:abc="));
    let flag = ServeArgs { super_digest: Some("x:y".into()), ..Default::default() };
    let c = with_file("DigestAuthenticationProvider.superDigest=super:abc=\n", flag).unwrap();
    assert_eq!(c.super_digest.as_deref(), Some("x:y"), "the flag wins");
}

/// docs/config.md lists every key zkr reads as honoured (so the page stays true when a key
/// is added to `USED`), and calls no key honoured that zkr does not read.
#[test]
fn docs_config_md_matches_the_keys_zkr_reads() {
    let doc = include_str!("../../docs/config.md");
    let mut honoured = Vec::new();
    for line in doc.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.split(" | ").collect();
        let (Some(keys), Some(zkr)) = (cells.first(), cells.last()) else { continue };
        let keys: Vec<&str> = keys.split('`').skip(1).step_by(2).collect();
        if zkr.starts_with("honoured") {
            honoured.extend(keys);
        }
    }
    for key in USED {
        assert!(honoured.contains(key), "{key} is read by zkr but docs/config.md does not list it as honoured");
    }
    for key in &honoured {
        // server.N and myid are read by raft::members, not through USED; snapshot.compression.method
        // by `zkr export-zookeeper` (config::export), not by serve.
        let read = USED.contains(key) || ["server.N", "myid", SNAPSHOT_COMPRESSION_KEY].contains(key);
        assert!(read, "docs/config.md says {key} is honoured but zkr does not read it");
    }
}

#[test]
fn metrics_provider_keys() {
    assert_eq!(with_file("", ServeArgs::default()).unwrap().metrics, None);
    let cfg = format!("metricsProvider.className={PROMETHEUS_PROVIDER}\n");
    assert_eq!(with_file(&cfg, ServeArgs::default()).unwrap().metrics, Some("0.0.0.0:7000".parse().unwrap()));
    let cfg = format!("{cfg}metricsProvider.httpHost=127.0.0.1\nmetricsProvider.httpPort=7001\n");
    assert_eq!(with_file(&cfg, ServeArgs::default()).unwrap().metrics, Some("127.0.0.1:7001".parse().unwrap()));
    let flag = ServeArgs { metrics_port: Some(9), ..Default::default() };
    assert_eq!(with_file(&cfg, flag).unwrap().metrics, Some("127.0.0.1:9".parse().unwrap()));
    let e = with_file("metricsProvider.className=com.example.Foo\n", ServeArgs::default()).unwrap_err();
    assert!(e.to_string().starts_with("zoo.cfg:1: metrics provider \"com.example.Foo\""), "{e}");
    let e = with_file(&format!("{cfg}metricsProvider.httpPort=x\n"), ServeArgs::default()).unwrap_err();
    assert!(e.to_string().contains("metricsProvider.httpPort must be a port number"), "{e}");
}

#[test]
fn admin_server_keys() {
    let c = with_file("admin.enableServer=false\nadmin.serverPort=30123\n", ServeArgs::default()).unwrap();
    assert_eq!((c.admin_enabled, c.admin_port), (false, 30123));
    let args = ServeArgs { admin_enable: Some(true), admin_port: Some(0), ..Default::default() };
    let c = with_file("admin.enableServer=false\n", args).unwrap();
    assert_eq!((c.admin_enabled, c.admin_port), (true, 0));
}

#[test]
fn quorum_sasl_reads_its_jaas_sections_and_quorum_tls_is_read_from_ssl_quorum_keys() {
    let dir = std::env::temp_dir().join(format!("zkr-cfg-sslquorum-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("myid"), "1\n").unwrap();
    let base = format!("dataDir={}\nserver.1=a:2888:3888\nserver.2=b:2888:3888\nserver.3=c:2888:3888\n", dir.display());
    let c = with_file(&format!("{base}sslQuorum=false\n"), ServeArgs::default()).unwrap();
    assert!(c.ensemble.is_some() && c.quorum_tls.is_none());
    // Quorum SASL between zkr's members: the QuorumServer accounts always, the QuorumLearner
    // login with learnerRequireSasl, serverRequireSasl as `require`.
    let err = with_file(&format!("{base}quorum.auth.enableSasl=true\n"), ServeArgs::default()).unwrap_err().to_string();
    assert!(err.starts_with("zoo.cfg:5: quorum SASL needs a JAAS file with a QuorumServer section"), "{err}");
    let jaas = dir.join("jaas.conf");
    std::fs::write(&jaas, "QuorumServer {\n M required\n user_m=\"pw\";\n};\n").unwrap();
    let with_jaas = || ServeArgs { jaas_config: Some(jaas.clone()), ..ServeArgs::default() };
    let q = with_file(&format!("{base}quorum.auth.enableSasl=true\n"), with_jaas()).unwrap().quorum_sasl.unwrap();
    let users = match &q.accounts {
        crate::security::quorum_sasl::Accounts::Digest(u) => u.clone(),
        other => panic!("{other:?}"),
    };
    assert!(q.login.is_none() && !q.require && users.get("m").map(String::as_str) == Some("pw"));
    let all = format!(
        "{base}quorum.auth.enableSasl=true\nquorum.auth.learnerRequireSasl=true\nquorum.auth.serverRequireSasl=true\n"
    );
    let err = with_file(&all, with_jaas()).unwrap_err().to_string();
    assert!(err.contains("no QuorumLearner section"), "{err}");
    let learner = "QuorumLearner {\n M required\n username=\"m\"\n password=\"pw\";\n};\n";
    std::fs::write(&jaas, format!("QuorumServer {{\n M required\n user_m=\"pw\";\n}};\n{learner}")).unwrap();
    let q = with_file(&all, with_jaas()).unwrap().quorum_sasl.unwrap();
    let user = match q.login {
        Some(crate::security::quorum_sasl::Login::Digest(c)) => Some(c.user),
        _ => None,
    };
    assert!(q.require && user == Some("m".into()));
    std::fs::write(&jaas, learner).unwrap();
    let err = with_file(&format!("{base}quorum.auth.enableSasl=true\n"), with_jaas()).unwrap_err().to_string();
    assert!(err.contains("no QuorumServer section with user_"), "{err}");
    assert!(with_file(&base, with_jaas()).unwrap().quorum_sasl.is_none());
    // sslQuorum needs this member's key store and a trust store, named by line.
    let err = with_file(&format!("{base}sslQuorum=true\n"), ServeArgs::default()).unwrap_err().to_string();
    assert!(err.starts_with("zoo.cfg:5: sslQuorum=true needs this member's key"), "{err}");
    let stores = "ssl.quorum.keyStore.location=/k/m1.jks\nssl.quorum.keyStore.password=pw\n";
    let err = with_file(&format!("{base}sslQuorum=true\n{stores}"), ServeArgs::default()).unwrap_err().to_string();
    assert!(err.starts_with("zoo.cfg:5: sslQuorum=true needs ssl.quorum.trustStore.location"), "{err}");
    let stores = format!("{stores}ssl.quorum.trustStore.location=/k/trust.p12\nssl.quorum.trustStore.password=t\n");
    let q = with_file(&format!("{base}sslQuorum=true\n{stores}"), ServeArgs::default()).unwrap().quorum_tls.unwrap();
    assert!(q.encrypt && !q.port_unification && q.hostname_verification && !q.reload);
    assert_eq!((q.stores.key_store.kind, q.stores.client_auth), (StoreType::Jks, ClientAuth::Need));
    assert_eq!(q.stores.key_store.describe(), "zoo.cfg:6: ssl.quorum.keyStore.location=/k/m1.jks");
    assert_eq!(q.stores.trust_store.as_ref().map(|t| t.kind), Some(StoreType::Pkcs12));
    // The client port's ssl.* keys are not the quorum's.
    assert!(c.tls.is_none());
    let text = format!(
        "{base}portUnification=true\n{stores}ssl.quorum.hostnameVerification=false\nsslQuorumReloadCertFiles=true\n\
         ssl.quorum.clientAuth=want\nssl.quorum.enabledProtocols=TLSv1.3\n"
    );
    let q = with_file(&text, ServeArgs::default()).unwrap().quorum_tls.unwrap();
    assert!(!q.encrypt && q.port_unification && !q.hostname_verification && q.reload);
    assert_eq!(q.stores.client_auth, ClientAuth::Want);
    assert_eq!(q.stores.protocols, vec![crate::security::tls_params::Protocol::Tls13]);
    let err = with_file(&format!("{base}sslQuorum=true\n{stores}ssl.quorum.clientAuth=maybe\n"), ServeArgs::default())
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("zoo.cfg:10: ssl.quorum.clientAuth must be none, want or need"), "{err}");
    let err = with_file(&format!("{base}sslQuorum=true\n{stores}ssl.quorum.crl=true\n"), ServeArgs::default())
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("zoo.cfg:10: ssl.quorum.crl=true"), "{err}");
    // A standalone server has no peer traffic: ZooKeeper's standalone ignores the keys too.
    let c = with_file(&format!("dataDir={}\nsslQuorum=true\n", dir.display()), ServeArgs::default()).unwrap();
    assert!(c.ensemble.is_none() && c.quorum_tls.is_none());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn standalone_server_line_names_the_client_port() {
    let dir = std::env::temp_dir().join(format!("zkr-cfg-standalone-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = format!("dataDir={}\nserver.1=localhost:2888:3888;127.0.0.1:2999\n", dir.display());
    // No myid: ZooKeeper does not know which line is its own, and keeps clientPort.
    let c = with_file(&text, ServeArgs::default()).unwrap();
    assert_eq!((c.ensemble.is_none(), c.port), (true, 2181));
    std::fs::write(dir.join("myid"), "1\n").unwrap();
    let c = with_file(&text, ServeArgs::default()).unwrap();
    assert_eq!((c.ensemble.is_none(), c.port, c.bind), (true, 2999, IpAddr::from([127, 0, 0, 1])));
    let c = with_file(&text, ServeArgs { port: Some(3000), ..Default::default() }).unwrap();
    assert_eq!(c.port, 3000);
    std::fs::write(dir.join("myid"), "2\n").unwrap();
    let c = with_file(&text, ServeArgs::default()).unwrap();
    assert_eq!(c.port, 2181);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn reads_zoo_cfg_and_flags_win() {
    let text = "# c\ntickTime=500\nclientPort=2999\ndataDir=/tmp/x\nmaxClientCnxns=0\ninitLimit=5\n";
    let c = with_file(text, ServeArgs { port: Some(3000), ..Default::default() }).unwrap();
    assert_eq!((c.port, c.tick_time_ms, c.min_session_timeout_ms), (3000, 500, 1000));
    assert_eq!(c.data_dir, PathBuf::from("/tmp/x"));
    assert_eq!(c.max_client_cnxns, 0);
}

#[test]
fn connection_limits_use_zookeeper_keys() {
    let c = with_file("maxCnxns=500\nnio.sessionlessCnxnTimeout=3000\n", ServeArgs::default()).unwrap();
    assert_eq!((c.max_connections, c.handshake_timeout_ms), (500, 3000));
    let args = ServeArgs { max_connections: Some(7), max_outstanding: Some(3), ..Default::default() };
    let c = with_file("maxCnxns=500\n", args).unwrap();
    assert_eq!((c.max_connections, c.max_outstanding_per_conn), (7, 3));
    assert!(with_file("maxCnxns=-1\n", ServeArgs::default()).is_err());
}

/// clientPortListenBacklog: a positive value is the backlog; -1 and 0 (ZooKeeper's "the
/// JVM's default") and no key give zkr's default; below -1 is refused.
#[test]
fn listen_backlog_uses_zookeepers_key() {
    let c = with_file("clientPortListenBacklog=20000\n", ServeArgs::default()).unwrap();
    assert_eq!(c.listen_backlog, Some(20000));
    for text in ["clientPortListenBacklog=-1\n", "clientPortListenBacklog=0\n", ""] {
        assert_eq!(with_file(text, ServeArgs::default()).unwrap().listen_backlog, None, "{text}");
    }
    assert!(with_file("clientPortListenBacklog=-2\n", ServeArgs::default()).is_err());
}

#[test]
fn malformed_lines_name_file_and_line() {
    let e = with_file("tickTime=2000\nthis is wrong\n", ServeArgs::default()).unwrap_err();
    assert_eq!(e.to_string(), "zoo.cfg:2: expected key=value, found \"this is wrong\"");
    let e = with_file("clientPort=abc\n", ServeArgs::default()).unwrap_err();
    assert!(e.to_string().starts_with("zoo.cfg:1: clientPort must be a number"), "{e}");
}

#[test]
fn tls_keys_from_zoo_cfg() {
    let text = "secureClientPort=2281\nssl.keyStore.location=/k/server.pem\nssl.trustStore.location=/k/ca.pem\n";
    let c = with_file(text, ServeArgs::default()).unwrap();
    let t = c.tls.unwrap();
    assert_eq!((t.port, t.stores.client_auth), (2281, ClientAuth::Need));
    assert_eq!(
        (t.stores.key_store.path.clone(), t.stores.key_store.kind),
        (PathBuf::from("/k/server.pem"), StoreType::Pem)
    );
    assert_eq!(t.stores.key_store.describe(), "zoo.cfg:2: ssl.keyStore.location=/k/server.pem");
    assert_eq!(t.stores.key_file, None);
    let e = with_file("ssl.clientAuth=maybe\n", ServeArgs::default()).unwrap_err();
    assert!(e.to_string().starts_with("zoo.cfg:1: ssl.clientAuth must be"), "{e}");
    let e = with_file("secureClientPort=2281\n", ServeArgs::default()).unwrap_err();
    assert!(e.to_string().contains("needs a server certificate"), "{e}");
    let args = ServeArgs { tls_client_auth: Some("want".into()), ..Default::default() };
    let e = with_file("secureClientPort=1\nssl.keyStore.location=/s.pem\n", args).unwrap_err();
    assert!(e.to_string().contains("need CA certificates"), "{e}");
}

#[test]
fn key_store_type_from_type_key_or_file_name() {
    let tls =
        |text: &str| with_file(&format!("secureClientPort=1\n{text}"), ServeArgs::default()).map(|c| c.tls.unwrap());
    assert_eq!(tls("ssl.keyStore.location=/k/ks.jks\n").unwrap().stores.key_store.kind, StoreType::Jks);
    assert_eq!(tls("ssl.keyStore.location=/k/ks.p12\n").unwrap().stores.key_store.kind, StoreType::Pkcs12);
    assert_eq!(tls("ssl.keyStore.location=/k/ks.PFX\n").unwrap().stores.key_store.kind, StoreType::Pkcs12);
    let t = tls("ssl.keyStore.location=/k/ks\nssl.keyStore.type=pkcs12\n").unwrap();
    assert_eq!(t.stores.key_store.kind, StoreType::Pkcs12);
    // An empty type falls back to the file name, as fromPropertyValue("") returns null.
    assert_eq!(
        tls("ssl.keyStore.location=/k/a.jks\nssl.keyStore.type=\n").unwrap().stores.key_store.kind,
        StoreType::Jks
    );
    let e = tls("ssl.keyStore.location=/k/keystore\n").unwrap_err().to_string();
    assert!(e.starts_with("zoo.cfg:2: cannot tell the key store type"), "{e}");
    let e = tls("ssl.keyStore.location=/k/a.jks\nssl.keyStore.type=JCEKS\n").unwrap_err().to_string();
    assert!(e.starts_with("zoo.cfg:3: unknown key store type \"JCEKS\""), "{e}");
    let e = tls("ssl.keyStore.location=/k/a.bcfks\n").unwrap_err().to_string();
    assert!(e.starts_with("zoo.cfg:2: BCFKS key stores"), "{e}");
}

#[test]
fn store_passwords_inline_or_from_a_file() {
    let text = "secureClientPort=1\nssl.keyStore.location=/k/ks.jks\nssl.keyStore.password=pw\n\
                ssl.trustStore.location=/k/ts.p12\nssl.trustStore.password=x\nssl.trustStore.passwordPath=/k/tpw\n";
    let t = with_file(text, ServeArgs::default()).unwrap().tls.unwrap();
    assert_eq!(t.stores.key_store.password, StorePassword::Inline("pw".into()));
    let ts = t.stores.trust_store.unwrap();
    let origin = Origin::Line { file: "zoo.cfg".into(), line: 6, key: "ssl.trustStore.passwordPath".into() };
    assert_eq!(ts.password, StorePassword::File { path: PathBuf::from("/k/tpw"), origin });
    assert_eq!(format!("{:?}", t.stores.key_store.password), "Inline(hidden)");
}

#[test]
fn protocols_and_cipher_suites() {
    use crate::security::tls_params::Protocol;
    let tls = |text: &str| {
        with_file(&format!("secureClientPort=1\nssl.keyStore.location=/k/s.pem\n{text}"), ServeArgs::default())
            .map(|c| c.tls.unwrap())
    };
    let t = tls("").unwrap();
    assert_eq!(t.stores.protocols, vec![Protocol::Tls12]);
    assert_eq!(t.stores.cipher_suites.len(), 4);
    let t = tls("ssl.enabledProtocols=TLSv1.3,TLSv1.2\nssl.ciphersuites=TLS_AES_256_GCM_SHA384\n").unwrap();
    assert_eq!(
        (t.stores.protocols, t.stores.cipher_suites),
        (vec![Protocol::Tls12, Protocol::Tls13], vec!["TLS_AES_256_GCM_SHA384".to_owned()])
    );
    let e = tls("ssl.ciphersuites=TLS_FOO\n").unwrap_err().to_string();
    assert!(e.starts_with("zoo.cfg:3: unknown cipher suite \"TLS_FOO\""), "{e}");
    let e = tls("ssl.enabledProtocols=TLSv2\n").unwrap_err().to_string();
    assert!(e.starts_with("zoo.cfg:3: unknown protocol"), "{e}");
    let e = tls("ssl.crl=true\n").unwrap_err().to_string();
    assert!(e.starts_with("zoo.cfg:3: ssl.crl=true: zkr does not check"), "{e}");
    assert!(tls("ssl.ocsp=false\nssl.hostnameVerification=false\n").is_ok());
    // Defaults also apply to a flags-only TLS port.
    let args = ServeArgs { secure_port: Some(1), tls_cert: Some("/s.pem".into()), ..Default::default() };
    let t = Config::merge(&args, None).unwrap().tls.unwrap();
    assert_eq!((t.stores.protocols.len(), t.stores.cipher_suites.len()), (1, 4));
    let args = ServeArgs { tls_key: Some("/k.pem".into()), ..Default::default() };
    let e = with_file("secureClientPort=1\nssl.keyStore.location=/k/a.jks\n", args).unwrap_err().to_string();
    assert!(e.contains("--tls-key goes with a PEM certificate"), "{e}");
}

#[test]
fn zab_observer_needs_an_observer_line_above_every_voter() {
    let servers = "server.1=127.0.0.1:2888:3888\nserver.2=127.0.0.2:2888:3888\nserver.3=127.0.0.3:2888:3888\n";
    let id = |n| ServeArgs { id: Some(n), ..ServeArgs::default() };
    let ok = format!("{servers}server.9=127.0.0.9:2888:3888:observer\npeerType=observer\nzkr.ensembleProtocol=zab\n");
    let c = with_file(&ok, id(9)).unwrap();
    assert!(c.zab_observer && c.server_id == 9);
    assert!(!with_file(&format!("{servers}server.9=127.0.0.9:2888:3888:observer\n"), id(9)).unwrap().zab_observer);

    let reason = |text: &str, n| match with_file(text, id(n)) {
        Err(ConfigError::Line { line, reason, .. }) => (line, reason),
        other => panic!("expected a line error, got {:?}", other.map(|c| c.zab_observer)),
    };
    let (line, why) = reason(&format!("{servers}server.9=127.0.0.9:2888:3888\nzkr.ensembleProtocol=zab\n"), 9);
    assert_eq!(line, 5);
    assert!(why.contains(":observer"), "{why}");
    let ten = "server.10=127.0.0.10:2888:3888\nserver.9=127.0.0.9:2888:3888:observer\nzkr.ensembleProtocol=zab\n";
    let (_, why) = reason(&format!("{servers}{ten}"), 9);
    assert!(why.contains("above every ZooKeeper voter"), "{why}");
    let (_, why) = reason(&format!("{servers}zkr.ensembleProtocol=paxos\n"), 1);
    assert!(why.contains("raft or zab"), "{why}");
    let (_, why) = reason(&format!("{servers}server.9=127.0.0.9:2888:3888\npeerType=observer\n"), 9);
    assert!(why.contains("peerType=observer"), "{why}");

    // Quorum SASL: ZooKeeper's learner rules, and the QuorumLearner login from the JAAS file.
    let (_, why) = reason(&format!("{ok}quorum.auth.learnerRequireSasl=true\n"), 9);
    assert!(why.contains("needs quorum.auth.enableSasl=true"), "{why}");
    let sasl = format!("{ok}quorum.auth.enableSasl=true\nquorum.auth.serverRequireSasl=true\n");
    let (_, why) = reason(&sasl, 9);
    assert!(why.contains("needs quorum.auth.learnerRequireSasl=true"), "{why}");
    let (_, why) = reason(&format!("{ok}quorum.auth.enableSasl=true\n"), 9);
    assert!(why.contains("needs a JAAS file with a QuorumServer section"), "as SaslQuorumAuthServer: {why}");
    let jaas = std::env::temp_dir().join(format!("zkr-cfg-jaas-{}", std::process::id()));
    let server = "QuorumServer {\n M required\n user_l=\"p\";\n};\n";
    std::fs::write(&jaas, server).unwrap();
    let with_jaas = || ServeArgs { jaas_config: Some(jaas.clone()), ..id(9) };
    let c = with_file(&format!("{ok}quorum.auth.enableSasl=true\n"), with_jaas()).unwrap();
    assert!(c.quorum_sasl.unwrap().login.is_none(), "a Java learner sends no login unless learnerRequireSasl");
    let sasl = format!("{ok}quorum.auth.enableSasl=true\nquorum.auth.learnerRequireSasl=true\n");
    let err = with_file(&sasl, with_jaas()).unwrap_err().to_string();
    assert!(err.contains("no QuorumLearner section"), "{err}");
    std::fs::write(&jaas, format!("{server}QuorumLearner {{\n M required\n username=\"l\"\n password=\"p\";\n}};\n"))
        .unwrap();
    let c = with_file(&sasl, with_jaas()).unwrap();
    let creds = c.quorum_sasl.as_ref().and_then(|q| q.login.clone()).expect("the login");
    let crate::security::quorum_sasl::Login::Digest(creds) = creds else { panic!("{creds:?}") };
    assert_eq!((creds.user.as_str(), creds.password.as_str()), ("l", "p"));
    assert!(c.sasl_users.is_none(), "a file of quorum sections only sets no client accounts");
    let _ = std::fs::remove_file(&jaas);
}

#[test]
fn admin_https_serves_with_the_quorum_stores() {
    let stores = "ssl.quorum.keyStore.location=/k/ks.pem\nssl.quorum.trustStore.location=/k/ca.pem\n";
    // Plain HTTP unless forceHttps or portUnification is true (Boolean.getBoolean: only "true").
    assert_eq!(with_file("admin.needClientAuth=true\n", ServeArgs::default()).unwrap().admin_tls, None);
    assert_eq!(with_file(&format!("admin.forceHttps=yes\n{stores}"), ServeArgs::default()).unwrap().admin_tls, None);
    let c = with_file(&format!("admin.forceHttps=true\nadmin.needClientAuth=true\n{stores}"), ServeArgs::default());
    let a = c.unwrap().admin_tls.expect("HTTPS");
    assert!(a.https_only);
    assert_eq!(a.tls.stores.client_auth, ClientAuth::Need);
    assert_eq!(a.tls.stores.key_store.path, std::path::PathBuf::from("/k/ks.pem"));
    let a = with_file(&format!("admin.portUnification=true\n{stores}"), ServeArgs::default()).unwrap().admin_tls;
    let a = a.expect("HTTPS beside HTTP");
    assert!(!a.https_only && a.tls.port_unification);
    assert_eq!(a.tls.stores.client_auth, ClientAuth::None, "no certificate asked for without needClientAuth");
    let e = with_file("tickTime=2000\nadmin.forceHttps=true\n", ServeArgs::default()).err().map(|e| e.to_string());
    assert!(
        e.as_deref()
            .is_some_and(|e| e.contains(":2: admin.forceHttps=true needs") && e.contains("ssl.quorum.keyStore")),
        "{e:?}"
    );
}

#[test]
fn zookeeper_passwords_are_off_unless_asked() {
    assert!(!with_file("", ServeArgs::default()).unwrap().zookeeper_passwords);
    assert!(with_file("zkr.zookeeperPasswords=true\n", ServeArgs::default()).unwrap().zookeeper_passwords);
    let e = with_file("zkr.zookeeperPasswords=1\n", ServeArgs::default()).map(|_| ()).unwrap_err().to_string();
    assert!(e.contains("zkr.zookeeperPasswords must be true or false"), "{e}");
}

#[test]
fn admin_backup_keys() {
    let c = with_file("", ServeArgs::default()).unwrap();
    assert_eq!(c.admin_backup, crate::config::AdminBackup { snapshot: false, restore: false, rate_limit_ms: 300_000 });
    let text = "admin.snapshot.enabled=TRUE\nadmin.restore.enabled=true\nadmin.rateLimiterIntervalInMS=10\n";
    let c = with_file(text, ServeArgs::default()).unwrap();
    assert_eq!(c.admin_backup, crate::config::AdminBackup { snapshot: true, restore: true, rate_limit_ms: 10 });
    assert!(with_file("admin.rateLimiterIntervalInMS=-1\n", ServeArgs::default()).is_err());
}
