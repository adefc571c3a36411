//! The kernel process's standard output as the running cell's output.
//!
//! A Rust function given to `Engine::register_fn` that prints
//! (`println!`) writes to file descriptor 1, which Jupyter connects to its
//! log, not to the notebook. So the kernel points descriptor 1 at a pipe
//! ([`Capture::start`]) and a reader thread sends what comes out of it as
//! `stdout` stream messages, children of the request being handled. The
//! interpreter's own output (`println`, `display`) goes the same way, so
//! the two stay in order.
//!
//! Before the engine thread sends anything else (a result, a chart, a
//! reply), it calls [`Capture::fence`]: a marker written through the same
//! `std::io::stdout` buffer comes out of the pipe after everything printed
//! before it, and the reader acknowledges it once that output is sent.
//! Unix only; elsewhere the kernel writes program output as before and
//! output of registered functions stays in the log.

use super::publisher::Publisher;
use std::sync::Mutex;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::Duration;

/// How long a fence waits for the reader thread before going on.
const FENCE_WAIT: Duration = Duration::from_secs(2);

/// Descriptor 1 pointed at a pipe, and the thread reading it.
pub struct Capture {
    marker: Vec<u8>,
    /// Acknowledgements of fences, one per marker read.
    acks: Mutex<Receiver<()>>,
    /// The descriptor 1 had before, restored on drop.
    #[cfg(unix)]
    original: libc::c_int,
}

impl Capture {
    /// Points descriptor 1 at a pipe read by a thread that publishes what
    /// it reads through `publisher`. An error says why it could not.
    #[cfg(unix)]
    pub fn start(publisher: Publisher) -> Result<Capture, String> {
        use std::io::Write;
        let _ = std::io::stdout().flush();
        let mut ends = [0 as libc::c_int; 2];
        // SAFETY: `pipe` writes two descriptors into the array it is given.
        if unsafe { libc::pipe(ends.as_mut_ptr()) } != 0 {
            return Err(format!(
                "cannot make a pipe: {}",
                std::io::Error::last_os_error()
            ));
        }
        let [read_end, write_end] = ends;
        // SAFETY: plain descriptor calls on descriptors this function owns
        // (and on 1, which it replaces and keeps a copy of).
        let original = unsafe { libc::dup(1) };
        if original < 0 || unsafe { libc::dup2(write_end, 1) } < 0 {
            let err = std::io::Error::last_os_error();
            unsafe {
                libc::close(read_end);
                libc::close(write_end);
                if original >= 0 {
                    libc::close(original);
                }
            }
            return Err(format!("cannot redirect standard output: {err}"));
        }
        unsafe { libc::close(write_end) };
        // SAFETY: `read_end` is open and owned by nothing else from here on.
        let pipe: std::fs::File = unsafe { std::os::fd::FromRawFd::from_raw_fd(read_end) };
        let marker = format!("\0epsilon-fence-{:016x}\0", rand::random::<u64>()).into_bytes();
        let (acked, acks) = channel();
        let demux = Demux::new(marker.clone());
        std::thread::Builder::new()
            .name("epsilon-kernel-stdout".to_string())
            .spawn(move || forward(pipe, demux, &publisher, &acked))
            .map_err(|err| format!("cannot start the output thread: {err}"))?;
        Ok(Capture {
            marker,
            acks: Mutex::new(acks),
            original,
        })
    }

    #[cfg(not(unix))]
    pub fn start(_: Publisher) -> Result<Capture, String> {
        Err("standard output is captured on Unix only".to_string())
    }

    /// Returns once everything written to standard output so far has been
    /// sent (or after [`FENCE_WAIT`], should the reader be stuck).
    pub fn fence(&self) {
        use std::io::Write;
        let Ok(acks) = self.acks.lock() else {
            return;
        };
        // Acknowledgements of fences that timed out earlier are stale.
        while acks.try_recv().is_ok() {}
        let mut out = std::io::stdout().lock();
        if out
            .write_all(&self.marker)
            .and_then(|()| out.flush())
            .is_ok()
        {
            drop(out);
            let _ = acks.recv_timeout(FENCE_WAIT);
        }
    }
}

