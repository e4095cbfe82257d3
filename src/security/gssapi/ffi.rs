//! The system's GSS-API (RFC 2744's C interface), loaded at run time from MIT Kerberos'
//! `libgssapi_krb5.so.2` with `libloading`.
//!
//! Why this and not a crate: `libgssapi` (the maintained binding) generates its bindings with
//! bindgen at build time, so building zkr would need libclang and the krb5 headers, and the
//! README's `cargo run --release -- serve` would fail on a fresh machine; the pure-Rust
//! Kerberos stacks (sspi-rs) are built for Windows-style clients and do not accept contexts
//! with a keytab as a ZooKeeper server must. MIT's library is what every Kerberized ZooKeeper
//! host already has (Java's own Kerberos reads the same krb5.conf and keytabs), its C interface
//! has been fixed since 2000, and only the dozen calls below are used. Loading it when the
//! first Kerberos login is configured keeps the binary free of a link-time dependency: a
//! server without Kerberos never touches it, and one with Kerberos on a host without the
//! library stops at startup naming the package to install.
//!
//! The only module of zkr with unsafe code: each call states what makes it sound.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_void, CString};
use std::sync::OnceLock;

use libloading::Library;

type Minor = u32;
type Major = u32;

/// `gss_buffer_desc`.
#[repr(C)]
struct Buffer {
    length: usize,
    value: *mut c_void,
}

impl Buffer {
    fn empty() -> Buffer {
        Buffer { length: 0, value: std::ptr::null_mut() }
    }
    /// A buffer that borrows `bytes` (the library only reads input buffers).
    fn of(bytes: &[u8]) -> Buffer {
        Buffer { length: bytes.len(), value: bytes.as_ptr() as *mut c_void }
    }
}

/// `gss_OID_desc`.
#[repr(C)]
struct Oid {
    length: u32,
    elements: *mut c_void,
}

/// `gss_key_value_element_desc` / `gss_key_value_set_desc` (MIT's credential store extension).
#[repr(C)]
struct KeyValue {
    key: *const c_char,
    value: *const c_char,
}
#[repr(C)]
struct KeyValueSet {
    count: u32,
    elements: *const KeyValue,
}

type Name = *mut c_void;
type Ctx = *mut c_void;
type Cred = *mut c_void;

/// GSS_KRB5_NT_PRINCIPAL_NAME, 1.2.840.113554.1.2.2.1: a name written `service/host@REALM`.
const NT_KRB5_PRINCIPAL: [u8; 10] = [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x02, 0x01];
const GSS_C_INITIATE: c_int = 1;
const GSS_C_ACCEPT: c_int = 2;
/// GSS_C_MUTUAL_FLAG | GSS_C_INTEG_FLAG: the server proves itself too, and wrap tokens carry a MIC.
const INIT_FLAGS: u32 = 2 | 32;
const GSS_C_GSS_CODE: c_int = 1;
const GSS_C_MECH_CODE: c_int = 2;
const GSS_S_CONTINUE_NEEDED: u32 = 1;
const GSS_C_INDEFINITE: u32 = 0xffff_ffff;

fn is_error(major: Major) -> bool {
    major & 0xffff_0000 != 0
}

