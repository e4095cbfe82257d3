//! A 3-member ensemble of `zkr serve` processes on loopback, configured by zoo.cfg as ZooKeeper
//! is (server.N lines, myid in dataDir), for tests that signal members (SIGSTOP, SIGKILL).
//! `ZKR_TEST_BIN` runs another zkr binary (an older build, to show a test fails there).
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub struct ProcEnsemble {
    pub dir: PathBuf,
    pub client_ports: Vec<u16>,
    peer_ports: Vec<u16>,
    children: Vec<Option<Child>>,
    tick_ms: u32,
    /// zoo.cfg lines every member gets besides the usual ones.
    extra_cfg: String,
    /// Environment every member starts with (failpoints).
    env: Vec<(String, String)>,
    /// Each member's AdminServer port on 127.0.0.1, when they serve one (`start_with_admin`).
    pub admin_ports: Vec<u16>,
}

impl ProcEnsemble {
    /// Starts `n` members with `tick_ms` and ZooKeeper's usual limits (initLimit 10, syncLimit 5).
    pub fn start(n: usize, tick_ms: u32) -> ProcEnsemble {
        ProcEnsemble::start_with(n, tick_ms, "", &[])
    }

    /// The same, with `extra_cfg` in every member's zoo.cfg and `env` in its environment.
    pub fn start_with(n: usize, tick_ms: u32, extra_cfg: &str, env: &[(&str, &str)]) -> ProcEnsemble {
        let mut e = ProcEnsemble {
            dir: super::temp_dir(),
            client_ports: Vec::new(),
            peer_ports: Vec::new(),
            children: Vec::new(),
            tick_ms,
            extra_cfg: extra_cfg.to_owned(),
            env: env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            admin_ports: Vec::new(),
        };
        e.launch(n);
        e
    }

    /// `start_with`, each member also serving its AdminServer on 127.0.0.1 (`admin_ports`).
    pub fn start_with_admin(n: usize, tick_ms: u32, extra_cfg: &str) -> ProcEnsemble {
        let mut e = ProcEnsemble {
            dir: super::temp_dir(),
            client_ports: Vec::new(),
            peer_ports: Vec::new(),
            children: Vec::new(),
            tick_ms,
            extra_cfg: extra_cfg.to_owned(),
            env: Vec::new(),
            admin_ports: (0..n).map(|_| super::cluster::free_port()).collect(),
        };
        e.launch(n);
        e
    }

    fn launch(&mut self, n: usize) {
        let e = self;
        for _ in 0..n {
            e.pick_ports();
        }
        for i in 0..n {
            e.write_config(i);
            e.children.push(None);
            e.spawn(i);
        }
    }

    fn pick_ports(&mut self) {
        for _ in 0..2 {
            loop {
                let p = super::cluster::free_port();
                if !self.peer_ports.contains(&p) && !self.client_ports.contains(&p) {
                    if self.peer_ports.len() <= self.client_ports.len() {
                        self.peer_ports.push(p);
                    } else {
                        self.client_ports.push(p);
                    }
                    break;
                }
            }
        }
    }

    /// Member `i`'s `server.N=` value, as its zoo.cfg and a reconfig name it.
    pub fn server_spec(&self, i: usize) -> String {
        let p = self.peer_ports[i];
        format!("127.0.0.1:{p}:{p}:participant;127.0.0.1:{}", self.client_ports[i])
    }

    /// Member `i`'s zoo.cfg, listing every member known so far (a joining member lists itself,
    /// as ZooKeeper's does).
    fn write_config(&self, i: usize) {
        let data = self.dir.join(format!("m{}", i + 1));
        std::fs::create_dir_all(&data).unwrap();
        std::fs::write(data.join("myid"), format!("{}\n", i + 1)).unwrap();
        let admin = match self.admin_ports.get(i) {
            Some(p) => format!("admin.enableServer=true\nadmin.serverAddress=127.0.0.1\nadmin.serverPort={p}\n"),
            None => "admin.enableServer=false\n".to_owned(),
        };
        let mut cfg = format!(
            "tickTime={}\ninitLimit=10\nsyncLimit=5\ndataDir={}\nclientPort={}\n\
             clientPortAddress=127.0.0.1\n4lw.commands.whitelist=*\n{admin}{}",
            self.tick_ms,
            data.display(),
            self.client_ports[i],
            self.extra_cfg
        );
        for j in 0..self.peer_ports.len() {
            cfg.push_str(&format!("server.{}={}\n", j + 1, self.server_spec(j)));
        }
        std::fs::write(self.dir.join(format!("zoo{}.cfg", i + 1)), cfg).unwrap();
    }

