//! Whether ZooKeeper's participants are stopped, or only silent from here.
//!
//! A running participant accepts connections on its election port (and its quorum port when it
//! leads). One that was stopped on a host that is up leaves both ports closed: the host's kernel
//! answers a connection attempt at once with a reset ("connection refused"). One that is cut off
//! by a partition, or whose host is down, gives no answer at all: the attempt times out (or the
//! network says there is no route). Only the first is known to be stopped; the second may be a
//! ZooKeeper that still serves clients on the other side, which is why the observers wait a
//! session timeout and ask each other before they take over from one (`guard`).

use crate::raft::members::{join_host_port, Ensemble};
use std::collections::BTreeSet;
use std::io::ErrorKind;
use std::net::ToSocketAddrs;
use std::time::Duration;

/// How long a participant's port gets to accept a connection before it counts as silent.
pub const PROBE_TIMEOUT: Duration = Duration::from_millis(500);

/// What one participant's ports answered, taken together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// A port accepted a connection: ZooKeeper runs there.
    Answering,
    /// Every port refused at once: the host is up and nothing listens, the participant is stopped.
    Refused,
    /// A port gave no answer in time (or no route to it): stopped or cut off, nobody can tell
    /// from here.
    Unreachable,
}

/// One participant as the probe found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Participant {
    pub id: u64,
    /// `host:port, its quorum|election port` of the port that decided the answer.
    pub port: String,
    pub answer: Answer,
}

impl Participant {
    /// `server.1 (10.0.0.1:3888, its election port)`.
    pub fn describe(&self) -> String {
        format!("server.{} ({})", self.id, self.port)
    }
}

/// Every voter of `ens`, each with the answer of its ports. Blocking; every port is tried at
/// once, so a host that is down costs one `PROBE_TIMEOUT`, not one per port.
pub fn probe(ens: &Ensemble) -> Vec<Participant> {
    let ports: Vec<(u64, String, &str)> = ens
        .members
        .iter()
        .filter(|(_, s)| !s.observer)
        .flat_map(|(id, spec)| {
            [(*id, spec.peer_addr(), "quorum"), (*id, join_host_port(&spec.host, spec.election_port), "election")]
        })
        .collect();
    let answers: Vec<Answer> = std::thread::scope(|s| {
        let probes: Vec<_> = ports.iter().map(|(_, addr, _)| s.spawn(move || answer(addr))).collect();
        probes.into_iter().map(|p| p.join().unwrap_or(Answer::Unreachable)).collect()
    });
    let ids: BTreeSet<u64> = ports.iter().map(|(id, _, _)| *id).collect();
    ids.into_iter()
        .map(|id| {
            let mine: Vec<(&(u64, String, &str), Answer)> =
                ports.iter().zip(answers.iter().copied()).filter(|((p, _, _), _)| *p == id).collect();
            // Answering if any port answers; refused only if every port refused.
            let decided = mine
                .iter()
                .find(|(_, a)| *a == Answer::Answering)
                .or_else(|| mine.iter().find(|(_, a)| *a == Answer::Unreachable))
                .or_else(|| mine.first());
            match decided {
                Some(((_, addr, what), a)) => Participant { id, port: format!("{addr}, its {what} port"), answer: *a },
                None => Participant { id, port: String::new(), answer: Answer::Unreachable },
            }
        })
        .collect()
}

/// The participants that gave `answer`, described.
pub fn with_answer(found: &[Participant], answer: Answer) -> Vec<String> {
    found.iter().filter(|p| p.answer == answer).map(Participant::describe).collect()
}

fn answer(addr: &str) -> Answer {
    let Ok(addrs) = addr.to_socket_addrs() else { return Answer::Unreachable };
    let mut refused = false;
    for a in addrs {
        match std::net::TcpStream::connect_timeout(&a, PROBE_TIMEOUT) {
            Ok(_) => return Answer::Answering,
            Err(e) => refused |= classify(&e) == Answer::Refused,
        }
    }
    if refused {
        Answer::Refused
    } else {
        Answer::Unreachable
    }
}

/// A failed connection attempt: refused (a reset from a host that is up) or unreachable
/// (timed out, no route, anything else).
fn classify(e: &std::io::Error) -> Answer {
    match e.kind() {
        ErrorKind::ConnectionRefused => Answer::Refused,
        _ => Answer::Unreachable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raft::members::ServerSpec;

    fn spec(port: u16, observer: bool) -> ServerSpec {
        ServerSpec { host: "127.0.0.1".into(), peer_port: port, election_port: port, observer, client: None }
    }

    #[test]
    fn a_listening_port_answers_and_a_closed_one_refuses() {
        let open = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let open_port = open.local_addr().unwrap().port();
        let closed_port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let ens = Ensemble {
            my_id: 9,
            members: [(1, spec(open_port, false)), (2, spec(closed_port, false)), (9, spec(1, true))].into(),
            init_limit: 10,
            sync_limit: 5,
            reconfig_enabled: false,
            dynamic_file: None,
            config_file: None,
        };
        let found = probe(&ens);
        assert_eq!(found.len(), 2, "observers are not probed: {found:?}");
        assert_eq!(found[0].answer, Answer::Answering);
        assert_eq!(found[1].answer, Answer::Refused);
        assert_eq!(
            with_answer(&found, Answer::Refused),
            [format!("server.2 (127.0.0.1:{closed_port}, its quorum port)")]
        );
    }

    #[test]
    fn errors_other_than_a_refusal_leave_it_unknown() {
        assert_eq!(classify(&std::io::Error::from(ErrorKind::ConnectionRefused)), Answer::Refused);
        assert_eq!(classify(&std::io::Error::from(ErrorKind::TimedOut)), Answer::Unreachable);
        assert_eq!(classify(&std::io::Error::from(ErrorKind::HostUnreachable)), Answer::Unreachable);
        assert_eq!(answer("no-such-host.invalid:1"), Answer::Unreachable);
    }
}