struct Api {
    _lib: Library,
    import_name: unsafe extern "C" fn(*mut Minor, *mut Buffer, *mut Oid, *mut Name) -> Major,
    release_name: unsafe extern "C" fn(*mut Minor, *mut Name) -> Major,
    display_name: unsafe extern "C" fn(*mut Minor, Name, *mut Buffer, *mut *mut Oid) -> Major,
    acquire_cred_from: unsafe extern "C" fn(
        *mut Minor,
        Name,
        u32,
        *mut c_void,
        c_int,
        *const KeyValueSet,
        *mut Cred,
        *mut *mut c_void,
        *mut u32,
    ) -> Major,
    release_cred: unsafe extern "C" fn(*mut Minor, *mut Cred) -> Major,
    accept_sec_context: unsafe extern "C" fn(
        *mut Minor,
        *mut Ctx,
        Cred,
        *mut Buffer,
        *mut c_void,
        *mut Name,
        *mut *mut Oid,
        *mut Buffer,
        *mut u32,
        *mut u32,
        *mut Cred,
    ) -> Major,
    init_sec_context: unsafe extern "C" fn(
        *mut Minor,
        Cred,
        *mut Ctx,
        Name,
        *mut Oid,
        u32,
        u32,
        *mut c_void,
        *mut Buffer,
        *mut *mut Oid,
        *mut Buffer,
        *mut u32,
        *mut u32,
    ) -> Major,
    delete_sec_context: unsafe extern "C" fn(*mut Minor, *mut Ctx, *mut Buffer) -> Major,
    wrap: unsafe extern "C" fn(*mut Minor, Ctx, c_int, u32, *mut Buffer, *mut c_int, *mut Buffer) -> Major,
    unwrap: unsafe extern "C" fn(*mut Minor, Ctx, *mut Buffer, *mut Buffer, *mut c_int, *mut u32) -> Major,
    release_buffer: unsafe extern "C" fn(*mut Minor, *mut Buffer) -> Major,
    display_status: unsafe extern "C" fn(*mut Minor, u32, c_int, *mut Oid, *mut u32, *mut Buffer) -> Major,
}

/// The library names tried, newest soname first.
const LIBRARIES: [&str; 2] = ["libgssapi_krb5.so.2", "libgssapi_krb5.so"];

/// Loads the library once per process.
fn api() -> Result<&'static Api, GssError> {
    static API: OnceLock<Result<Api, String>> = OnceLock::new();
    API.get_or_init(load).as_ref().map_err(|e| GssError::Library(e.clone()))
}

fn load() -> Result<Api, String> {
    let mut last = String::new();
    for name in LIBRARIES {
        // SAFETY: loading MIT's GSS-API runs its (side-effect free) library constructors.
        match unsafe { Library::new(name) } {
            Ok(lib) => return symbols(lib).map_err(|e| format!("{name}: {e}")),
            Err(e) => last = e.to_string(),
        }
    }
    Err(format!(
        "MIT Kerberos' GSS-API library is not installed ({last}); install it (Debian/Ubuntu: apt-get install libgssapi-krb5-2, RHEL: krb5-libs)"
    ))
}

fn symbols(lib: Library) -> Result<Api, libloading::Error> {
    // SAFETY: each symbol is declared with its RFC 2744 (and MIT gssapi_ext.h) C signature.
    unsafe {
        Ok(Api {
            import_name: *lib.get(b"gss_import_name\0")?,
            release_name: *lib.get(b"gss_release_name\0")?,
            display_name: *lib.get(b"gss_display_name\0")?,
            acquire_cred_from: *lib.get(b"gss_acquire_cred_from\0")?,
            release_cred: *lib.get(b"gss_release_cred\0")?,
            accept_sec_context: *lib.get(b"gss_accept_sec_context\0")?,
            init_sec_context: *lib.get(b"gss_init_sec_context\0")?,
            delete_sec_context: *lib.get(b"gss_delete_sec_context\0")?,
            wrap: *lib.get(b"gss_wrap\0")?,
            unwrap: *lib.get(b"gss_unwrap\0")?,
            release_buffer: *lib.get(b"gss_release_buffer\0")?,
            display_status: *lib.get(b"gss_display_status\0")?,
            _lib: lib,
        })
    }
}

#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum GssError {
    #[error("{0}")]
    Library(String),
    /// A GSS-API call failed; the text is the library's own (`gss_display_status`).
    #[error("{call}: {message}")]
    Call { call: &'static str, message: String },
    #[error("{0}")]
    Input(String),
}

