//! The authentication settings of `Config`: the client port's SASL login from the JAAS file
//! (DIGEST-MD5 accounts or Kerberos), `enforce.auth`, quorum SASL between members, and the Java
//! system properties ZooKeeper deployments pass in `SERVER_JVMFLAGS`/`JVMFLAGS`.

use super::merge::Keys;
use super::zoo_cfg::ZooCfg;
use super::{Config, ConfigError, ServeArgs};
use std::path::{Path, PathBuf};

/// A ZooKeeper system property as a deployment sets it: its zoo.cfg form (ZooKeeper makes each
/// key it does not know the property `zookeeper.<key>`) wins over `-Dzookeeper.<key>=` in the
/// JVM flags.
fn zk_property(file: Option<&ZooCfg>, key: &str) -> Option<String> {
    match file.and_then(|f| f.keys.get(key)) {
        Some((v, _)) => Some(v.clone()),
        None => jvm_property(&format!("zookeeper.{key}")),
    }
}

/// Boolean.parseBoolean of a ZooKeeper system property: "true" in any case.
fn zk_bool(file: Option<&ZooCfg>, key: &str) -> bool {
    zk_property(file, key).is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

impl Config {
    /// The client port's SASL login from the JAAS file (`--jaas-config`): the section
    /// `zookeeper.sasl.serverconfig` names (default `Server`) logs in with Kerberos (clients
    /// then use GSSAPI) or holds DIGEST-MD5 accounts.
    pub(super) fn read_jaas(&mut self, args: &ServeArgs, file: Option<&ZooCfg>) -> Result<(), ConfigError> {
        if self.sasl_super_user.is_none() {
            self.sasl_super_user = zk_property(file, "superUser");
        }
        let Some(p) = &args.jaas_config else { return Ok(()) };
        let sections = crate::security::jaas::load_sections(p).map_err(|e| ConfigError::Invalid(e.to_string()))?;
        let name = p.display().to_string();
        let server =
            zk_property(file, "sasl.serverconfig").unwrap_or_else(|| crate::security::jaas::SERVER_SECTION.to_owned());
        let invalid = |e: crate::security::jaas::JaasError| ConfigError::Invalid(e.to_string());
        // A file with only the quorum sections serves an observer's login; otherwise the
        // client port's accounts are what it is for.
        let quorum_only = !sections.contains_key(&server) && sections.keys().any(|s| s.starts_with("Quorum"));
        if let Some((principal, keytab)) =
            crate::security::jaas::kerberos_login(&sections, &server, &name).map_err(invalid)?
        {
            self.sasl_kerberos = Some(crate::security::gssapi::KerberosSettings {
                principal,
                keytab: keytab.into(),
                auth_to_local: zk_property(file, "security.auth_to_local").unwrap_or_else(|| "DEFAULT".into()),
                remove_host: zk_bool(file, "kerberos.removeHostFromPrincipal"),
                remove_realm: zk_bool(file, "kerberos.removeRealmFromPrincipal"),
            });
        } else if !quorum_only {
            let users = crate::security::jaas::users_of(&sections, &server, &name).map_err(invalid)?;
            self.sasl_users = Some(crate::security::jaas::Users(users));
        }
        Ok(())
    }
}

/// ZooKeeper's `AuthenticationHelper` (3.7+): `sessionRequireClientSASLAuth=true` means
/// `enforce.auth.enabled` with scheme `sasl`; otherwise `enforce.auth.enabled` needs
/// `enforce.auth.scheme` naming a scheme the server authenticates. Each is a zoo.cfg key (which
/// ZooKeeper makes the system property `zookeeper.<key>`) or that property in the JVM flags.
pub(super) fn enforce_auth(file: Option<&ZooCfg>) -> Result<Option<super::EnforceAuth>, ConfigError> {
    let keys = file.map(|f| Keys { name: &f.name, keys: &f.keys });
    let prop = |key: &str| zk_property(file, key);
    let on = |key: &str| zk_bool(file, key);
    let bad = |key: &str, reason: String| match keys.as_ref().filter(|k| k.get(key).is_some()) {
        Some(k) => k.bad(key, reason),
        None => ConfigError::Invalid(reason),
    };
    if on("sessionRequireClientSASLAuth") {
        return Ok(Some(super::EnforceAuth { schemes: vec!["sasl".into()] }));
    }
    if !on("enforce.auth.enabled") {
        return Ok(None);
    }
    // 3.8 reads a comma-separated `enforce.auth.schemes`; later versions one `enforce.auth.scheme`.
    let Some(scheme) = prop("enforce.auth.schemes").or_else(|| prop("enforce.auth.scheme")) else {
        return Err(bad(
            "enforce.auth.enabled",
            "zookeeper.enforce.auth.enabled is true, so zookeeper.enforce.auth.scheme must be configured (as in ZooKeeper)".into(),
        ));
    };
    let schemes: Vec<String> = scheme.split(',').map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()).collect();
    if let Some(s) = schemes.iter().find(|s| !["sasl", "digest", "ip", "x509"].contains(&s.as_str())) {
        return Err(bad("enforce.auth.schemes", format!("authentication scheme {s} is not available")));
    }
    Ok(Some(super::EnforceAuth { schemes }))
}

