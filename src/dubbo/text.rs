//! Plain-text tables of the Dubbo view (what `zkr dubbo` prints without `--json`).
//!
//! Pure: model in, `String` out. Unset group/version print as `-`; times are UTC.

use super::model::{ConfigView, Instance, Overview, Registration};

/// Shown for an unset value (no group, no version, no session: a persistent node).
pub const UNSET: &str = "-";

/// Columns padded to the widest cell, two spaces apart; the last column is not padded.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let header: Vec<String> = headers.iter().map(|h| h.to_string()).collect();
    for row in std::iter::once(&header).chain(rows) {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i > 0 {
                line.push_str("  ");
            }
            line.push_str(cell);
            if i + 1 < row.len() {
                let pad = widths.get(i).copied().unwrap_or(0).saturating_sub(cell.chars().count());
                line.extend(std::iter::repeat_n(' ', pad));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Milliseconds since the epoch as `2023-11-14T22:13:20Z` (UTC, whole seconds).
pub fn utc(millis: Option<i64>) -> String {
    match millis.map(jiff::Timestamp::from_millisecond) {
        Some(Ok(t)) => t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
        _ => UNSET.to_string(),
    }
}

fn opt(v: &Option<String>) -> String {
    v.clone().unwrap_or_else(|| UNSET.to_string())
}

fn list(v: &[String]) -> String {
    if v.is_empty() {
        UNSET.to_string()
    } else {
        v.join(",")
    }
}

pub fn services(o: &Overview) -> String {
    let rows: Vec<Vec<String>> = o
        .services
        .iter()
        .map(|s| {
            vec![
                s.interface.clone(),
                opt(&s.group),
                opt(&s.version),
                s.providers.to_string(),
                s.consumers.to_string(),
                list(&s.provider_applications),
            ]
        })
        .collect();
    let mut out = format!("services under {} ({}):\n", o.root, o.services.len());
    out.push_str(&table(&["INTERFACE", "GROUP", "VERSION", "PROVIDERS", "CONSUMERS", "PROVIDER APPS"], &rows));
    let orphans: Vec<_> = o.services.iter().filter(|s| s.providers == 0).collect();
    out.push_str(&format!("\nservices with no providers ({}):\n", orphans.len()));
    for s in orphans {
        let by = if s.consumer_applications.is_empty() {
            String::new()
        } else {
            format!("  (consumed by {})", s.consumer_applications.join(","))
        };
        out.push_str(&format!("  {}{by}\n", s.service));
    }
    out.push('\n');
    out.push_str(&instances(&o.instances));
    out
}

pub fn instances(list_: &[Instance]) -> String {
    let rows: Vec<Vec<String>> = list_
        .iter()
        .map(|i| {
            let address = match (i.error.as_ref(), i.port) {
                (Some(e), _) => format!("({e})"),
                (None, Some(p)) => format!("{}:{p}", i.address),
                (None, None) => i.address.clone(),
            };
            vec![
                i.application.clone(),
                i.id.clone(),
                address,
                list(&i.endpoints),
                opt(&i.revision),
                utc(i.registered),
                opt(&i.session),
            ]
        })
        .collect();
    let mut out = format!("application instances ({}):\n", list_.len());
    out.push_str(&table(
        &["APPLICATION", "INSTANCE", "ADDRESS", "ENDPOINTS", "REVISION", "REGISTERED", "SESSION"],
        &rows,
    ));
    out
}

/// The providers (with protocol and weight) or consumers of one interface.
pub fn registrations(interface: &str, what: &str, regs: &[Registration], providers: bool) -> String {
    let mut rows = Vec::new();
    let mut errors = Vec::new();
    for r in regs {
        if let Some(e) = &r.error {
            errors.push(format!("  {} ({e})\n", r.url));
            continue;
        }
        let mut row = if providers { vec![r.protocol.clone()] } else { Vec::new() };
        row.extend([r.address.clone(), opt(&r.application), opt(&r.group), opt(&r.version), list(&r.methods)]);
        if providers {
            row.push(r.weight.to_string());
        }
        row.push(utc(r.timestamp));
        row.push(opt(&r.session));
        rows.push(row);
    }
    let mut headers = if providers { vec!["PROTOCOL"] } else { Vec::new() };
    headers.extend(["ADDRESS", "APPLICATION", "GROUP", "VERSION", "METHODS"]);
    if providers {
        headers.push("WEIGHT");
    }
    headers.extend(["TIMESTAMP", "SESSION"]);
    let mut out = format!("{what} of {interface} ({}):\n", rows.len());
    if !rows.is_empty() {
        out.push_str(&table(&headers, &rows));
    }
    if !errors.is_empty() {
        out.push_str(&format!("undecodable nodes ({}):\n", errors.len()));
        out.extend(errors);
    }
    out
}

pub fn config(c: &ConfigView) -> String {
    let mut out = format!("config centre ({} entries):\n", c.config.len());
    for e in &c.config {
        out.push_str(&format!("{}  ({} bytes)\n", e.path, e.bytes));
        for line in e.data.lines() {
            out.push_str(&format!("    {line}\n"));
        }
    }
    out.push_str(&format!("\noverride and route rules ({}):\n", c.rules.len()));
    if !c.rules.is_empty() {
        let rows: Vec<Vec<String>> = c
            .rules
            .iter()
            .map(|r| {
                let url = match &r.error {
                    Some(e) => format!("{} ({e})", r.url),
                    None => r.url.clone(),
                };
                vec![r.interface.clone(), r.category.clone(), url]
            })
            .collect();
        out.push_str(&table(&["INTERFACE", "CATEGORY", "URL"], &rows));
    }
    out.push_str(&format!("\nmetadata ({} entries):\n", c.metadata.len()));
    for e in &c.metadata {
        out.push_str(&format!("{}  ({} bytes)\n", e.path, e.bytes));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_align_and_trim() {
        let t = table(&["A", "BB"], &[vec!["xxx".into(), "y".into()], vec!["z".into(), "".into()]]);
        assert_eq!(t, "A    BB\nxxx  y\nz\n");
    }

    #[test]
    fn times_are_utc() {
        assert_eq!(utc(Some(1_700_000_000_000)), "2023-11-14T22:13:20Z");
        assert_eq!(utc(None), "-");
    }
}