/// The major and minor status of a failed call, as the library words them.
fn status(api: &Api, call: &'static str, major: Major, minor: Minor) -> GssError {
    let mut parts = Vec::new();
    for (code, kind) in [(major, GSS_C_GSS_CODE), (minor, GSS_C_MECH_CODE)] {
        if code == 0 {
            continue;
        }
        let mut more: u32 = 0;
        loop {
            let (mut m, mut buf) = (0, Buffer::empty());
            // SAFETY: out-parameters are valid; the buffer is released below.
            let r = unsafe { (api.display_status)(&mut m, code, kind, std::ptr::null_mut(), &mut more, &mut buf) };
            if is_error(r) {
                break;
            }
            parts.push(take(api, &mut buf));
            if more == 0 {
                break;
            }
        }
    }
    let message = parts.into_iter().filter(|p| !p.is_empty()).collect::<Vec<_>>().join(": ");
    GssError::Call { call, message }
}

/// Copies a library-owned buffer and releases it.
fn take_bytes(api: &Api, buf: &mut Buffer) -> Vec<u8> {
    let out = if buf.value.is_null() || buf.length == 0 {
        Vec::new()
    } else {
        // SAFETY: the library filled `length` bytes at `value`.
        unsafe { std::slice::from_raw_parts(buf.value as *const u8, buf.length) }.to_vec()
    };
    let mut m = 0;
    // SAFETY: the buffer was allocated by the library.
    unsafe { (api.release_buffer)(&mut m, buf) };
    out
}

fn take(api: &Api, buf: &mut Buffer) -> String {
    String::from_utf8_lossy(&take_bytes(api, buf)).into_owned()
}

/// A server's accepting credential: its principal's keys from a keytab.
pub struct Acceptor {
    api: &'static Api,
    cred: Cred,
    principal: String,
}

// SAFETY: MIT's credential handles are locked internally and may be used from any thread.
unsafe impl Send for Acceptor {}
unsafe impl Sync for Acceptor {}

impl std::fmt::Debug for Acceptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Acceptor").field("principal", &self.principal).finish()
    }
}

impl Acceptor {
    /// The credential to accept contexts as `principal` (`service/host@REALM`) with the keys in
    /// `keytab`. Fails when the library is missing or the keytab lacks the principal; reading
    /// the keytab needs no KDC. MIT reads the keytab again on each login, so a keytab rotated
    /// on disk is used without a restart.
    pub fn new(principal: &str, keytab: &std::path::Path) -> Result<Acceptor, GssError> {
        let api = api()?;
        let cred = acquire(api, principal, GSS_C_ACCEPT, &[("keytab", keytab.as_os_str().as_encoded_bytes())])?;
        Ok(Acceptor { api, cred, principal: principal.to_owned() })
    }

    pub fn principal(&self) -> &str {
        &self.principal
    }

    /// A new context for one client's login.
    pub fn context(self: &std::sync::Arc<Self>) -> Context {
        Context { acceptor: self.clone(), ctx: std::ptr::null_mut() }
    }
}

impl Drop for Acceptor {
    fn drop(&mut self) {
        let mut m = 0;
        // SAFETY: the credential was acquired by this value and is released once.
        unsafe { (self.api.release_cred)(&mut m, &mut self.cred) };
    }
}