/// A Java system property as a ZooKeeper deployment passes it: `-Dname=value` in SERVER_JVMFLAGS,
/// then JVMFLAGS (zkServer.sh runs java with both).
pub fn jvm_property(name: &str) -> Option<String> {
    let prefix = format!("-D{name}=");
    ["SERVER_JVMFLAGS", "JVMFLAGS"].iter().find_map(|v| {
        let flags = std::env::var(v).ok()?;
        flags.split_whitespace().find_map(|a| a.strip_prefix(prefix.as_str()).map(str::to_owned))
    })
}

/// The JAAS file a JVM would be given: `-Djava.security.auth.login.config=` in SERVER_JVMFLAGS
/// or JVMFLAGS (how ZooKeeper deployments pass it).
fn jaas_from_jvm_flags() -> Option<PathBuf> {
    jvm_property("java.security.auth.login.config").map(PathBuf::from)
}

/// zoo.cfg's quorum SASL switches, with the combinations QuorumPeerConfig refuses refused here
/// too: `(learnerRequireSasl, serverRequireSasl)`, or None when `quorum.auth.enableSasl` is not
/// true.
fn quorum_sasl_keys(k: &Keys) -> Result<Option<(bool, bool)>, ConfigError> {
    let enabled = k.java_bool("quorum.auth.enableSasl").unwrap_or(false);
    let learner = k.java_bool("quorum.auth.learnerRequireSasl").unwrap_or(false);
    let server = k.java_bool("quorum.auth.serverRequireSasl").unwrap_or(false);
    if !enabled && (learner || server) {
        let key = if learner { "quorum.auth.learnerRequireSasl" } else { "quorum.auth.serverRequireSasl" };
        return Err(k.bad(key, format!("{key}=true needs quorum.auth.enableSasl=true (as in ZooKeeper)")));
    }
    if server && !learner {
        return Err(k.bad(
            "quorum.auth.serverRequireSasl",
            "quorum.auth.serverRequireSasl=true needs quorum.auth.learnerRequireSasl=true (as in ZooKeeper)".into(),
        ));
    }
    Ok(enabled.then_some((learner, server)))
}

/// The JAAS file quorum SASL reads its `section` from (`key` names the line that asked).
fn quorum_jaas(
    k: &Keys,
    key: &str,
    section: &str,
    jaas: Option<&Path>,
) -> Result<(crate::security::jaas::Sections, String), ConfigError> {
    let path = jaas.map(Path::to_path_buf).or_else(jaas_from_jvm_flags).ok_or_else(|| {
        k.bad(
            key,
            format!("quorum SASL needs a JAAS file with a {section} section: --jaas-config FILE, or -Djava.security.auth.login.config=FILE in SERVER_JVMFLAGS"),
        )
    })?;
    let sections = crate::security::jaas::load_sections(&path).map_err(|e| ConfigError::Invalid(e.to_string()))?;
    Ok((sections, path.display().to_string()))
}

