//! The server side of the SASL GSSAPI mechanism (RFC 4752) as Java's `GssKrb5Server`, which
//! ZooKeeper's `ZooKeeperSaslServer` wraps, runs it:
//! 1. every client token goes to `accept` until the context is established; each reply is the
//!    context's output token (the Kerberos AP-REP when the client asked for mutual auth);
//! 2. the client then sends an empty token and gets the wrapped 4-octet offer (at once, in
//!    the reply to the last context token, when there was no AP-REP to send): the security
//!    layers the server takes (only "none": ZooKeeper's server leaves `javax.security.sasl.qop`
//!    at its default `auth`) and its largest receive buffer;
//! 3. the client answers with a wrapped choice (a layer, its buffer size, an optional
//!    authorization id), and the exchange is complete with a null reply.
//!
//! The identity given is the authenticated principal, mapped by [`super::name`] as
//! ZooKeeper's `SaslServerCallbackHandler` maps it.

use super::ffi::{Accepted, GssError};

/// What the state machine needs from a GSS-API context (the real one is `ffi::Context`).
pub trait SecurityContext {
    fn accept(&mut self, token: &[u8]) -> Result<Accepted, GssError>;
    fn wrap(&mut self, data: &[u8]) -> Result<Vec<u8>, GssError>;
    fn unwrap(&mut self, data: &[u8]) -> Result<Vec<u8>, GssError>;
}

impl SecurityContext for super::ffi::Context {
    fn accept(&mut self, token: &[u8]) -> Result<Accepted, GssError> {
        super::ffi::Context::accept(self, token)
    }
    fn wrap(&mut self, data: &[u8]) -> Result<Vec<u8>, GssError> {
        super::ffi::Context::wrap(self, data)
    }
    fn unwrap(&mut self, data: &[u8]) -> Result<Vec<u8>, GssError> {
        super::ffi::Context::unwrap(self, data)
    }
}

