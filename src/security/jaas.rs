//! The users of ZooKeeper's SASL DIGEST-MD5 server, read from the JAAS login file ZooKeeper
//! itself takes (`-Djava.security.auth.login.config=...`):
//!
//! ```text
//! Server {
//!     org.apache.zookeeper.server.auth.DigestLoginModule required
//!     user_bob="bobsecret"
//!     user_super="adminsecret";
//! };
//! ```
//!
//! The `Server` section (ZooKeeper's `zookeeper.sasl.serverconfig` default) holds the client
//! port's accounts as `user_<name>="<password>"` options. An observer of a ZooKeeper ensemble
//! that requires quorum SASL logs in with the `username`/`password` of the `QuorumLearner`
//! section (`quorum.auth.learner.saslLoginContext`). Other sections are skipped. Errors name the
//! file and line.

use std::collections::BTreeMap;
use std::path::Path;

/// SASL accounts: user name → password. Debug shows the names only.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Users(pub BTreeMap<String, String>);

impl std::fmt::Debug for Users {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.keys()).finish()
    }
}

/// The section ZooKeeper's server logs in with.
pub const SERVER_SECTION: &str = "Server";

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum JaasError {
    #[error("{file}:{line}: {reason}")]
    Syntax { file: String, line: usize, reason: String },
    #[error("{file}: no {section} section with user_<name>=\"<password>\" entries")]
    NoServer { file: String, section: String },
    #[error("cannot read {file}: {reason}")]
    Read { file: String, reason: String },
    #[error("{file}: no {section} section with username=\"<name>\" and password=\"<password>\"")]
    NoLogin { file: String, section: String },
    #[error("{file}: section {section}: {reason}")]
    Kerberos { file: String, section: String, reason: String },
}

/// One section: its login modules' class names, in order, and the options of all of them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Section {
    pub modules: Vec<String>,
    pub options: BTreeMap<String, String>,
}

/// Every section, by name.
pub type Sections = BTreeMap<String, Section>;

/// The login module of a Kerberos login (Java's own).
pub const KRB5_LOGIN_MODULE: &str = "com.sun.security.auth.module.Krb5LoginModule";

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Word(String),
    Quoted(String),
    Punct(char),
}

fn tokenize(text: &str, file: &str) -> Result<Vec<(Tok, usize)>, JaasError> {
    let err = |line: usize, reason: &str| JaasError::Syntax { file: file.to_owned(), line, reason: reason.to_owned() };
    let mut out = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let (mut i, mut line) = (0, 1);
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\n' => {
                line += 1;
                i += 1;
            }
            c if c.is_whitespace() => i += 1,
            '/' if chars.get(i + 1) == Some(&'/') => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '/' if chars.get(i + 1) == Some(&'*') => {
                let start = line;
                i += 2;
                loop {
                    match chars.get(i) {
                        None => return Err(err(start, "unterminated /* comment")),
                        Some('*') if chars.get(i + 1) == Some(&'/') => {
                            i += 2;
                            break;
                        }
                        Some('\n') => line += 1,
                        _ => {}
                    }
                    i += 1;
                }
            }
            '"' => {
                let start = line;
                let mut s = String::new();
                i += 1;
                loop {
                    match chars.get(i) {
                        None => return Err(err(start, "unterminated quoted string")),
                        Some('"') => break,
                        Some('\\') if i + 1 < chars.len() => {
                            i += 1;
                            s.push(chars[i]);
                        }
                        Some(ch) => {
                            if *ch == '\n' {
                                line += 1;
                            }
                            s.push(*ch);
                        }
                    }
                    i += 1;
                }
                i += 1;
                out.push((Tok::Quoted(s), start));
            }
            '{' | '}' | ';' | '=' => {
                out.push((Tok::Punct(c), line));
                i += 1;
            }
            _ => {
                let mut s = String::new();
                while i < chars.len() && !chars[i].is_whitespace() && !"{};=\"".contains(chars[i]) {
                    s.push(chars[i]);
                    i += 1;
                }
                out.push((Tok::Word(s), line));
            }
        }
    }
    Ok(out)
}

/// Parses a JAAS file; returns the `user_` accounts of the `Server` section.
pub fn parse(text: &str, file: &str) -> Result<BTreeMap<String, String>, JaasError> {
    server_users(&parse_sections(text, file)?, file)
}

