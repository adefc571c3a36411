//! `epsilon kernel install`: writes the kernelspec (`kernel.json`) that
//! tells Jupyter how to start this kernel.

use std::path::{Path, PathBuf};

/// Where and under which name to install.
#[derive(Clone, Debug, Default)]
pub struct InstallOptions {
    /// Install under `PREFIX/share/jupyter/kernels` (as `jupyter
    /// kernelspec install --prefix`), e.g. a virtual environment; without
    /// it, in the user's Jupyter data directory (`$JUPYTER_DATA_DIR`, else
    /// `~/.local/share/jupyter` on Linux).
    pub prefix: Option<PathBuf>,
    /// The kernel's name (its directory); default `epsilon`.
    pub name: Option<String>,
}

/// Writes `kernels/NAME/kernel.json` starting `executable`, atomically, and
/// returns the kernelspec's directory.
pub fn install(executable: &Path, options: &InstallOptions) -> Result<PathBuf, String> {
    let name = options.name.as_deref().unwrap_or("epsilon");
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        return Err(format!(
            "the kernel name {name:?} must be letters, digits, '-', '_' or '.' (Jupyter's rule)"
        ));
    }
    let data_dir = match &options.prefix {
        Some(prefix) => prefix.join("share").join("jupyter"),
        None => user_data_dir()?,
    };
    let dir = data_dir.join("kernels").join(name);
    std::fs::create_dir_all(&dir)
        .map_err(|err| format!("cannot create {}: {err}", dir.display()))?;
    let spec = kernelspec(executable);
    let text = serde_json::to_string_pretty(&spec).expect("a JSON value serializes");
    let file = dir.join("kernel.json");
    let file = file
        .to_str()
        .ok_or_else(|| format!("{} is not valid UTF-8", file.display()))?;
    crate::data::tree::write_atomically(file, text.as_bytes())?;
    Ok(dir)
}

/// The kernelspec: interrupts come as control messages (the kernel also
/// stops a cell on SIGINT, for front ends that signal).
fn kernelspec(executable: &Path) -> serde_json::Value {
    serde_json::json!({
        "argv": [executable.to_string_lossy(), "kernel", "--connection-file", "{connection_file}"],
        "display_name": "Epsilon",
        "language": "epsilon",
        "interrupt_mode": "message",
        "metadata": {"debugger": false}
    })
}

/// Jupyter's user data directory: `$JUPYTER_DATA_DIR` when set, else the
/// platform's (`$XDG_DATA_HOME/jupyter` or `~/.local/share/jupyter` on
/// Linux, `~/Library/Jupyter` on macOS, `%APPDATA%\jupyter` on Windows).
fn user_data_dir() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("JUPYTER_DATA_DIR").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    if cfg!(target_os = "macos") {
        return dirs::home_dir()
            .map(|home| home.join("Library/Jupyter"))
            .ok_or_else(|| "cannot find the home directory; use --prefix".to_string());
    }
    dirs::data_dir()
        .map(|data| data.join("jupyter"))
        .ok_or_else(|| {
            "cannot find the user data directory; set JUPYTER_DATA_DIR or use --prefix".to_string()
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernelspec_starts_this_executable_with_the_connection_file() {
        let dir = tempfile::tempdir().unwrap();
        let options = InstallOptions {
            prefix: Some(dir.path().to_path_buf()),
            name: None,
        };
        let installed = install(Path::new("/opt/bin/epsilon"), &options).unwrap();
        assert_eq!(installed, dir.path().join("share/jupyter/kernels/epsilon"));
        let text = std::fs::read_to_string(installed.join("kernel.json")).unwrap();
        let spec: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            spec["argv"],
            serde_json::json!([
                "/opt/bin/epsilon",
                "kernel",
                "--connection-file",
                "{connection_file}"
            ])
        );
        assert_eq!(spec["language"], "epsilon");
        assert_eq!(spec["interrupt_mode"], "message");
    }

    #[test]
    fn a_bad_kernel_name_is_refused() {
        let options = InstallOptions {
            prefix: Some(PathBuf::from("/tmp")),
            name: Some("my kernel".to_string()),
        };
        let err = install(Path::new("epsilon"), &options).unwrap_err();
        assert!(err.contains("\"my kernel\""), "{err}");
    }
}