/// The security layer "none" (RFC 4752 §3.3), the only one offered.
const LAYER_NONE: u8 = 1;
/// The receive buffer offered, Java's `GssKrb5Server` default (65536).
const MAX_BUFFER: u32 = 65536;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum GssapiError {
    #[error(transparent)]
    Gss(#[from] GssError),
    #[error("the client sent {0} bytes where the mechanism expects an empty response")]
    NotEmpty(usize),
    #[error("the client's security layer choice is {0} bytes, shorter than 4")]
    ShortChoice(usize),
    #[error("the client chose security layer {0:#04x}, which this server does not offer")]
    Layer(u8),
    #[error("the exchange is already complete")]
    Complete,
}

enum Stage {
    Accepting,
    /// Established: the client's empty response is awaited; `peer` is its principal.
    Offer {
        peer: String,
    },
    /// The offer was sent; the client's wrapped choice is awaited.
    Choice {
        peer: String,
    },
    Done,
}

/// One reply of the exchange.
#[derive(Debug, PartialEq, Eq)]
pub struct Step {
    /// The token for the client; `None` is the null token that ends the exchange.
    pub token: Option<Vec<u8>>,
    /// Set on the last step: the authenticated principal and the authorization id the client
    /// asked for (the principal itself when it sent none).
    pub authenticated: Option<(String, String)>,
}

pub struct GssapiServer<C> {
    ctx: C,
    stage: Stage,
}

impl<C: SecurityContext> GssapiServer<C> {
    pub fn new(ctx: C) -> Self {
        GssapiServer { ctx, stage: Stage::Accepting }
    }

    pub fn step(&mut self, token: &[u8]) -> Result<Step, GssapiError> {
        match std::mem::replace(&mut self.stage, Stage::Done) {
            Stage::Accepting => {
                let a = self.ctx.accept(token)?;
                match a.peer {
                    // Established with nothing to send (the client did not ask for mutual
                    // auth): the offer goes at once, as GssKrb5Server sends it.
                    Some(peer) if a.token.is_empty() => self.offer(peer),
                    Some(peer) => {
                        self.stage = Stage::Offer { peer };
                        Ok(Step { token: Some(a.token), authenticated: None })
                    }
                    None => {
                        self.stage = Stage::Accepting;
                        Ok(Step { token: Some(a.token), authenticated: None })
                    }
                }
            }
            Stage::Offer { peer } => {
                if !token.is_empty() {
                    return Err(GssapiError::NotEmpty(token.len()));
                }
                self.offer(peer)
            }
            Stage::Choice { peer } => {
                let choice = self.ctx.unwrap(token)?;
                if choice.len() < 4 {
                    return Err(GssapiError::ShortChoice(choice.len()));
                }
                if choice[0] & LAYER_NONE == 0 {
                    return Err(GssapiError::Layer(choice[0]));
                }
                let authz = match &choice[4..] {
                    [] => peer.clone(),
                    id => String::from_utf8_lossy(id).into_owned(),
                };
                Ok(Step { token: None, authenticated: Some((peer, authz)) })
            }
            Stage::Done => Err(GssapiError::Complete),
        }
    }
}

impl<C: SecurityContext> GssapiServer<C> {
    /// The wrapped security-layer offer: "none" only, and the receive buffer.
    fn offer(&mut self, peer: String) -> Result<Step, GssapiError> {
        let b = MAX_BUFFER.to_be_bytes();
        let wrapped = self.ctx.wrap(&[LAYER_NONE, b[1], b[2], b[3]])?;
        self.stage = Stage::Choice { peer };
        Ok(Step { token: Some(wrapped), authenticated: None })
    }
}

/// What the client side needs from a GSS-API context (the real one is `ffi::ClientContext`).
pub trait InitiatorContext {
    /// (token to send, established)
    fn init(&mut self, token: &[u8]) -> Result<(Vec<u8>, bool), GssError>;
    fn wrap(&mut self, data: &[u8]) -> Result<Vec<u8>, GssError>;
    fn unwrap(&mut self, data: &[u8]) -> Result<Vec<u8>, GssError>;
}

impl InitiatorContext for super::ffi::ClientContext {
    fn init(&mut self, token: &[u8]) -> Result<(Vec<u8>, bool), GssError> {
        super::ffi::ClientContext::init(self, token)
    }
    fn wrap(&mut self, data: &[u8]) -> Result<Vec<u8>, GssError> {
        super::ffi::ClientContext::wrap(self, data)
    }
    fn unwrap(&mut self, data: &[u8]) -> Result<Vec<u8>, GssError> {
        super::ffi::ClientContext::unwrap(self, data)
    }
}

/// The client side of RFC 4752 (a zkr member logging in to another, as Java's
/// `GssKrb5Client` does for ZooKeeper's `SaslQuorumAuthLearner`): context tokens until the
/// context is established (an empty response when the last one produced nothing), then the
/// server's offer answered with "no security layer", a zero receive buffer and the
/// authorization id (its own principal: ZooKeeper's quorum server requires the two equal).
pub struct GssapiClient<C> {
    ctx: C,
    authz: String,
    established: bool,
    done: bool,
}

impl<C: InitiatorContext> GssapiClient<C> {
    pub fn new(ctx: C, authz: &str) -> Self {
        GssapiClient { ctx, authz: authz.to_owned(), established: false, done: false }
    }

    /// The initial response (the first context token).
    pub fn start(&mut self) -> Result<Vec<u8>, GssapiError> {
        self.respond(&[])
    }

    /// The response to a server token.
    pub fn respond(&mut self, token: &[u8]) -> Result<Vec<u8>, GssapiError> {
        if self.done {
            return Err(GssapiError::Complete);
        }
        if !self.established {
            let (out, established) = self.ctx.init(token)?;
            self.established = established;
            return Ok(out);
        }
        let offer = self.ctx.unwrap(token)?;
        if offer.len() < 4 {
            return Err(GssapiError::ShortChoice(offer.len()));
        }
        if offer[0] & LAYER_NONE == 0 {
            return Err(GssapiError::Layer(offer[0]));
        }
        let mut choice = vec![LAYER_NONE, 0, 0, 0];
        choice.extend_from_slice(self.authz.as_bytes());
        self.done = true;
        Ok(self.ctx.wrap(&choice)?)
    }

    /// The client sent its choice: the exchange is complete on its side.
    pub fn is_complete(&self) -> bool {
        self.done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A context that establishes after `rounds` tokens and wraps by prefixing "W".
    struct Fake {
        rounds: usize,
    }
    impl SecurityContext for Fake {
        fn accept(&mut self, token: &[u8]) -> Result<Accepted, GssError> {
            if token == b"bad" {
                return Err(GssError::Call { call: "gss_accept_sec_context", message: "bad token".into() });
            }
            self.rounds -= 1;
            let peer = (self.rounds == 0).then(|| "bob@ZKR.TEST".to_owned());
            let token = if token == b"no-mutual" { Vec::new() } else { b"rep".to_vec() };
            Ok(Accepted { token, peer })
        }
        fn wrap(&mut self, data: &[u8]) -> Result<Vec<u8>, GssError> {
            Ok([b"W", data].concat())
        }
        fn unwrap(&mut self, data: &[u8]) -> Result<Vec<u8>, GssError> {
            data.strip_prefix(b"W")
                .map(<[u8]>::to_vec)
                .ok_or(GssError::Call { call: "gss_unwrap", message: "bad MIC".into() })
        }
    }

    #[test]
    fn accept_offer_choice_complete() {
        let mut s = GssapiServer::new(Fake { rounds: 2 });
        assert_eq!(s.step(b"t1").unwrap(), Step { token: Some(b"rep".to_vec()), authenticated: None });
        assert_eq!(s.step(b"t2").unwrap().token, Some(b"rep".to_vec()));
        let offer = s.step(b"").unwrap().token.unwrap();
        assert_eq!(offer, b"W\x01\x01\x00\x00", "layer none, 65536 bytes");
        let done = s.step(b"W\x01\x00\x10\x00bob@ZKR.TEST").unwrap();
        assert_eq!(done.token, None);
        assert_eq!(done.authenticated, Some(("bob@ZKR.TEST".into(), "bob@ZKR.TEST".into())));
        assert_eq!(s.step(b""), Err(GssapiError::Complete));
    }

    #[test]
    fn without_mutual_auth_the_offer_comes_at_once() {
        let mut s = GssapiServer::new(Fake { rounds: 1 });
        assert_eq!(s.step(b"no-mutual").unwrap().token, Some(b"W\x01\x01\x00\x00".to_vec()));
        let done = s.step(b"W\x01\x00\x10\x00").unwrap();
        assert_eq!(done.authenticated, Some(("bob@ZKR.TEST".into(), "bob@ZKR.TEST".into())));
    }

    /// A client context whose tokens the Fake server takes: "ap-req" then, with mutual auth,
    /// the server's "rep" completes it.
    struct FakeClient {
        mutual: bool,
    }
    impl InitiatorContext for FakeClient {
        fn init(&mut self, token: &[u8]) -> Result<(Vec<u8>, bool), GssError> {
            match token {
                [] if self.mutual => Ok((b"t".to_vec(), false)),
                [] => Ok((b"no-mutual".to_vec(), true)),
                b"rep" => Ok((Vec::new(), true)),
                _ => Err(GssError::Call { call: "gss_init_sec_context", message: "bad".into() }),
            }
        }
        fn wrap(&mut self, data: &[u8]) -> Result<Vec<u8>, GssError> {
            Ok([b"W", data].concat())
        }
        fn unwrap(&mut self, data: &[u8]) -> Result<Vec<u8>, GssError> {
            Ok(data.strip_prefix(b"W").unwrap_or(data).to_vec())
        }
    }

    #[test]
    fn client_and_server_agree_with_and_without_mutual_auth() {
        for mutual in [true, false] {
            let mut c = GssapiClient::new(FakeClient { mutual }, "zkquorum/h@R");
            let mut s = GssapiServer::new(Fake { rounds: 1 });
            let mut token = c.start().unwrap();
            let id = loop {
                let step = s.step(&token).unwrap();
                if let Some(id) = step.authenticated {
                    assert_eq!(step.token, None);
                    break id;
                }
                token = c.respond(&step.token.unwrap()).unwrap();
            };
            assert!(c.is_complete());
            assert_eq!(id, ("bob@ZKR.TEST".to_owned(), "zkquorum/h@R".to_owned()), "mutual {mutual}");
        }
    }

    #[test]
    fn no_authorization_id_means_the_principal() {
        let mut s = GssapiServer::new(Fake { rounds: 1 });
        s.step(b"t").unwrap();
        s.step(b"").unwrap();
        let done = s.step(b"W\x01\x00\x00\x00").unwrap();
        assert_eq!(done.authenticated, Some(("bob@ZKR.TEST".into(), "bob@ZKR.TEST".into())));
    }

    #[test]
    fn bad_input_is_an_error_at_each_stage() {
        let mut s = GssapiServer::new(Fake { rounds: 1 });
        assert!(matches!(s.step(b"bad"), Err(GssapiError::Gss(_))));
        let mut s = GssapiServer::new(Fake { rounds: 1 });
        s.step(b"t").unwrap();
        assert_eq!(s.step(b"x"), Err(GssapiError::NotEmpty(1)));
        let mut s = GssapiServer::new(Fake { rounds: 1 });
        s.step(b"t").unwrap();
        s.step(b"").unwrap();
        assert_eq!(s.step(b"W\x01\x00"), Err(GssapiError::ShortChoice(2)));
        let mut s = GssapiServer::new(Fake { rounds: 1 });
        s.step(b"t").unwrap();
        s.step(b"").unwrap();
        assert_eq!(s.step(b"W\x04\x00\x00\x00"), Err(GssapiError::Layer(4)));
        let mut s = GssapiServer::new(Fake { rounds: 1 });
        s.step(b"t").unwrap();
        s.step(b"").unwrap();
        assert!(matches!(s.step(b"X\x01\x00\x00\x00"), Err(GssapiError::Gss(_))));
    }
}
