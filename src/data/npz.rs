//! NumPy's `.npz`: a zip of `.npy` files, one per array. The entries are
//! read in the archive's order, their names without `.npy`; an entry
//! claiming more bytes than the whole archive holds is an error before any
//! memory is taken for it. Only stored (uncompressed) entries, as
//! `np.savez` writes them, are read; `np.savez_compressed`'s are an error
//! saying so.

use std::io::{Cursor, Read};

/// The arrays of the `.npz` bytes `bytes`: each name with its `.npy` bytes.
pub fn entries(bytes: &[u8]) -> Result<Vec<(String, Vec<u8>)>, String> {
    let mut archive = zip::ZipArchive::new(Cursor::new(bytes))
        .map_err(|err| format!("not an .npz file: {err}"))?;
    let mut out = Vec::with_capacity(archive.len().min(bytes.len()));
    for index in 0..archive.len() {
        let mut entry = archive
            .by_index(index)
            .map_err(|err| format!("unreadable .npz (entry {index}): {err}"))?;
        let name = entry.name().to_string();
        let name = name.strip_suffix(".npy").unwrap_or(&name).to_string();
        let size = entry.size();
        if size > bytes.len() as u64 {
            return Err(format!(
                "the array {name} claims {size} bytes in an archive of {}",
                bytes.len()
            ));
        }
        let mut data = Vec::new();
        data.try_reserve_exact(size as usize)
            .map_err(|_| format!("no memory for the array {name} ({size} bytes)"))?;
        entry
            .read_to_end(&mut data)
            .map_err(|err| format!("unreadable .npz: the array {name}: {err}"))?;
        out.push((name, data));
    }
    Ok(out)
}