#[cfg(unix)]
impl Drop for Capture {
    fn drop(&mut self) {
        use std::io::Write;
        self.fence();
        let _ = std::io::stdout().flush();
        // SAFETY: `original` is the copy of descriptor 1 made at start;
        // putting it back closes the pipe's last write end, so the reader
        // thread sees the end of the pipe and stops.
        unsafe {
            libc::dup2(self.original, 1);
            libc::close(self.original);
        }
    }
}

/// The reader thread: publishes the pipe's text, acknowledging fences.
fn forward(
    mut pipe: impl std::io::Read,
    mut demux: Demux,
    publisher: &Publisher,
    acked: &Sender<()>,
) {
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let read = match pipe.read(&mut buffer) {
            Ok(0) => return,
            Ok(read) => read,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return,
        };
        for piece in demux.feed(&buffer[..read]) {
            match piece {
                Piece::Text(text) => publisher.stdout(&text),
                Piece::Fence => {
                    let _ = acked.send(());
                }
            }
        }
    }
}

/// What the pipe carried: text to show, or a fence.
#[derive(Debug, PartialEq)]
enum Piece {
    Text(String),
    Fence,
}

/// Splits the pipe's bytes into text and fences. A marker may arrive cut
/// across reads, and so may a UTF-8 sequence: the bytes that could be the
/// start of either are held back until the next read.
struct Demux {
    marker: Vec<u8>,
    pending: Vec<u8>,
}

impl Demux {
    fn new(marker: Vec<u8>) -> Demux {
        Demux {
            marker,
            pending: Vec::new(),
        }
    }

    fn feed(&mut self, bytes: &[u8]) -> Vec<Piece> {
        self.pending.extend_from_slice(bytes);
        let mut pieces = Vec::new();
        while let Some(at) = find(&self.pending, &self.marker) {
            let text: Vec<u8> = self.pending.drain(..at).collect();
            self.pending.drain(..self.marker.len());
            if !text.is_empty() {
                pieces.push(Piece::Text(String::from_utf8_lossy(&text).into_owned()));
            }
            pieces.push(Piece::Fence);
        }
        let held = self.held_back();
        let ready = self.pending.len() - held;
        if ready > 0 {
            let text: Vec<u8> = self.pending.drain(..ready).collect();
            pieces.push(Piece::Text(String::from_utf8_lossy(&text).into_owned()));
        }
        pieces
    }

    /// How many final bytes of `pending` to keep: the longest end that
    /// begins the marker, or an unfinished UTF-8 sequence.
    fn held_back(&self) -> usize {
        let pending = &self.pending;
        let marker_start = (1..self.marker.len().min(pending.len() + 1))
            .rev()
            .find(|&n| pending.ends_with(&self.marker[..n]))
            .unwrap_or(0);
        let utf8 = match std::str::from_utf8(pending) {
            Err(err) if err.error_len().is_none() => pending.len() - err.valid_up_to(),
            _ => 0,
        };
        marker_start.max(utf8)
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(pieces: &[Piece]) -> String {
        pieces
            .iter()
            .map(|piece| match piece {
                Piece::Text(text) => text.as_str(),
                Piece::Fence => "|",
            })
            .collect()
    }

    #[test]
    fn fences_are_found_between_text() {
        let mut demux = Demux::new(b"\0F\0".to_vec());
        assert_eq!(
            demux.feed(b"one\n\0F\0two"),
            [
                Piece::Text("one\n".into()),
                Piece::Fence,
                Piece::Text("two".into())
            ]
        );
        assert_eq!(demux.feed(b"\0F\0"), [Piece::Fence]);
    }

    #[test]
    fn a_marker_or_a_character_cut_across_reads_is_held_back() {
        let mut demux = Demux::new(b"\0F\0".to_vec());
        assert_eq!(text(&demux.feed(b"ab\0")), "ab");
        assert_eq!(text(&demux.feed(b"F")), "");
        assert_eq!(text(&demux.feed(b"\0c")), "|c");
        let snowman = "☃".as_bytes();
        assert_eq!(text(&demux.feed(&snowman[..1])), "");
        assert_eq!(text(&demux.feed(&snowman[1..])), "☃");
        // A lone NUL that turns out not to start a marker is text.
        assert_eq!(text(&demux.feed(b"\0x")), "\0x");
    }
}
