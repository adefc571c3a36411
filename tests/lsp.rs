//! The language server driven by a scripted client over its standard
//! input and output, as an editor drives it: diagnostics that follow the
//! text, hover, completion, go-to-definition, the outline, shutdown.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

struct Client {
    child: Child,
    input: ChildStdin,
    messages: Receiver<Value>,
    next_id: i64,
}

const URI: &str = "file:///work/model.lisp";

impl Client {
    fn start() -> Client {
        let mut child = Command::new(env!("CARGO_BIN_EXE_epsilon"))
            .arg("lsp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("epsilon lsp starts");
        let input = child.stdin.take().unwrap();
        let mut output = BufReader::new(child.stdout.take().unwrap());
        let (sender, messages) = channel();
        std::thread::spawn(move || {
            loop {
                let mut length = 0;
                loop {
                    let mut header = String::new();
                    if output.read_line(&mut header).unwrap_or(0) == 0 {
                        return;
                    }
                    let header = header.trim_end();
                    if header.is_empty() {
                        break;
                    }
                    if let Some(value) = header.strip_prefix("Content-Length: ") {
                        length = value.parse().unwrap();
                    }
                }
                let mut body = vec![0; length];
                output.read_exact(&mut body).unwrap();
                if sender.send(serde_json::from_slice(&body).unwrap()).is_err() {
                    return;
                }
            }
        });
        Client {
            child,
            input,
            messages,
            next_id: 0,
        }
    }

    fn send(&mut self, message: Value) {
        let body = message.to_string();
        write!(self.input, "Content-Length: {}\r\n\r\n{body}", body.len()).unwrap();
        self.input.flush().unwrap();
    }

    fn next(&self) -> Value {
        self.messages
            .recv_timeout(Duration::from_secs(30))
            .expect("the server answers")
    }

    /// Sends a request and returns its result (notifications in between
    /// are skipped).
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let message = self.next();
            if message["id"] == id {
                assert!(message.get("error").is_none(), "{method}: {message}");
                return message["result"].clone();
            }
        }
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// The next diagnostics published.
    fn diagnostics(&self) -> Vec<Value> {
        loop {
            let message = self.next();
            if message["method"] == "textDocument/publishDiagnostics" {
                assert_eq!(message["params"]["uri"], URI);
                return message["params"]["diagnostics"].as_array().unwrap().clone();
            }
        }
    }
}

fn at(line: u32, character: u32) -> Value {
    json!({"textDocument": {"uri": URI}, "position": {"line": line, "character": character}})
}

const BROKEN: &str =
    "(define (energy w)\n  \"The energy of w.\"\n  (sum (* w w))\n(energy [1 2])\n";
const FIXED: &str = "(define (energy w)\n  \"The energy of w.\"\n  (sum (* w w)))\n(define rate 0.1)\n(grad energy)\n(energy (gra\n";

#[test]
fn an_editor_session() {
    let mut client = Client::start();
    let init = client.request(
        "initialize",
        json!({"processId": null, "rootUri": null, "capabilities": {}}),
    );
    let capabilities = &init["capabilities"];
    assert_eq!(capabilities["hoverProvider"], true, "{init}");
    assert_eq!(capabilities["definitionProvider"], true, "{init}");
    assert!(capabilities["completionProvider"].is_object(), "{init}");
    client.notify("initialized", json!({}));

    // An unclosed bracket is an error at the bracket.
    client.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": URI, "languageId": "epsilon", "version": 1, "text": BROKEN}}),
    );
    let diagnostics = client.diagnostics();
    assert_eq!(diagnostics.len(), 1, "{diagnostics:?}");
    assert!(
        diagnostics[0]["message"]
            .as_str()
            .unwrap()
            .contains("unclosed '('")
    );
    assert_eq!(
        diagnostics[0]["range"]["start"],
        json!({"line": 0, "character": 0})
    );
    assert_eq!(diagnostics[0]["severity"], 1);

    // A new text replaces the old one and its diagnostics.
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": URI, "version": 2}, "contentChanges": [{"text": FIXED}]}),
    );
    // `(energy (gra` is unclosed too: the diagnostic moves to line 5.
    let diagnostics = client.diagnostics();
    assert_eq!(diagnostics.len(), 1, "{diagnostics:?}");
    assert_eq!(diagnostics[0]["range"]["start"]["line"], 5);

    // Hover on a built-in shows its usage and documentation.
    let hover = client.request("textDocument/hover", at(4, 2));
    let text = hover["contents"]["value"].as_str().unwrap();
    assert!(text.contains("grad"), "{hover}");
    // Hover on the document's own function shows its signature and docstring.
    let hover = client.request("textDocument/hover", at(5, 3));
    let text = hover["contents"]["value"].as_str().unwrap();
    assert!(
        text.contains("(energy w)") && text.contains("The energy of w."),
        "{hover}"
    );
    assert_eq!(hover["range"]["start"], json!({"line": 5, "character": 1}));

    // Completion of `gra` offers grad; of `ene`, the document's energy.
    let items = client.request("textDocument/completion", at(5, 12));
    let labels: Vec<&str> = items
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["label"].as_str().unwrap())
        .collect();
    assert!(labels.contains(&"grad"), "{labels:?}");
    assert!(labels.iter().all(|l| l.starts_with("gra")), "{labels:?}");
    let items = client.request("textDocument/completion", at(5, 4));
    let energy = items
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["label"] == "energy")
        .unwrap_or_else(|| panic!("energy offered: {items}"));
    assert_eq!(energy["detail"], "(energy w)");

    // Go to definition jumps to the name in its define.
    let location = client.request("textDocument/definition", at(5, 2));
    assert_eq!(location["uri"], URI);
    assert_eq!(
        location["range"]["start"],
        json!({"line": 0, "character": 9})
    );
    assert_eq!(
        location["range"]["end"],
        json!({"line": 0, "character": 15})
    );
    // An unknown name has none.
    assert_eq!(
        client.request("textDocument/definition", at(5, 11)),
        Value::Null
    );

    // The outline lists the top-level definitions.
    let symbols = client.request(
        "textDocument/documentSymbol",
        json!({"textDocument": {"uri": URI}}),
    );
    let names: Vec<&str> = symbols
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["energy", "rate"]);

    // Shutdown, then exit: the server leaves with status 0.
    assert_eq!(client.request("shutdown", Value::Null), Value::Null);
    client.notify("exit", Value::Null);
    let status = client.child.wait().unwrap();
    assert!(status.success(), "{status:?}");
}

#[test]
fn an_unknown_request_is_an_error_and_the_server_goes_on() {
    let mut client = Client::start();
    client.request("initialize", json!({"capabilities": {}}));
    client.notify("initialized", json!({}));
    client.send(json!({"jsonrpc": "2.0", "id": 99, "method": "textDocument/rename", "params": {}}));
    let reply = client.next();
    assert_eq!(reply["id"], 99);
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("does not answer textDocument/rename"),
        "{reply}"
    );
    // Malformed parameters are an error too.
    client.send(
        json!({"jsonrpc": "2.0", "id": 100, "method": "textDocument/hover", "params": {"x": 1}}),
    );
    let reply = client.next();
    assert_eq!(reply["id"], 100);
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("malformed"),
        "{reply}"
    );
    // Hover in a document never opened answers nothing.
    assert_eq!(client.request("textDocument/hover", at(0, 0)), Value::Null);
    client.request("shutdown", Value::Null);
    client.notify("exit", Value::Null);
    assert!(client.child.wait().unwrap().success());
}