/// The login a member sends on the connections it opens: only with
/// `quorum.auth.learnerRequireSasl` (SaslQuorumAuthLearner sends nothing otherwise), from the
/// JAAS section `quorum.auth.learner.saslLoginContext` (default `QuorumLearner`): Kerberos when
/// the section uses `Krb5LoginModule` (the member logs in to
/// `quorum.auth.kerberos.servicePrincipal`, default `zkquorum/localhost`), else DIGEST-MD5.
fn quorum_login(k: &Keys, jaas: Option<&Path>) -> Result<crate::security::quorum_sasl::Login, ConfigError> {
    use crate::security::quorum_sasl::{Credentials, KerberosLogin, Login};
    let section = k.get("quorum.auth.learner.saslLoginContext").unwrap_or("QuorumLearner");
    let (sections, file) = quorum_jaas(k, "quorum.auth.learnerRequireSasl", section, jaas)?;
    let invalid = |e: crate::security::jaas::JaasError| ConfigError::Invalid(e.to_string());
    if let Some((principal, keytab)) =
        crate::security::jaas::kerberos_login(&sections, section, &file).map_err(invalid)?
    {
        let service_principal =
            k.get("quorum.auth.kerberos.servicePrincipal").unwrap_or("zkquorum/localhost").to_owned();
        return Ok(Login::Kerberos(KerberosLogin { principal, keytab: keytab.into(), service_principal }));
    }
    let (user, password) = crate::security::jaas::login(&sections, section, &file).map_err(invalid)?;
    Ok(Login::Digest(Credentials { user, password }))
}

/// Quorum SASL as ZooKeeper's members do it: with `quorum.auth.enableSasl=true` a member checks
/// any login sent to it against the JAAS section `quorum.auth.server.saslLoginContext` (default
/// `QuorumServer`; ZooKeeper's SaslQuorumAuthServer stops startup without the section too): its
/// Kerberos login (`Krb5LoginModule`), or its `user_` DIGEST-MD5 accounts. It logs in itself
/// when `learnerRequireSasl`, and refuses members that send no login when `serverRequireSasl`.
/// A zkr observer of a ZooKeeper ensemble only logs in, but is held to the same file: after
/// `zkr takeover` the same zoo.cfg makes it a member that takes logins.
pub(super) fn quorum_sasl(
    f: &ZooCfg,
    jaas: Option<&Path>,
) -> Result<Option<crate::security::quorum_sasl::QuorumSasl>, ConfigError> {
    use crate::security::quorum_sasl::Accounts;
    let k = Keys { name: &f.name, keys: &f.keys };
    let Some((learner, require)) = quorum_sasl_keys(&k)? else { return Ok(None) };
    let section = k.get("quorum.auth.server.saslLoginContext").unwrap_or("QuorumServer");
    let (sections, file) = quorum_jaas(&k, "quorum.auth.enableSasl", section, jaas)?;
    let invalid = |e: crate::security::jaas::JaasError| ConfigError::Invalid(e.to_string());
    let accounts = match crate::security::jaas::kerberos_login(&sections, section, &file).map_err(invalid)? {
        Some((principal, keytab)) => {
            // QuorumPeer.initialize: the hosts of every server.N line may log in.
            let mut hosts: Vec<String> = crate::raft::members::servers_of(&f.keys, &f.name)
                .map(|servers| servers.into_values().map(|s| s.host).collect())
                .unwrap_or_default();
            hosts.sort();
            hosts.dedup();
            Accounts::Kerberos { principal, keytab: keytab.into(), hosts }
        }
        None => Accounts::Digest(crate::security::jaas::users_of(&sections, section, &file).map_err(invalid)?),
    };
    let login = if learner { Some(quorum_login(&k, jaas)?) } else { None };
    Ok(Some(crate::security::quorum_sasl::QuorumSasl { login, accounts, require }))
}