/// `gss_acquire_cred_from` for `principal` with a credential store (MIT's `keytab`,
/// `client_keytab`, `ccache` keys).
fn acquire(api: &'static Api, principal: &str, usage: c_int, store: &[(&str, &[u8])]) -> Result<Cred, GssError> {
    let name = import_name(api, principal)?;
    let mut owned = Vec::new();
    for (k, v) in store {
        let key = CString::new(*k).map_err(|e| GssError::Input(e.to_string()))?;
        let value = CString::new(*v).map_err(|_| GssError::Input(format!("{k} holds a NUL byte")))?;
        owned.push((key, value));
    }
    let elements: Vec<KeyValue> = owned.iter().map(|(k, v)| KeyValue { key: k.as_ptr(), value: v.as_ptr() }).collect();
    let set = KeyValueSet { count: elements.len() as u32, elements: elements.as_ptr() };
    let (mut minor, mut cred) = (0, std::ptr::null_mut());
    // SAFETY: all pointers are valid for the call (the strings live in `owned`); the name is
    // released when `name` drops.
    let major = unsafe {
        (api.acquire_cred_from)(
            &mut minor,
            name.0,
            GSS_C_INDEFINITE,
            std::ptr::null_mut(),
            usage,
            &set,
            &mut cred,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    };
    if is_error(major) {
        return Err(status(api, "gss_acquire_cred_from", major, minor));
    }
    Ok(cred)
}

/// A member's initiating credential: its principal's keys from a keytab, from which MIT gets
/// tickets from the KDC itself when it needs them (into a credential cache in memory).
pub struct Initiator {
    api: &'static Api,
    cred: Cred,
    principal: String,
}

// SAFETY: as for Acceptor.
unsafe impl Send for Initiator {}
unsafe impl Sync for Initiator {}

impl std::fmt::Debug for Initiator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Initiator").field("principal", &self.principal).finish()
    }
}

impl Initiator {
    pub fn new(principal: &str, keytab: &std::path::Path) -> Result<Initiator, GssError> {
        let api = api()?;
        static CACHES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = CACHES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let ccache = format!("MEMORY:zkr-{}-{n}", std::process::id());
        let store = [("client_keytab", keytab.as_os_str().as_encoded_bytes()), ("ccache", ccache.as_bytes())];
        let cred = acquire(api, principal, GSS_C_INITIATE, &store)?;
        Ok(Initiator { api, cred, principal: principal.to_owned() })
    }

    pub fn principal(&self) -> &str {
        &self.principal
    }

    /// A new context to log in to `target` (`service/host@REALM`).
    pub fn context(self: &std::sync::Arc<Self>, target: &str) -> Result<ClientContext, GssError> {
        let target = import_name(self.api, target)?;
        Ok(ClientContext { initiator: self.clone(), target, ctx: std::ptr::null_mut() })
    }
}

impl Drop for Initiator {
    fn drop(&mut self) {
        let mut m = 0;
        // SAFETY: the credential was acquired by this value and is released once.
        unsafe { (self.api.release_cred)(&mut m, &mut self.cred) };
    }
}

/// One login's security context on the initiating side.
pub struct ClientContext {
    initiator: std::sync::Arc<Initiator>,
    target: OwnedName,
    ctx: Ctx,
}

// SAFETY: as for Context.
unsafe impl Send for ClientContext {}