    /// Starts one more member, configured with every member so far and itself, for a reconfig
    /// to add; its index.
    pub fn join(&mut self) -> usize {
        let i = self.prepare_join();
        self.spawn(i);
        i
    }

    /// Configures one more member as `join` does, without starting it (`restart` starts it);
    /// its index.
    pub fn prepare_join(&mut self) -> usize {
        self.pick_ports();
        let i = self.peer_ports.len() - 1;
        self.write_config(i);
        self.children.push(None);
        i
    }

    /// Starts member `i` again (after it exited or was killed), on its own files.
    pub fn restart(&mut self, i: usize) {
        if let Some(mut c) = self.children[i].take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        self.spawn(i);
    }

    /// The environment of members started from now on (failpoints).
    pub fn set_env(&mut self, env: &[(&str, &str)]) {
        self.env = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    }

    /// Member `i`'s data directory.
    pub fn data_dir(&self, i: usize) -> PathBuf {
        self.dir.join(format!("m{}", i + 1))
    }

    /// kill -9 of member `i`, waited for.
    pub fn kill(&mut self, i: usize) {
        if let Some(mut c) = self.children[i].take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Member `i`'s exit code once it exits within `within` (-1 for a signal), None if it runs on.
    pub fn wait_exit(&mut self, i: usize, within: Duration) -> Option<i32> {
        let until = std::time::Instant::now() + within;
        while std::time::Instant::now() < until {
            if let Some(code) = self.exited(i) {
                return Some(code);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }

    /// Member `i`'s exit code once it has exited (None while it runs).
    pub fn exited(&mut self, i: usize) -> Option<i32> {
        let c = self.children[i].as_mut()?;
        c.try_wait().ok().flatten().map(|s| s.code().unwrap_or(-1))
    }

    fn spawn(&mut self, i: usize) {
        let bin = std::env::var("ZKR_TEST_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_zkr").to_string());
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join(format!("m{}.log", i + 1)))
            .unwrap();
        let child = Command::new(bin)
            .args(["serve", "--config"])
            .arg(self.dir.join(format!("zoo{}.cfg", i + 1)))
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1")
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("zkr starts");
        self.children[i] = Some(child);
    }

    pub fn addr(&self, i: usize) -> String {
        format!("127.0.0.1:{}", self.client_ports[i])
    }

    pub fn pid(&self, i: usize) -> i32 {
        self.children[i].as_ref().map(|c| c.id() as i32).expect("a running member")
    }

    pub fn signal(&self, i: usize, sig: i32) {
        // SAFETY: kill(2) on the pid of a child this test started and has not reaped.
        let r = unsafe { libc::kill(self.pid(i), sig) };
        assert_eq!(r, 0, "kill({}, {sig})", self.pid(i));
    }

    /// Everything member `i` logged so far.
    pub fn log(&self, i: usize) -> String {
        std::fs::read_to_string(self.dir.join(format!("m{}.log", i + 1))).unwrap_or_default()
    }

    /// Member `i`'s answer to a four-letter word, or "" if it does not answer.
    pub fn four_letter(&self, i: usize, word: &str) -> String {
        let Ok(mut s) = TcpStream::connect_timeout(&self.addr(i).parse().unwrap(), Duration::from_secs(1)) else {
            return String::new();
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
        let _ = s.write_all(word.as_bytes());
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out
    }

    /// `srvr`'s Mode line of member `i` ("leader", "follower"), or "" if it does not answer.
    pub fn mode(&self, i: usize) -> String {
        let out = self.four_letter(i, "srvr");
        out.lines().find_map(|l| l.strip_prefix("Mode: ")).unwrap_or("").to_string()
    }

    /// The member that says it leads, once one does (within 30 s).
    pub fn leader(&self) -> usize {
        let until = std::time::Instant::now() + Duration::from_secs(30);
        while std::time::Instant::now() < until {
            if let Some(i) = (0..self.children.len()).find(|i| self.mode(*i) == "leader") {
                return i;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("no leader within 30 s:\n{}", (0..self.children.len()).map(|i| self.log(i)).collect::<String>());
    }
}

impl Drop for ProcEnsemble {
    fn drop(&mut self) {
        for c in self.children.iter_mut().flatten() {
            let _ = c.kill();
            let _ = c.wait();
        }
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}
