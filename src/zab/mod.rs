//! Speaking ZAB to a running Apache ZooKeeper ensemble, as a learner that observes it (issue 24:
//! live migration). `packet` is the quorum port's framing, `election` finding the leader through
//! the voters' election ports, `learner` one connection to the
//! leader from registration through sync to following, `follow` that loop for as long as the
//! server runs (leader after leader), `digest` ZooKeeper's own tree digest, which every txn the
//! leader sends is checked against. `dial` opens the connections, plain or with quorum TLS
//! (`sslQuorum`); the quorum SASL login an ensemble may require is `security::quorum_sasl`.

pub mod dial;
pub mod digest;
pub mod election;
pub mod follow;
pub mod learner;
pub mod packet;

pub use learner::{Event, Learner, Options, Sender, SyncMode, Synced, ZabError};
