//! ZooKeeper's path rules (`PathUtils.validatePath`) and path helpers.

/// Checks a znode path as ZooKeeper does; `sequential` validates `path + "1"` instead, so a
/// sequential create may end in `/` (`create -s /a/` makes `/a/0000000001`).
pub fn validate(path: &str, sequential: bool) -> bool {
    if sequential {
        let mut p = String::with_capacity(path.len() + 1);
        p.push_str(path);
        p.push('1');
        return validate_plain(&p);
    }
    validate_plain(path)
}

fn validate_plain(path: &str) -> bool {
    if !path.starts_with('/') {
        return false;
    }
    if path.len() == 1 {
        return true;
    }
    if path.ends_with('/') {
        return false;
    }
    for component in path[1..].split('/') {
        if component.is_empty() || component == "." || component == ".." {
            return false;
        }
    }
    !path.chars().any(bad_char)
}

/// Characters `PathUtils.validatePath` rejects.
fn bad_char(c: char) -> bool {
    matches!(c,
        '\u{0000}'..='\u{001f}'
        | '\u{007f}'..='\u{009f}'
        | '\u{e000}'..='\u{f8ff}' // surrogates cannot occur in a Rust str
        | '\u{fff0}'..='\u{ffff}')
}

/// The parent of a valid path other than "/"; the root's children have parent "/".
pub fn parent(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

/// The last component of a valid path ("" for the root).
pub fn name(path: &str) -> &str {
    match path.rfind('/') {
        Some(i) => &path[i + 1..],
        None => path,
    }
}

/// Joins a parent path and a child name.
pub fn join(parent: &str, name: &str) -> String {
    let mut p = String::with_capacity(parent.len() + 1 + name.len());
    p.push_str(parent);
    if parent != "/" {
        p.push('/');
    }
    p.push_str(name);
    p
}

/// True if `path` is `prefix` itself or lies below it.
pub fn is_under(path: &str, prefix: &str) -> bool {
    prefix == "/" || path == prefix || (path.starts_with(prefix) && path.as_bytes().get(prefix.len()) == Some(&b'/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_path_utils() {
        for ok in ["/", "/a", "/a/b", "/a.b", "/...", "/a b"] {
            assert!(validate(ok, false), "{ok}");
        }
        for bad in ["", "a", "/a/", "//", "/a//b", "/.", "/a/..", "/a\u{0}", "/\u{fff5}"] {
            assert!(!validate(bad, false), "{bad:?}");
        }
        assert!(validate("/a/", true));
        assert!(!validate("/a//", true));
    }

    #[test]
    fn helpers() {
        assert_eq!(parent("/a"), "/");
        assert_eq!(parent("/a/b"), "/a");
        assert_eq!(name("/a/b"), "b");
        assert_eq!(join("/", "a"), "/a");
        assert_eq!(join("/a", "b"), "/a/b");
        assert!(is_under("/a/b", "/a"));
        assert!(!is_under("/ab", "/a"));
        assert!(is_under("/x", "/"));
    }
}
