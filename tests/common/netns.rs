//! A network for a test: a bridge in the root namespace with `<subnet>.1`, and one network
//! namespace per host, each with its own address on a veth into the bridge (as the fault
//! harness in tests/faults builds its network). Processes started in a host's namespace
//! (`ip netns exec`), the others, and the test in the root namespace reach each other through
//! the bridge. A partition is a set of iptables DROP rules inside a host's namespace, which
//! touch nothing outside it. Dropping the `TestNet` kills what still runs in its namespaces and
//! deletes them and the bridge, also when the test panics; what an earlier run left behind (its
//! process gone) is deleted on the next start. Needs root, `ip` and `iptables`.

use std::process::Command;

/// Everything made here is named `zka<pid>n<k>…`, so leftovers of a run are known by the pid.
const PREFIX: &str = "zka";

pub struct TestNet {
    /// `zka<pid>n<k>`: the bridge's name, and the start of every other name.
    name: String,
    /// `10.214.N`: the bridge's subnet; the root namespace has `.1`.
    subnet: String,
    hosts: Vec<u8>,
}

fn sh(args: &[&str]) -> Result<String, String> {
    let out = Command::new(args[0]).args(&args[1..]).output().map_err(|e| format!("{}: {e}", args[0]))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!("{}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
    }
}

fn run(line: &str) -> Result<String, String> {
    sh(&line.split_whitespace().collect::<Vec<_>>())
}

impl TestNet {
    /// The bridge and one namespace for each of `hosts` (the last octets of their addresses).
    pub fn create(hosts: &[u8]) -> TestNet {
        remove_leftovers();
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = format!("{PREFIX}{}n{n}", std::process::id());
        let subnet = free_subnet();
        // Dropped (everything made so far removed) if a step fails.
        let net = TestNet { name: name.clone(), subnet: subnet.clone(), hosts: hosts.to_vec() };
        let mut steps = vec![
            format!("ip link add {name} type bridge"),
            format!("ip addr add {subnet}.1/24 dev {name}"),
            format!("ip link set {name} up"),
        ];
        for h in hosts {
            let (ns, host_end, ns_end) = (net.ns(*h), format!("{name}h{h}"), format!("{name}p{h}"));
            steps.extend([
                format!("ip netns add {ns}"),
                format!("ip link add {host_end} type veth peer name {ns_end}"),
                format!("ip link set {host_end} master {name}"),
                format!("ip link set {host_end} up"),
                format!("ip link set {ns_end} netns {ns}"),
                format!("ip -n {ns} link set lo up"),
                format!("ip -n {ns} addr add {subnet}.{h}/24 dev {ns_end}"),
                format!("ip -n {ns} link set {ns_end} up"),
            ]);
        }
        for step in steps {
            run(&step).unwrap_or_else(|e| panic!("setting up the test network: {e}"));
        }
        net
    }

    /// The address of host `last` (`1`: the root namespace's, on the bridge).
    pub fn addr(&self, last: u8) -> String {
        format!("{}.{last}", self.subnet)
    }

    /// The namespace of host `last`.
    pub fn ns(&self, last: u8) -> String {
        format!("{}m{last}", self.name)
    }

    /// Inside host `last`'s namespace: nothing passes between it and the TCP `ports` of `to`,
    /// either way.
    pub fn cut(&self, last: u8, to: &str, ports: &[u16]) {
        let list = ports.iter().map(u16::to_string).collect::<Vec<_>>().join(",");
        let ns = self.ns(last);
        for rule in [
            format!("OUTPUT -d {to} -p tcp -m multiport --dports {list}"),
            format!("INPUT -s {to} -p tcp -m multiport --sports {list}"),
        ] {
            run(&format!("ip netns exec {ns} iptables -A {rule} -j DROP")).unwrap_or_else(|e| panic!("partition: {e}"));
        }
    }

    /// Every rule in every namespace gone: the partition heals.
    pub fn heal(&self) {
        for h in &self.hosts {
            run(&format!("ip netns exec {} iptables -F", self.ns(*h))).unwrap_or_else(|e| panic!("heal: {e}"));
        }
    }
}

impl Drop for TestNet {
    fn drop(&mut self) {
        remove(&self.name);
    }
}

/// Kills what runs in the namespaces named `<name>…`, deletes them (their veths go with them)
/// and whatever link is left with that name.
fn remove(name: &str) {
    let list = sh(&["ip", "netns", "list"]).unwrap_or_default();
    for ns in list.lines().filter_map(|l| l.split_whitespace().next()).filter(|n| n.starts_with(name)) {
        for _ in 0..20 {
            let pids = sh(&["ip", "netns", "pids", ns]).unwrap_or_default();
            if pids.trim().is_empty() {
                break;
            }
            for p in pids.split_whitespace() {
                let _ = sh(&["kill", "-9", p]);
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let _ = sh(&["ip", "netns", "del", ns]);
    }
    let links = sh(&["ip", "-o", "link", "show"]).unwrap_or_default();
    for link in links.lines().filter_map(|l| l.split_whitespace().nth(1)) {
        let link = link.trim_end_matches(':').split('@').next().unwrap_or_default();
        if link.starts_with(name) {
            let _ = sh(&["ip", "link", "del", link]);
        }
    }
}

/// What earlier runs whose process is gone left behind.
fn remove_leftovers() {
    let mut names = sh(&["ip", "netns", "list"]).unwrap_or_default();
    names.push_str(&sh(&["ip", "-o", "link", "show"]).unwrap_or_default().replace(':', " "));
    let mut gone = std::collections::BTreeSet::new();
    for word in names.split_whitespace().filter(|w| w.starts_with(PREFIX)) {
        let pid = word.strip_prefix(PREFIX).and_then(|p| p.split('n').next()).and_then(|p| p.parse::<u32>().ok());
        if let Some(pid) =
            pid.filter(|p| *p != std::process::id() && !std::path::Path::new(&format!("/proc/{p}")).exists())
        {
            gone.insert(format!("{PREFIX}{pid}n"));
        }
    }
    for prefix in gone {
        remove(&prefix);
    }
}

/// A `10.214.N` subnet no address of this machine is in.
fn free_subnet() -> String {
    let used = sh(&["ip", "-o", "addr"]).unwrap_or_default();
    let start = std::process::id() % 200;
    (0..200)
        .map(|i| format!("10.214.{}", 20 + (start + i) % 200))
        .find(|s| !used.contains(&format!(" {s}.")))
        .expect("a free 10.214.N subnet")
}