/// The `user_` accounts of the `Server` section.
pub fn server_users(sections: &Sections, file: &str) -> Result<BTreeMap<String, String>, JaasError> {
    users_of(sections, SERVER_SECTION, file)
}

/// The `user_` accounts of `section` (`QuorumServer` for quorum SASL).
pub fn users_of(sections: &Sections, section: &str, file: &str) -> Result<BTreeMap<String, String>, JaasError> {
    let users: BTreeMap<String, String> = sections
        .get(section)
        .into_iter()
        .flat_map(|s| &s.options)
        .filter_map(|(k, v)| k.strip_prefix("user_").map(|u| (u.to_owned(), v.clone())))
        .collect();
    if users.is_empty() {
        return Err(JaasError::NoServer { file: file.to_owned(), section: section.to_owned() });
    }
    Ok(users)
}

/// The `username` and `password` a section logs in with (ZooKeeper's `QuorumLearner`).
pub fn login(sections: &Sections, section: &str, file: &str) -> Result<(String, String), JaasError> {
    let s = sections.get(section).map(|s| &s.options);
    match (s.and_then(|o| o.get("username")), s.and_then(|o| o.get("password"))) {
        (Some(u), Some(p)) => Ok((u.clone(), p.clone())),
        _ => Err(JaasError::NoLogin { file: file.to_owned(), section: section.to_owned() }),
    }
}

/// A section's Kerberos login (`Krb5LoginModule` with `principal` and `keyTab`): `None` when
/// the section logs in some other way (ZooKeeper's server then takes DIGEST-MD5).
pub fn kerberos_login(sections: &Sections, section: &str, file: &str) -> Result<Option<(String, String)>, JaasError> {
    let Some(s) = sections.get(section) else { return Ok(None) };
    if !s.modules.iter().any(|m| m == KRB5_LOGIN_MODULE) {
        return Ok(None);
    }
    let missing = |what: &str| JaasError::Kerberos {
        file: file.to_owned(),
        section: section.to_owned(),
        reason: format!("{KRB5_LOGIN_MODULE} needs {what}"),
    };
    if s.options.get("useKeyTab").map(String::as_str) != Some("true") {
        return Err(missing("useKeyTab=true (a server logs in from its keytab)"));
    }
    let principal = s.options.get("principal").ok_or_else(|| missing("principal=\"service/host@REALM\""))?;
    let keytab = s.options.get("keyTab").ok_or_else(|| missing("keyTab=\"/path/to/keytab\""))?;
    Ok(Some((principal.clone(), keytab.clone())))
}

/// Parses a JAAS file into its sections' options.
pub fn parse_sections(text: &str, file: &str) -> Result<Sections, JaasError> {
    let toks = tokenize(text, file)?;
    let err = |line: usize, reason: String| JaasError::Syntax { file: file.to_owned(), line, reason };
    let last_line = toks.last().map_or(1, |t| t.1);
    let mut it = toks.into_iter().peekable();
    let mut sections = Sections::new();
    let expect = |it: &mut std::iter::Peekable<std::vec::IntoIter<(Tok, usize)>>, what: char| match it.next() {
        Some((Tok::Punct(c), _)) if c == what => Ok(()),
        Some((t, l)) => Err(err(l, format!("expected '{what}', found {t:?}"))),
        None => Err(err(last_line, format!("expected '{what}' before the end of the file"))),
    };
    while let Some((tok, line)) = it.next() {
        let Tok::Word(section) = tok else {
            return Err(err(line, format!("expected a section name, found {tok:?}")));
        };
        expect(&mut it, '{')?;
        let entry = sections.entry(section.clone()).or_default();
        // Login module entries until the closing brace.
        loop {
            match it.next() {
                Some((Tok::Punct('}'), _)) => break,
                Some((Tok::Word(module), mline)) => {
                    entry.modules.push(module.clone());
                    match it.next() {
                        Some((Tok::Word(flag), _))
                            if ["required", "requisite", "sufficient", "optional"].contains(&flag.as_str()) => {}
                        Some((t, l)) => {
                            return Err(err(l, format!("expected a control flag after {module}, found {t:?}")))
                        }
                        None => return Err(err(mline, "unexpected end of file".into())),
                    }
                    loop {
                        match it.next() {
                            Some((Tok::Punct(';'), _)) => break,
                            Some((Tok::Word(key), kline)) => {
                                expect(&mut it, '=')?;
                                let value = match it.next() {
                                    Some((Tok::Quoted(v) | Tok::Word(v), _)) => v,
                                    _ => return Err(err(kline, format!("option {key} has no value"))),
                                };
                                entry.options.insert(key, value);
                            }
                            Some((t, l)) => return Err(err(l, format!("expected an option or ';', found {t:?}"))),
                            None => return Err(err(mline, format!("entry {module} is not closed with ';'"))),
                        }
                    }
                }
                Some((t, l)) => return Err(err(l, format!("expected a login module or '}}', found {t:?}"))),
                None => return Err(err(line, format!("section {section} is not closed with '}}'"))),
            }
        }
        expect(&mut it, ';')?;
    }
    Ok(sections)
}

