//! Where command output goes: zkCli's `System.out` and `System.err`, flushed after every write
//! so the two streams interleave as zkCli's do. Write errors (a closed pipe) are ignored, as
//! Java's `PrintStream` ignores them.

use std::io::Write;

pub struct Term<'a> {
    out: &'a mut dyn Write,
    err: &'a mut dyn Write,
}

impl<'a> Term<'a> {
    pub fn new(out: &'a mut dyn Write, err: &'a mut dyn Write) -> Term<'a> {
        Term { out, err }
    }

    pub fn out(&mut self, s: &str) {
        let _ = self.out.write_all(s.as_bytes());
        let _ = self.out.flush();
    }

    pub fn outln(&mut self, s: &str) {
        self.out(&format!("{s}\n"));
    }

    pub fn err(&mut self, s: &str) {
        let _ = self.err.write_all(s.as_bytes());
        let _ = self.err.flush();
    }

    pub fn errln(&mut self, s: &str) {
        self.err(&format!("{s}\n"));
    }
}
