//! Client-side path rules: the Java client's `PathUtils.validatePath` (same messages, same
//! UTF-16 positions) and the chroot suffix of a connect string.
//!
//! Pure; the server applies its own rules again, this only reproduces what zkCli rejects before
//! sending anything.

/// `PathUtils.validatePath`: `Err` holds the `IllegalArgumentException` message zkCli prints.
pub fn validate(path: &str) -> Result<(), String> {
    if path.is_empty() {
        return Err("Path length must be > 0".into());
    }
    if !path.starts_with('/') {
        return Err("Path must start with / character".into());
    }
    let units: Vec<u16> = path.encode_utf16().collect();
    if units.len() == 1 {
        return Ok(());
    }
    if path.ends_with('/') {
        return Err("Path must not end with / character".into());
    }
    let slash = u16::from(b'/');
    let dot = u16::from(b'.');
    let mut last = slash;
    let mut reason = None;
    for i in 1..units.len() {
        let c = units[i];
        let next_ends = i + 1 == units.len() || units[i + 1] == slash;
        if c == 0 {
            reason = Some(format!("null character not allowed @{i}"));
        } else if c == slash && last == slash {
            reason = Some(format!("empty node name specified @{i}"));
        } else if c == dot && last == dot {
            if units[i - 2] == slash && next_ends {
                reason = Some(format!("relative paths not allowed @{i}"));
            }
        } else if c == dot {
            if units[i - 1] == slash && next_ends {
                reason = Some(format!("relative paths not allowed @{i}"));
            }
        } else if (1..=0x1f).contains(&c)
            || (0x7f..=0x9f).contains(&c)
            || (0xd800..=0xf8ff).contains(&c)
            || (0xfff0..=0xffff).contains(&c)
        {
            reason = Some(format!("invalid character @{i}"));
        }
        if reason.is_some() {
            break;
        }
        last = c;
    }
    match reason {
        Some(r) => Err(format!("Invalid path string \"{path}\" caused by {r}")),
        None => Ok(()),
    }
}

/// `PathUtils.validatePath(path, isSequential)`: a sequential path is checked with a digit
/// appended, so `create -s /a/` is allowed and makes `/a/0000000001`.
pub fn validate_create(path: &str, sequential: bool) -> Result<(), String> {
    if sequential {
        validate(&format!("{path}1"))
    } else {
        validate(path)
    }
}

/// The chroot of a connect string (`host:port/app`), as the Java client applies it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Chroot(Option<String>);

impl Chroot {
    /// `None` for no chroot or `/`; `Err` if the chroot is not a valid path.
    pub fn new(suffix: Option<&str>) -> Result<Chroot, String> {
        match suffix {
            None | Some("/") | Some("") => Ok(Chroot(None)),
            Some(p) => {
                validate(p)?;
                Ok(Chroot(Some(p.to_string())))
            }
        }
    }

    /// The server path for a client path (`/` maps to the chroot itself).
    pub fn to_server(&self, client_path: &str) -> String {
        match &self.0 {
            None => client_path.to_string(),
            Some(root) if client_path == "/" => root.clone(),
            Some(root) => format!("{root}{client_path}"),
        }
    }

    /// The client path for a server path; paths outside the chroot are returned unchanged.
    pub fn to_client(&self, server_path: &str) -> String {
        match &self.0 {
            None => server_path.to_string(),
            Some(root) => match server_path.strip_prefix(root.as_str()) {
                Some("") => "/".to_string(),
                Some(rest) if rest.starts_with('/') => rest.to_string(),
                _ => server_path.to_string(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_javas() {
        assert_eq!(validate("/"), Ok(()));
        assert_eq!(validate("/a/b"), Ok(()));
        assert_eq!(validate("a").unwrap_err(), "Path must start with / character");
        assert_eq!(validate("").unwrap_err(), "Path length must be > 0");
        assert_eq!(validate("/a/").unwrap_err(), "Path must not end with / character");
        assert_eq!(
            validate("/e1//x").unwrap_err(),
            "Invalid path string \"/e1//x\" caused by empty node name specified @4"
        );
        assert_eq!(
            validate("/e1/.").unwrap_err(),
            "Invalid path string \"/e1/.\" caused by relative paths not allowed @4"
        );
        assert_eq!(
            validate("/a/../b").unwrap_err(),
            "Invalid path string \"/a/../b\" caused by relative paths not allowed @4"
        );
        assert_eq!(validate("/a/.b"), Ok(()));
        assert_eq!(validate("/a\u{1}").unwrap_err(), "Invalid path string \"/a\u{1}\" caused by invalid character @2");
        assert_eq!(
            validate("/\u{1F600}").unwrap_err(),
            "Invalid path string \"/\u{1F600}\" caused by invalid character @1"
        );
        assert_eq!(validate_create("/a/", true), Ok(()));
    }

    #[test]
    fn chroot_maps_both_ways() {
        let c = Chroot::new(Some("/app")).unwrap();
        assert_eq!(c.to_server("/"), "/app");
        assert_eq!(c.to_server("/x"), "/app/x");
        assert_eq!(c.to_client("/app"), "/");
        assert_eq!(c.to_client("/app/x"), "/x");
        assert_eq!(c.to_client("/apple"), "/apple");
        assert_eq!(Chroot::new(Some("/")).unwrap(), Chroot::default());
        assert!(Chroot::new(Some("/a/")).is_err());
    }
}