/// Reads a JAAS file's sections.
pub fn load_sections(path: &Path) -> Result<Sections, JaasError> {
    let file = path.display().to_string();
    let text =
        std::fs::read_to_string(path).map_err(|e| JaasError::Read { file: file.clone(), reason: e.to_string() })?;
    parse_sections(&text, &file)
}

/// Reads and parses a JAAS file.
pub fn load(path: &Path) -> Result<Users, JaasError> {
    let file = path.display().to_string();
    let text =
        std::fs::read_to_string(path).map_err(|e| JaasError::Read { file: file.clone(), reason: e.to_string() })?;
    parse(&text, &file).map(Users)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_server_users_and_skips_client() {
        let text = "// accounts\nServer {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n  \
                    user_bob=\"bob-secret\"\n  user_super=\"a;b\";\n};\n/* the client */\nClient {\n  \
                    org.apache.zookeeper.server.auth.DigestLoginModule required username=\"bob\" password=\"x\";\n};\n";
        let users = parse(text, "jaas.conf").unwrap();
        assert_eq!(users.get("bob").map(String::as_str), Some("bob-secret"));
        assert_eq!(users.get("super").map(String::as_str), Some("a;b"));
        assert_eq!(users.len(), 2);
    }

    #[test]
    fn reads_the_quorum_learners_login() {
        let text = "QuorumServer {\n org.apache.zookeeper.server.auth.DigestLoginModule required\n user_learner=\"pw\";\n};\n\
                    QuorumLearner {\n org.apache.zookeeper.server.auth.DigestLoginModule required\n username=\"learner\"\n password=\"pw\";\n};\n";
        let s = parse_sections(text, "j").unwrap();
        assert_eq!(login(&s, "QuorumLearner", "j"), Ok(("learner".into(), "pw".into())));
        assert_eq!(login(&s, "Other", "j"), Err(JaasError::NoLogin { file: "j".into(), section: "Other".into() }));
        assert_eq!(server_users(&s, "j"), Err(JaasError::NoServer { file: "j".into(), section: "Server".into() }));
    }

    #[test]
    fn reads_a_kerberos_login() {
        let text = "Server {\n com.sun.security.auth.module.Krb5LoginModule required\n useKeyTab=true\n \
                    keyTab=\"/etc/zk.keytab\"\n storeKey=true\n principal=\"zookeeper/h@R\";\n};\n";
        let s = parse_sections(text, "j").unwrap();
        assert_eq!(kerberos_login(&s, "Server", "j"), Ok(Some(("zookeeper/h@R".into(), "/etc/zk.keytab".into()))));
        assert_eq!(kerberos_login(&s, "Other", "j"), Ok(None));
        let s = parse_sections(&text.replace(" principal=\"zookeeper/h@R\"", ""), "j").unwrap();
        assert!(kerberos_login(&s, "Server", "j").unwrap_err().to_string().contains("needs principal="));
    }

    #[test]
    fn errors_name_the_line() {
        let e = parse("Server {\n  M required\n  user_a=\"x\"\n};\n", "j").unwrap_err();
        assert_eq!(e.to_string(), "j:4: expected an option or ';', found Punct('}')");
        assert_eq!(
            parse("Client { M required a=b; };", "j").unwrap_err(),
            JaasError::NoServer { file: "j".into(), section: "Server".into() }
        );
        assert!(parse("Server {\n M required user_a=\"x", "j")
            .unwrap_err()
            .to_string()
            .starts_with("j:2: unterminated"));
    }
}
