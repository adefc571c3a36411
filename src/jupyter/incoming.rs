//! Reading a request off a ROUTER socket (shell, stdin).
//!
//! The frames and the signature are checked by `jupyter-zmq-client`
//! ([`RawMessage::from_multipart`]); the content is parsed here so that a
//! `history_request` the crate's types reject (the protocol lets it leave
//! out `n`, `unique`, `session`, `start` and `stop`) still reaches the
//! engine, as an [`UnknownMessage`] holding its content, which
//! [`super::history`] reads leniently. Any other content that does not
//! parse is an error, as before.

use jupyter_protocol::{Header, JupyterMessage, JupyterMessageContent, UnknownMessage};
use jupyter_zmq_client::{RawMessage, RouterRecvConnection, RuntimeError};
use zeromq::SocketRecv;

/// The message type read leniently.
pub const HISTORY_REQUEST: &str = "history_request";

/// The next message on `connection`, signature checked.
pub async fn read(connection: &mut RouterRecvConnection) -> Result<JupyterMessage, RuntimeError> {
    let frames = connection.socket.recv().await?;
    let raw = RawMessage::from_multipart(frames, &connection.mac)?;
    parse(raw)
}

/// A message from its checked frames.
fn parse(raw: RawMessage) -> Result<JupyterMessage, RuntimeError> {
    let parts = &raw.jparts;
    if parts.len() < 4 {
        return Err(RuntimeError::InsufficientMessageParts(parts.len()));
    }
    let header: Header = serde_json::from_slice(&parts[0])?;
    let content: serde_json::Value = serde_json::from_slice(&parts[3])?;
    let kept = (header.msg_type == HISTORY_REQUEST).then(|| content.clone());
    let content = match JupyterMessageContent::from_type_and_content(&header.msg_type, content) {
        Ok(content) => content,
        Err(_) if kept.is_some() => JupyterMessageContent::UnknownMessage(UnknownMessage {
            msg_type: header.msg_type.clone(),
            content: kept.unwrap_or_default(),
        }),
        Err(source) => {
            return Err(RuntimeError::ParseError {
                msg_type: header.msg_type,
                source,
            });
        }
    };
    // A message without a parent sends `{}`, which is no header.
    let parent_header = serde_json::from_slice(&parts[1]).ok();
    let metadata = serde_json::from_slice(&parts[2])?;
    let buffers = parts[4..].to_vec();
    Ok(JupyterMessage {
        zmq_identities: raw.zmq_identities,
        header,
        parent_header,
        metadata,
        content,
        buffers,
        channel: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(msg_type: &str, content: &str) -> RawMessage {
        let header = format!(
            r#"{{"msg_id": "1", "username": "u", "session": "s", "date": "2026-01-01T00:00:00Z", "msg_type": "{msg_type}", "version": "5.3"}}"#
        );
        RawMessage {
            zmq_identities: vec![b"client".to_vec().into()],
            jparts: [header.as_str(), "{}", "{}", content]
                .iter()
                .map(|part| part.as_bytes().to_vec().into())
                .collect(),
        }
    }

    #[test]
    fn a_history_search_without_optional_fields_is_kept_whole() {
        let content =
            r#"{"hist_access_type": "search", "pattern": "*", "output": false, "raw": true}"#;
        let message = parse(raw(HISTORY_REQUEST, content)).unwrap();
        match message.content {
            JupyterMessageContent::UnknownMessage(unknown) => {
                assert_eq!(unknown.msg_type, HISTORY_REQUEST);
                assert_eq!(unknown.content["pattern"], "*");
            }
            other => panic!("expected the raw content, got {other:?}"),
        }
        assert_eq!(message.zmq_identities.len(), 1);
        assert!(message.parent_header.is_none());
    }

    #[test]
    fn other_requests_parse_to_their_types_or_fail() {
        let message = parse(raw("kernel_info_request", "{}")).unwrap();
        assert!(matches!(
            message.content,
            JupyterMessageContent::KernelInfoRequest(_)
        ));
        let err = parse(raw("execute_request", r#"{"silent": 3}"#)).unwrap_err();
        assert!(matches!(err, RuntimeError::ParseError { .. }), "{err}");
    }
}
