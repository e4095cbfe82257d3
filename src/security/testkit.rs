//! Test-only: key and trust stores made once per test run with the tools people make them with,
//! `openssl` (3.x) and Java's `keytool`, in a temporary directory. Tests that need them call
//! [`dir`], which is None (and says so) when either tool is missing.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The password of every store made here.
pub const PW: &str = "changeit";

fn run(dir: &Path, program: &str, args: &[&str]) {
    let out = Command::new(program).args(args).current_dir(dir).output().expect("run a certificate tool");
    assert!(out.status.success(), "{program} {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
}

fn sh(dir: &Path, script: &str) {
    run(dir, "sh", &["-c", script]);
}

fn make(dir: &Path) {
    let pass = format!("pass:{PW}");
    sh(
        dir,
        "printf 'basicConstraints=CA:FALSE\\nsubjectAltName=IP:127.0.0.1,DNS:localhost\\n' >leaf.ext
         for ca in ca ca2; do
           openssl req -x509 -newkey rsa:2048 -nodes -keyout $ca.key -out $ca.pem -days 2 -subj \"/CN=zkr test $ca\" \
             -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
         done
         for n in server:ca:localhost server2:ca2:second; do
           IFS=: read name ca cn <<EOF
$n
EOF
           openssl req -newkey rsa:2048 -nodes -keyout $name.key -out $name.csr -subj \"/CN=$cn\" 2>/dev/null
           openssl x509 -req -in $name.csr -CA $ca.pem -CAkey $ca.key -CAcreateserial -days 2 -extfile leaf.ext \
             -out $name.pem 2>/dev/null
         done
         # a version 1 certificate (no extensions), as openssl x509 -req makes without -extfile
         openssl req -newkey rsa:2048 -nodes -keyout v1.key -out v1.csr -subj /CN=v1-client 2>/dev/null
         openssl x509 -req -in v1.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -out v1.pem 2>/dev/null
         cat server.key server.pem >server-store.pem",
    );
    // PKCS12 as OpenSSL 3 writes it (PBES2, AES-256-CBC, PBKDF2-SHA256) and the legacy way
    // (RC2-40 certificates, 3DES key, SHA-1 MAC).
    run(
        dir,
        "openssl",
        &[
            "pkcs12",
            "-export",
            "-in",
            "server.pem",
            "-inkey",
            "server.key",
            "-name",
            "server",
            "-passout",
            &pass,
            "-out",
            "server.p12",
        ],
    );
    run(
        dir,
        "openssl",
        &[
            "pkcs12",
            "-export",
            "-legacy",
            "-in",
            "server.pem",
            "-inkey",
            "server.key",
            "-passout",
            &pass,
            "-out",
            "legacy.p12",
        ],
    );
    run(
        dir,
        "openssl",
        &[
            "pkcs12",
            "-export",
            "-in",
            "server2.pem",
            "-inkey",
            "server2.key",
            "-name",
            "server2",
            "-passout",
            &pass,
            "-out",
            "server2.p12",
        ],
    );
    run(
        dir,
        "openssl",
        &["pkcs12", "-export", "-nokeys", "-in", "ca.pem", "-passout", &pass, "-out", "openssl-trust.p12"],
    );
    run(
        dir,
        "openssl",
        &["pkcs8", "-topk8", "-v2", "aes-256-cbc", "-in", "server.key", "-passout", &pass, "-out", "server-enc.key"],
    );
    sh(dir, "cat server-enc.key server.pem >server-enc-store.pem");
    let keytool = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["-noprompt", "-storepass", PW]);
        run(dir, "keytool", &all);
    };
    // JKS (Sun key protection) converted from the PKCS12 file, a keytool-made EC key, trust stores.
    keytool(&[
        "-importkeystore",
        "-srckeystore",
        "server.p12",
        "-srcstoretype",
        "PKCS12",
        "-srcstorepass",
        PW,
        "-destkeystore",
        "server.jks",
        "-deststoretype",
        "JKS",
    ]);
    keytool(&[
        "-importkeystore",
        "-srckeystore",
        "server2.p12",
        "-srcstoretype",
        "PKCS12",
        "-srcstorepass",
        PW,
        "-destkeystore",
        "server2.jks",
        "-deststoretype",
        "JKS",
    ]);
    keytool(&[
        "-genkeypair",
        "-keyalg",
        "EC",
        "-groupname",
        "secp256r1",
        "-alias",
        "ec",
        "-dname",
        "CN=ec",
        "-keystore",
        "ec.jks",
        "-storetype",
        "JKS",
    ]);
    keytool(&[
        "-genkeypair",
        "-keyalg",
        "RSA",
        "-alias",
        "k",
        "-dname",
        "CN=keytool",
        "-keystore",
        "keytool.p12",
        "-storetype",
        "PKCS12",
    ]);
    keytool(&["-importcert", "-alias", "ca", "-file", "ca.pem", "-keystore", "trust.jks", "-storetype", "JKS"]);
    keytool(&["-importcert", "-alias", "ca", "-file", "ca.pem", "-keystore", "trust.p12", "-storetype", "PKCS12"]);
    run(
        dir,
        "keytool",
        &[
            "-genkeypair",
            "-keyalg",
            "RSA",
            "-alias",
            "own",
            "-dname",
            "CN=own",
            "-keystore",
            "keypass.jks",
            "-storetype",
            "JKS",
            "-storepass",
            PW,
            "-keypass",
            "another",
            "-noprompt",
        ],
    );
}

fn have(tool: &str) -> bool {
    Command::new("sh").args(["-c", &format!("command -v {tool}")]).output().is_ok_and(|o| o.status.success())
}

/// The directory with the stores, made on first use; None if openssl or keytool is missing.
pub fn dir() -> Option<&'static Path> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| {
        if !have("openssl") || !have("keytool") {
            eprintln!("skipped: these tests need openssl and keytool (Java) on PATH");
            return None;
        }
        // Earlier runs' directories (an hour old or more) go first: nothing else removes them.
        if let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) {
            for e in entries.flatten() {
                let old = e
                    .metadata()
                    .and_then(|m| m.modified())
                    .is_ok_and(|t| t.elapsed().is_ok_and(|age| age > std::time::Duration::from_secs(3600)));
                if old && e.file_name().to_string_lossy().starts_with("zkr-tls-test-") {
                    let _ = std::fs::remove_dir_all(e.path());
                }
            }
        }
        let dir = std::env::temp_dir().join(format!("zkr-tls-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("make a temporary directory");
        make(&dir);
        Some(dir)
    })
    .as_deref()
}
