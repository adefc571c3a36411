//! Reading the connection file Jupyter writes for a kernel: where to bind
//! the five sockets and the key that signs messages.

use jupyter_protocol::ConnectionInfo;
use std::path::Path;

/// The connection file at `path`, checked: a readable JSON object with the
/// five ports, an address and a signature scheme this kernel speaks
/// (`hmac-sha256`; an empty key turns signing off, as Jupyter allows).
pub fn read_connection_file(path: &Path) -> Result<ConnectionInfo, String> {
    let shown = path.display();
    let text = std::fs::read_to_string(path)
        .map_err(|err| format!("cannot read the connection file {shown}: {err}"))?;
    parse_connection(&text).map_err(|why| format!("the connection file {shown} {why}"))
}

/// Parses connection-file text; the error completes "the connection file F ...".
fn parse_connection(text: &str) -> Result<ConnectionInfo, String> {
    let info: ConnectionInfo = serde_json::from_str(text).map_err(|err| {
        format!("is not a Jupyter connection file ({err}); it needs ip, transport, the five ports (shell_port, iopub_port, stdin_port, control_port, hb_port), key and signature_scheme")
    })?;
    if info.signature_scheme != "hmac-sha256" && !info.key.is_empty() {
        return Err(format!(
            "asks for signature scheme {:?}; this kernel signs with \"hmac-sha256\"",
            info.signature_scheme
        ));
    }
    let ports = [
        info.shell_port,
        info.iopub_port,
        info.stdin_port,
        info.control_port,
        info.hb_port,
    ];
    if ports.contains(&0) {
        return Err("gives port 0; every channel needs its own port".to_string());
    }
    Ok(info)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"{"ip": "127.0.0.1", "transport": "tcp", "shell_port": 5001,
        "iopub_port": 5002, "stdin_port": 5003, "control_port": 5004, "hb_port": 5005,
        "key": "secret", "signature_scheme": "hmac-sha256", "kernel_name": "epsilon"}"#;

    #[test]
    fn a_connection_file_from_jupyter_is_read() {
        let info = parse_connection(GOOD).unwrap();
        assert_eq!((info.shell_port, info.hb_port), (5001, 5005));
        assert_eq!(info.key, "secret");
    }

    #[test]
    fn malformed_connection_files_say_what_is_wrong() {
        let missing = parse_connection(r#"{"ip": "127.0.0.1"}"#).unwrap_err();
        assert!(
            missing.contains("is not a Jupyter connection file"),
            "{missing}"
        );
        assert!(missing.contains("shell_port"), "{missing}");
        let not_json = parse_connection("shell_port = 5").unwrap_err();
        assert!(
            not_json.contains("is not a Jupyter connection file"),
            "{not_json}"
        );
        let scheme = parse_connection(&GOOD.replace("hmac-sha256", "hmac-md5")).unwrap_err();
        assert!(scheme.contains("\"hmac-md5\""), "{scheme}");
        let zero = parse_connection(&GOOD.replace("5003", "0")).unwrap_err();
        assert!(zero.contains("port 0"), "{zero}");
        let missing_file =
            read_connection_file(Path::new("/nonexistent/kernel-1.json")).unwrap_err();
        assert!(
            missing_file.starts_with("cannot read the connection file /nonexistent/kernel-1.json"),
            "{missing_file}"
        );
    }
}
