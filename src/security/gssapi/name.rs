//! The `sasl` identity of a Kerberos principal, computed as ZooKeeper's
//! `SaslServerCallbackHandler` computes it: the principal's short name by the
//! `zookeeper.security.auth_to_local` rules (default `DEFAULT`: the first component when the
//! realm is krb5.conf's default realm), then `/host` unless `kerberos.removeHostFromPrincipal`,
//! then `@REALM` unless `kerberos.removeRealmFromPrincipal`. So `bob@ZKR.TEST` is
//! `bob@ZKR.TEST` by default and `bob` with both switches on.

use regex::Regex;

/// A principal split as ZooKeeper's `KerberosName` splits it: `service[/host]@REALM`, or a
/// bare name with neither host nor realm.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KerberosName {
    pub service: String,
    pub host: Option<String>,
    pub realm: Option<String>,
}

#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum NameError {
    #[error("malformed Kerberos name: {0}")]
    Malformed(String),
    #[error("no rules applied to {0}")]
    NoMatchingRule(String),
    #[error("invalid auth_to_local rule at {0:?}")]
    BadRule(String),
}

impl KerberosName {
    pub fn parse(name: &str) -> Result<KerberosName, NameError> {
        let Some((left, realm)) = name.split_once('@') else {
            return Ok(KerberosName { service: name.to_owned(), host: None, realm: None });
        };
        let bad = |s: &str| s.contains('/') || s.contains('@');
        let (service, host) = match left.split_once('/') {
            Some((s, h)) => (s, Some(h)),
            None => (left, None),
        };
        if bad(service) || host.is_some_and(bad) || bad(realm) {
            return Err(NameError::Malformed(name.to_owned()));
        }
        Ok(KerberosName { service: service.into(), host: host.map(Into::into), realm: Some(realm.into()) })
    }

    /// The short name by `rules`.
    pub fn short_name(&self, rules: &Rules) -> Result<String, NameError> {
        let realm = match &self.realm {
            None if self.host.is_none() => return Ok(self.service.clone()),
            None => String::new(),
            Some(r) => r.clone(),
        };
        let mut params = vec![realm, self.service.clone()];
        params.extend(self.host.clone());
        for rule in &rules.rules {
            if let Some(short) = rule.apply(&params, &rules.default_realm)? {
                return Ok(short);
            }
        }
        Err(NameError::NoMatchingRule(self.to_string()))
    }
}

impl std::fmt::Display for KerberosName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.service)?;
        if let Some(h) = &self.host {
            write!(f, "/{h}")?;
        }
        if let Some(r) = &self.realm {
            write!(f, "@{r}")?;
        }
        Ok(())
    }
}

/// How principals become `sasl` ids: the rules, the default realm they compare with, and the
/// two `kerberos.remove*FromPrincipal` switches.
#[derive(Debug, Clone)]
pub struct Rules {
    rules: Vec<Rule>,
    pub default_realm: String,
    pub remove_host: bool,
    pub remove_realm: bool,
}

#[derive(Debug, Clone)]
struct Rule {
    text: String,
    kind: RuleKind,
}

#[derive(Debug, Clone)]
enum RuleKind {
    Default,
    /// `RULE:[n:format](match)s/from/to/g`
    Custom {
        components: usize,
        format: String,
        matches: Option<Regex>,
        subst: Option<(Regex, String, bool)>,
    },
}

impl Rules {
    /// Parses `zookeeper.security.auth_to_local` (ZooKeeper's default is `DEFAULT`).
    pub fn parse(text: &str, default_realm: &str, remove_host: bool, remove_realm: bool) -> Result<Rules, NameError> {
        let re = Regex::new(r"^\s*((DEFAULT)|(RULE:\[(\d*):([^\]]*)\](\(([^)]*)\))?(s/([^/]*)/([^/]*)/(g)?)?))")
            .map_err(|e| NameError::BadRule(e.to_string()))?;
        let mut rest = text.trim_end();
        let mut rules = Vec::new();
        while !rest.trim().is_empty() {
            let c = re.captures(rest).ok_or_else(|| NameError::BadRule(rest.to_owned()))?;
            let whole = c.get(0).map_or("", |m| m.as_str());
            let kind = if c.get(2).is_some() {
                RuleKind::Default
            } else {
                let regex = |s: &str| Regex::new(&format!("^(?:{s})$")).map_err(|_| NameError::BadRule(whole.into()));
                let find = |s: &str| Regex::new(s).map_err(|_| NameError::BadRule(whole.into()));
                RuleKind::Custom {
                    components: c[4].parse().map_err(|_| NameError::BadRule(whole.into()))?,
                    format: c[5].to_owned(),
                    matches: c.get(7).map(|m| regex(m.as_str())).transpose()?,
                    subst: match c.get(8) {
                        Some(_) => Some((find(&c[9])?, java_replacement(&c[10]), c.get(11).is_some())),
                        None => None,
                    },
                }
            };
            rules.push(Rule { text: whole.trim().to_owned(), kind });
            rest = &rest[whole.len()..];
        }
        Ok(Rules { rules, default_realm: default_realm.to_owned(), remove_host, remove_realm })
    }