impl ClientContext {
    /// The next context token from the server's (empty at the start): (token to send,
    /// whether the context is established).
    pub fn init(&mut self, token: &[u8]) -> Result<(Vec<u8>, bool), GssError> {
        let api = self.initiator.api;
        let mut input = Buffer::of(token);
        let (mut minor, mut out) = (0, Buffer::empty());
        // SAFETY: all pointers are valid; the output buffer is released by take_bytes.
        let major = unsafe {
            (api.init_sec_context)(
                &mut minor,
                self.initiator.cred,
                &mut self.ctx,
                self.target.0,
                std::ptr::null_mut(),
                INIT_FLAGS,
                0,
                std::ptr::null_mut(),
                if token.is_empty() { std::ptr::null_mut() } else { &mut input },
                std::ptr::null_mut(),
                &mut out,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        };
        let bytes = take_bytes(api, &mut out);
        if is_error(major) {
            return Err(status(api, "gss_init_sec_context", major, minor));
        }
        Ok((bytes, major & GSS_S_CONTINUE_NEEDED == 0))
    }

    pub fn wrap(&mut self, data: &[u8]) -> Result<Vec<u8>, GssError> {
        wrap_with(self.initiator.api, self.ctx, data)
    }

    pub fn unwrap(&mut self, data: &[u8]) -> Result<Vec<u8>, GssError> {
        unwrap_with(self.initiator.api, self.ctx, data)
    }
}

impl Drop for ClientContext {
    fn drop(&mut self) {
        if !self.ctx.is_null() {
            let mut m = 0;
            // SAFETY: the context was made by init and is deleted once.
            unsafe { (self.initiator.api.delete_sec_context)(&mut m, &mut self.ctx, std::ptr::null_mut()) };
        }
    }
}

fn wrap_with(api: &Api, ctx: Ctx, data: &[u8]) -> Result<Vec<u8>, GssError> {
    let (mut minor, mut input, mut out) = (0, Buffer::of(data), Buffer::empty());
    // SAFETY: the context is established; the output buffer is released by take_bytes.
    let major = unsafe { (api.wrap)(&mut minor, ctx, 0, 0, &mut input, std::ptr::null_mut(), &mut out) };
    let bytes = take_bytes(api, &mut out);
    if is_error(major) {
        return Err(status(api, "gss_wrap", major, minor));
    }
    Ok(bytes)
}

fn unwrap_with(api: &Api, ctx: Ctx, data: &[u8]) -> Result<Vec<u8>, GssError> {
    let (mut minor, mut input, mut out) = (0, Buffer::of(data), Buffer::empty());
    // SAFETY: as in wrap_with.
    let major =
        unsafe { (api.unwrap)(&mut minor, ctx, &mut input, &mut out, std::ptr::null_mut(), std::ptr::null_mut()) };
    let bytes = take_bytes(api, &mut out);
    if is_error(major) {
        return Err(status(api, "gss_unwrap", major, minor));
    }
    Ok(bytes)
}

/// An imported name, released on drop.
struct OwnedName(Name, &'static Api);

impl Drop for OwnedName {
    fn drop(&mut self) {
        if !self.0.is_null() {
            let mut m = 0;
            // SAFETY: the name was made by the library and is released once.
            unsafe { (self.1.release_name)(&mut m, &mut self.0) };
        }
    }
}

fn import_name(api: &'static Api, principal: &str) -> Result<OwnedName, GssError> {
    let mut oid = Oid { length: NT_KRB5_PRINCIPAL.len() as u32, elements: NT_KRB5_PRINCIPAL.as_ptr() as *mut c_void };
    let mut buf = Buffer::of(principal.as_bytes());
    let (mut minor, mut name) = (0, std::ptr::null_mut());
    // SAFETY: the buffer and OID outlive the call, which copies them.
    let major = unsafe { (api.import_name)(&mut minor, &mut buf, &mut oid, &mut name) };
    if is_error(major) {
        return Err(status(api, "gss_import_name", major, minor));
    }
    Ok(OwnedName(name, api))
}

/// What one accepted token gave.
#[derive(Debug, PartialEq, Eq)]
pub struct Accepted {
    /// The token to send back (may be empty).
    pub token: Vec<u8>,
    /// The client's principal, once the context is established.
    pub peer: Option<String>,
}

/// One client's security context on the accepting side.
pub struct Context {
    acceptor: std::sync::Arc<Acceptor>,
    ctx: Ctx,
}

// SAFETY: a context is used by one connection at a time; MIT contexts carry no thread affinity.
unsafe impl Send for Context {}

impl Context {
    pub fn accept(&mut self, token: &[u8]) -> Result<Accepted, GssError> {
        let api = self.acceptor.api;
        let mut input = Buffer::of(token);
        let (mut minor, mut src, mut out) = (0, std::ptr::null_mut(), Buffer::empty());
        // SAFETY: all out-parameters are valid; the output buffer and name are released here.
        let major = unsafe {
            (api.accept_sec_context)(
                &mut minor,
                &mut self.ctx,
                self.acceptor.cred,
                &mut input,
                std::ptr::null_mut(),
                &mut src,
                std::ptr::null_mut(),
                &mut out,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        };
        let src = OwnedName(src, api);
        let token = take_bytes(api, &mut out);
        if is_error(major) {
            return Err(status(api, "gss_accept_sec_context", major, minor));
        }
        if major & GSS_S_CONTINUE_NEEDED != 0 {
            return Ok(Accepted { token, peer: None });
        }
        let mut shown = Buffer::empty();
        // SAFETY: `src` is the established context's initiator name.
        let major = unsafe { (api.display_name)(&mut minor, src.0, &mut shown, std::ptr::null_mut()) };
        if is_error(major) {
            return Err(status(api, "gss_display_name", major, minor));
        }
        Ok(Accepted { token, peer: Some(take(api, &mut shown)) })
    }

    /// Integrity-protects `data` (no confidentiality), as the SASL layer's negotiation needs.
    pub fn wrap(&mut self, data: &[u8]) -> Result<Vec<u8>, GssError> {
        wrap_with(self.acceptor.api, self.ctx, data)
    }

    pub fn unwrap(&mut self, data: &[u8]) -> Result<Vec<u8>, GssError> {
        unwrap_with(self.acceptor.api, self.ctx, data)
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        if !self.ctx.is_null() {
            let mut m = 0;
            // SAFETY: the context was made by accept and is deleted once.
            unsafe { (self.acceptor.api.delete_sec_context)(&mut m, &mut self.ctx, std::ptr::null_mut()) };
        }
    }
}

/// The default realm of the krb5.conf the library reads (`KRB5_CONFIG`, else /etc/krb5.conf),
/// which ZooKeeper's `KerberosName` rules compare a client's realm with.
pub fn default_realm() -> Result<String, GssError> {
    static REALM: OnceLock<Result<String, GssError>> = OnceLock::new();
    REALM.get_or_init(load_default_realm).clone()
}

fn load_default_realm() -> Result<String, GssError> {
    type Init = unsafe extern "C" fn(*mut *mut c_void) -> i32;
    type Get = unsafe extern "C" fn(*mut c_void, *mut *mut c_char) -> i32;
    type Free = unsafe extern "C" fn(*mut c_void, *mut c_char);
    type FreeCtx = unsafe extern "C" fn(*mut c_void);
    let err = |e: String| GssError::Library(format!("libkrb5.so.3: {e}"));
    // SAFETY: MIT's libkrb5 is loaded and four of its calls are made with their C signatures;
    // the context and realm string are freed with the library's own calls.
    unsafe {
        let lib = Library::new("libkrb5.so.3").map_err(|e| err(e.to_string()))?;
        let init: libloading::Symbol<Init> = lib.get(b"krb5_init_context\0").map_err(|e| err(e.to_string()))?;
        let get: libloading::Symbol<Get> = lib.get(b"krb5_get_default_realm\0").map_err(|e| err(e.to_string()))?;
        let free: libloading::Symbol<Free> = lib.get(b"krb5_free_default_realm\0").map_err(|e| err(e.to_string()))?;
        let free_ctx: libloading::Symbol<FreeCtx> = lib.get(b"krb5_free_context\0").map_err(|e| err(e.to_string()))?;
        let mut ctx = std::ptr::null_mut();
        if init(&mut ctx) != 0 {
            return Err(err("krb5_init_context failed (is krb5.conf readable?)".into()));
        }
        let mut realm = std::ptr::null_mut();
        let r = get(ctx, &mut realm);
        let out = if r != 0 || realm.is_null() {
            Err(err("krb5.conf names no default_realm".into()))
        } else {
            let s = std::ffi::CStr::from_ptr(realm).to_string_lossy().into_owned();
            free(ctx, realm);
            Ok(s)
        };
        free_ctx(ctx);
        out
    }
}
