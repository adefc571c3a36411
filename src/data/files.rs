//! Whole files as text or bytes: written atomically (a temporary file
//! beside the target, flushed to disk, then renamed over it, so a reader
//! never sees half a file and a failed write leaves the old one whole),
//! appended to, and read back with their size checked before the memory
//! for them is taken. Every error names the file.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Temporary files of this process get distinct names, so two writes of
/// one target (from two threads) never share one.
static TEMPORARIES: AtomicUsize = AtomicUsize::new(0);

/// Writes `bytes` to `path` through a temporary file beside it, renamed
/// over the target only once written and flushed.
pub fn write_atomically(path: &str, bytes: &[u8]) -> Result<(), String> {
    let target = Path::new(path);
    let name = target
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| format!("{path}: not a file name"))?;
    let serial = TEMPORARIES.fetch_add(1, Ordering::Relaxed);
    let temporary = target.with_file_name(format!(".{name}.{}.{serial}.tmp", std::process::id()));
    let written = std::fs::File::create(&temporary).and_then(|mut file| {
        file.write_all(bytes)?;
        file.sync_all()
    });
    if let Err(err) = written.and_then(|()| std::fs::rename(&temporary, target)) {
        let _ = std::fs::remove_file(&temporary);
        return Err(format!("cannot write {path}: {err}"));
    }
    Ok(())
}

/// Appends `bytes` to `path` (made if missing) in one write to a file
/// opened for appending, so what other appenders write is never
/// overwritten.
pub fn append(path: &str, bytes: &[u8]) -> Result<(), String> {
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .and_then(|mut file| file.write_all(bytes))
        .map_err(|err| format!("cannot append to {path}: {err}"))
}

/// The bytes of the file at `path`; the memory for them is asked for
/// (and refused with an error) before reading.
pub fn read_bytes(path: &str) -> Result<Vec<u8>, String> {
    let cannot = |err: std::io::Error| format!("cannot read {path}: {err}");
    let mut file = std::fs::File::open(path).map_err(cannot)?;
    let length = file.metadata().map_err(cannot)?.len();
    let mut bytes = Vec::new();
    usize::try_from(length)
        .ok()
        .and_then(|length| bytes.try_reserve_exact(length).ok())
        .ok_or_else(|| format!("cannot read {path}: no memory for its {length} bytes"))?;
    std::io::Read::read_to_end(&mut file, &mut bytes).map_err(cannot)?;
    Ok(bytes)
}

/// The text of the file at `path`, which must be UTF-8.
pub fn read_text(path: &str) -> Result<String, String> {
    String::from_utf8(read_bytes(path)?).map_err(|err| {
        let at = err.utf8_error().valid_up_to();
        format!("{path} is not UTF-8 text (byte {at} is not part of a character)")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_appended_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt").to_string_lossy().into_owned();
        write_atomically(&path, "one\n".as_bytes()).unwrap();
        append(&path, "two\n".as_bytes()).unwrap();
        assert_eq!(read_text(&path).unwrap(), "one\ntwo\n");
        write_atomically(&path, "three".as_bytes()).unwrap();
        assert_eq!(read_text(&path).unwrap(), "three");
        std::fs::write(&path, [b'a', 0xff]).unwrap();
        let error = read_text(&path).unwrap_err();
        assert!(error.contains("f.txt is not UTF-8 text (byte 1"), "{error}");
        let missing = dir.path().join("none").to_string_lossy().into_owned();
        assert!(read_text(&missing).unwrap_err().starts_with("cannot read"));
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "no temporary file is left");
    }
}