    /// The `sasl` id of an authenticated principal, or `None` when no rule applies (ZooKeeper
    /// then logs an error and keeps the authorization id the client sent).
    pub fn sasl_id(&self, principal: &str) -> Result<String, NameError> {
        let name = KerberosName::parse(principal)?;
        let mut id = name.short_name(self)?;
        if let (false, Some(h)) = (self.remove_host, &name.host) {
            id.push('/');
            id.push_str(h);
        }
        if let (false, Some(r)) = (self.remove_realm, &name.realm) {
            id.push('@');
            id.push_str(r);
        }
        Ok(id)
    }
}

/// Java's `$1` group references become the regex crate's `${1}`.
fn java_replacement(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.extend(chars.next().map(|n| if n == '$' { "$$".to_owned() } else { n.to_string() })),
            '$' => {
                let mut digits = String::new();
                while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                    digits.push(*d);
                    chars.next();
                }
                out.push_str(&format!("${{{digits}}}"));
            }
            c => out.push(c),
        }
    }
    out
}

impl Rule {
    /// `params`: realm, then the name's components. `Ok(None)` when the rule does not apply.
    fn apply(&self, params: &[String], default_realm: &str) -> Result<Option<String>, NameError> {
        let result = match &self.kind {
            RuleKind::Default => (default_realm == params[0]).then(|| params[1].clone()),
            RuleKind::Custom { components, format, matches, subst } => {
                if *components != params.len() - 1 {
                    return Ok(None);
                }
                let base = replace_params(format, params).ok_or_else(|| NameError::BadRule(self.text.clone()))?;
                if matches.as_ref().is_some_and(|m| !m.is_match(&base)) {
                    return Ok(None);
                }
                Some(match subst {
                    None => base,
                    Some((from, to, true)) => from.replace_all(&base, to.as_str()).into_owned(),
                    Some((from, to, false)) => from.replace(&base, to.as_str()).into_owned(),
                })
            }
        };
        match result {
            Some(r) if r.contains('/') || r.contains('@') => Err(NameError::NoMatchingRule(r)),
            r => Ok(r),
        }
    }
}

/// `$0` is the realm, `$1`.. the components.
fn replace_params(format: &str, params: &[String]) -> Option<String> {
    let mut out = String::new();
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '$' {
            out.push(c);
            continue;
        }
        let mut digits = String::new();
        while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
            digits.push(*d);
            chars.next();
        }
        out.push_str(params.get(digits.parse::<usize>().ok()?)?);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn default(host: bool, realm: bool) -> Rules {
        Rules::parse("DEFAULT", "ZKR.TEST", host, realm).unwrap()
    }

    #[test]
    fn ids_as_zookeeper_gives_them() {
        assert_eq!(default(false, false).sasl_id("bob@ZKR.TEST").unwrap(), "bob@ZKR.TEST");
        assert_eq!(default(true, true).sasl_id("bob@ZKR.TEST").unwrap(), "bob");
        let carol = "carol/client.example@ZKR.TEST";
        assert_eq!(default(false, false).sasl_id(carol).unwrap(), carol);
        assert_eq!(default(true, false).sasl_id(carol).unwrap(), "carol@ZKR.TEST");
        assert_eq!(default(false, true).sasl_id(carol).unwrap(), "carol/client.example");
        assert_eq!(default(true, true).sasl_id(carol).unwrap(), "carol");
        assert_eq!(
            default(true, true).sasl_id("eve@OTHER.TEST"),
            Err(NameError::NoMatchingRule("eve@OTHER.TEST".into()))
        );
        assert_eq!(default(true, true).sasl_id("plain").unwrap(), "plain");
    }

    #[test]
    fn custom_rules() {
        let r = Rules::parse(
            "RULE:[1:$1@$0](.*@OTHER\\.TEST)s/@.*//\nRULE:[2:$1](hbase)s/^.*$/hbase-svc/ DEFAULT",
            "ZKR.TEST",
            true,
            true,
        )
        .unwrap();
        assert_eq!(r.sasl_id("eve@OTHER.TEST").unwrap(), "eve");
        assert_eq!(r.sasl_id("hbase/rs1.example@ZKR.TEST").unwrap(), "hbase-svc");
        assert_eq!(r.sasl_id("bob@ZKR.TEST").unwrap(), "bob");
        assert!(Rules::parse("RULES:[", "R", false, false).is_err());
    }

    #[test]
    fn java_group_references() {
        let r = Rules::parse("RULE:[2:$1;$2](^.*;admin$)s/;admin$/-adm/g", "R", true, true).unwrap();
        assert_eq!(r.sasl_id("ops/admin@R").unwrap(), "ops-adm");
        assert_eq!(java_replacement("a$1b\\$"), "a${1}b$$");
    }
}
