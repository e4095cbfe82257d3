//! SASL GSSAPI (Kerberos) logins on the client port, as a Kerberized ZooKeeper takes them: the
//! JAAS `Server` section (or `zookeeper.sasl.serverconfig`'s) logs in with
//! `com.sun.security.auth.module.Krb5LoginModule` from a keytab, and every client logs in with
//! GSSAPI instead of DIGEST-MD5.
//!
//! - [`ffi`]: the system's GSS-API, loaded at run time (why: see there);
//! - [`sasl`]: the RFC 4752 exchange as Java's `GssKrb5Server` runs it;
//! - [`name`]: the `sasl` id of a principal, by ZooKeeper's `KerberosName` rules.

pub mod ffi;
pub mod name;
pub mod sasl;

use std::path::PathBuf;
use std::sync::Arc;

/// The Kerberos login of the client port, from zoo.cfg's JAAS file and system properties.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KerberosSettings {
    /// The JAAS `principal`, e.g. `zookeeper/host.example@REALM`.
    pub principal: String,
    /// The JAAS `keyTab`.
    pub keytab: PathBuf,
    /// `zookeeper.security.auth_to_local` (default `DEFAULT`).
    pub auth_to_local: String,
    /// `kerberos.removeHostFromPrincipal`.
    pub remove_host: bool,
    /// `kerberos.removeRealmFromPrincipal`.
    pub remove_realm: bool,
}

/// The running form: the accepting credential and the naming rules.
#[derive(Debug)]
pub struct Kerberos {
    pub acceptor: Arc<ffi::Acceptor>,
    pub rules: name::Rules,
}

#[derive(Debug, thiserror::Error)]
pub enum KerberosError {
    #[error("Kerberos login of {principal} from keytab {keytab}: {source}")]
    Login { principal: String, keytab: String, source: ffi::GssError },
    #[error("zookeeper.security.auth_to_local: {0}")]
    Rules(#[from] name::NameError),
}

impl Kerberos {
    /// Acquires the server's credential (its keytab must hold the principal; no KDC needed).
    pub fn start(s: &KerberosSettings) -> Result<Kerberos, KerberosError> {
        let acceptor = ffi::Acceptor::new(&s.principal, &s.keytab).map_err(|source| KerberosError::Login {
            principal: s.principal.clone(),
            keytab: s.keytab.display().to_string(),
            source,
        })?;
        let realm = ffi::default_realm().unwrap_or_else(|e| {
            // Java's KerberosName takes "" then, and DEFAULT matches no realm.
            tracing::warn!("no default Kerberos realm ({e}): auth_to_local's DEFAULT rule matches no principal");
            String::new()
        });
        let rules = name::Rules::parse(&s.auth_to_local, &realm, s.remove_host, s.remove_realm)?;
        Ok(Kerberos { acceptor: Arc::new(acceptor), rules })
    }

    /// A new exchange for one connection.
    pub fn server(&self) -> sasl::GssapiServer<ffi::Context> {
        sasl::GssapiServer::new(self.acceptor.context())
    }
}
