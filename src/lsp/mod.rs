//! The language server (`epsilon lsp`): editors get diagnostics from the
//! reader, completion of the session's names and the document's own
//! definitions, hover documentation, go-to-definition and an outline of
//! top-level definitions, over JSON-RPC on standard input and output
//! (`lsp-server`, the types from `lsp-types`).
//!
//! Nothing is evaluated: documents are read ([`outline`]), and the names
//! and documentation of the built-ins and the standard library come from a
//! fresh [`Engine`]. Like the REPL and the kernel, this is a front end.

mod outline;

use crate::Engine;
use lsp_server::{Connection, Message, Notification, Request, Response};
use lsp_types::notification::{
    DidChangeTextDocument, DidCloseTextDocument, DidOpenTextDocument, Notification as _,
    PublishDiagnostics,
};
use lsp_types::request::{
    Completion, DocumentSymbolRequest, GotoDefinition, HoverRequest, Request as _,
};
use lsp_types::{
    CompletionItem, CompletionItemKind, CompletionResponse, Diagnostic, DiagnosticSeverity,
    DocumentSymbol, DocumentSymbolResponse, GotoDefinitionResponse, Hover, HoverContents,
    HoverProviderCapability, InitializeParams, Location, MarkupContent, MarkupKind, OneOf,
    Position, PublishDiagnosticsParams, Range, ServerCapabilities, SymbolKind,
    TextDocumentPositionParams, TextDocumentSyncCapability, TextDocumentSyncKind, Uri,
};
use outline::{Outline, name_at, offset, position};
use std::collections::HashMap;

/// Serves one editor on standard input and output until it asks to exit.
pub fn serve_stdio() -> Result<(), String> {
    let (connection, threads) = Connection::stdio();
    serve(connection)?;
    threads
        .join()
        .map_err(|err| format!("language server I/O: {err}"))
}

/// Serves one client on `connection` until it shuts down.
pub fn serve(connection: Connection) -> Result<(), String> {
    let capabilities = ServerCapabilities {
        text_document_sync: Some(TextDocumentSyncCapability::Kind(TextDocumentSyncKind::FULL)),
        hover_provider: Some(HoverProviderCapability::Simple(true)),
        completion_provider: Some(Default::default()),
        definition_provider: Some(OneOf::Left(true)),
        document_symbol_provider: Some(OneOf::Left(true)),
        ..Default::default()
    };
    let capabilities = serde_json::to_value(capabilities).expect("capabilities serialize");
    let params = connection
        .initialize(capabilities)
        .map_err(|err| format!("language server start: {err}"))?;
    let _: InitializeParams = serde_json::from_value(params)
        .map_err(|err| format!("language server start: malformed initialize request: {err}"))?;
    Server {
        connection: &connection,
        engine: Engine::new(),
        documents: HashMap::new(),
    }
    .run()
}

struct Server<'a> {
    connection: &'a Connection,
    engine: Engine,
    documents: HashMap<Uri, String>,
}

impl Server<'_> {
    fn run(&mut self) -> Result<(), String> {
        for message in &self.connection.receiver {
            match message {
                Message::Request(request) => {
                    if self
                        .connection
                        .handle_shutdown(&request)
                        .map_err(|err| format!("language server: {err}"))?
                    {
                        return Ok(());
                    }
                    let response = self.answer(request);
                    self.send(Message::Response(response));
                }
                Message::Notification(notification) => self.notice(notification),
                Message::Response(_) => {}
            }
        }
        Ok(())
    }

    fn send(&self, message: Message) {
        let _ = self.connection.sender.send(message);
    }

    fn answer(&self, request: Request) -> Response {
        let id = request.id.clone();
        let result = match request.method.as_str() {
            HoverRequest::METHOD => parse::<HoverRequest>(request)
                .map(|p| serde_json::to_value(self.hover(&p.text_document_position_params))),
            Completion::METHOD => parse::<Completion>(request)
                .map(|p| serde_json::to_value(self.complete(&p.text_document_position))),
            GotoDefinition::METHOD => parse::<GotoDefinition>(request)
                .map(|p| serde_json::to_value(self.definition(&p.text_document_position_params))),
            DocumentSymbolRequest::METHOD => parse::<DocumentSymbolRequest>(request)
                .map(|p| serde_json::to_value(self.symbols(&p.text_document.uri))),
            other => {
                return Response::new_err(
                    id,
                    lsp_server::ErrorCode::MethodNotFound as i32,
                    format!("epsilon lsp does not answer {other}"),
                );
            }
        };
        match result {
            Ok(Ok(value)) => Response::new_ok(id, value),
            Ok(Err(err)) => Response::new_err(
                id,
                lsp_server::ErrorCode::InternalError as i32,
                err.to_string(),
            ),
            Err(message) => {
                Response::new_err(id, lsp_server::ErrorCode::InvalidParams as i32, message)
            }
        }
    }

    fn notice(&mut self, notification: Notification) {
        match notification.method.as_str() {
            DidOpenTextDocument::METHOD => {
                if let Ok(p) = notification
                    .extract::<lsp_types::DidOpenTextDocumentParams>(DidOpenTextDocument::METHOD)
                {
                    self.update(p.text_document.uri, p.text_document.text);
                }
            }
            DidChangeTextDocument::METHOD => {
                if let Ok(mut p) = notification.extract::<lsp_types::DidChangeTextDocumentParams>(
                    DidChangeTextDocument::METHOD,
                ) && let Some(change) = p.content_changes.pop()
                {
                    // Full synchronization: the last change is the whole text.
                    self.update(p.text_document.uri, change.text);
                }
            }
            DidCloseTextDocument::METHOD => {
                if let Ok(p) = notification
                    .extract::<lsp_types::DidCloseTextDocumentParams>(DidCloseTextDocument::METHOD)
                {
                    self.documents.remove(&p.text_document.uri);
                    self.publish(p.text_document.uri, Vec::new());
                }
            }
            _ => {}
        }
    }

    /// Stores a document's new text and publishes its diagnostics.
    fn update(&mut self, uri: Uri, text: String) {
        let diagnostics = Outline::of(&text)
            .error
            .map(|(message, at)| Diagnostic {
                range: range(&text, at),
                severity: Some(DiagnosticSeverity::ERROR),
                source: Some("epsilon".to_string()),
                message,
                ..Default::default()
            })
            .into_iter()
            .collect();
        self.documents.insert(uri.clone(), text);
        self.publish(uri, diagnostics);
    }

    fn publish(&self, uri: Uri, diagnostics: Vec<Diagnostic>) {
        let params = PublishDiagnosticsParams {
            uri,
            diagnostics,
            version: None,
        };
        self.send(Message::Notification(Notification::new(
            PublishDiagnostics::METHOD.to_string(),
            params,
        )));
    }

    /// The document and the byte offset of a position in it.
    fn at(&self, place: &TextDocumentPositionParams) -> Option<(&str, usize)> {
        let text = self.documents.get(&place.text_document.uri)?;
        let at = offset(text, place.position.line, place.position.character);
        Some((text, at))
    }

    fn hover(&self, place: &TextDocumentPositionParams) -> Option<Hover> {
        let (text, at) = self.at(place)?;
        let (start, end, name) = name_at(text, at)?;
        let value = match Outline::of(text).find(name) {
            Some(definition) => {
                let mut value = format!("```scheme\n{}\n```", definition.signature);
                if let Some(doc) = &definition.doc {
                    value.push_str(&format!("\n\n{doc}"));
                }
                value
            }
            None => {
                let doc = self.engine.doc(name)?;
                let (usage, rest) = doc.split_once('\n').unwrap_or((&doc, ""));
                format!("```scheme\n{usage}\n```\n\n{}", rest.trim())
            }
        };
        Some(Hover {
            contents: HoverContents::Markup(MarkupContent {
                kind: MarkupKind::Markdown,
                value,
            }),
            range: Some(range(text, (start, end))),
        })
    }

    fn complete(&self, place: &TextDocumentPositionParams) -> Option<CompletionResponse> {
        let (text, at) = self.at(place)?;
        let start = name_at(text, at).map_or(at, |(start, _, _)| start.min(at));
        let prefix = &text[start..at];
        let outline = Outline::of(text);
        let mut items: Vec<CompletionItem> = outline
            .definitions
            .iter()
            .filter(|d| d.name.starts_with(prefix))
            .map(|d| CompletionItem {
                label: d.name.clone(),
                kind: Some(if d.callable {
                    CompletionItemKind::FUNCTION
                } else {
                    CompletionItemKind::VARIABLE
                }),
                detail: Some(d.signature.clone()),
                ..Default::default()
            })
            .collect();
        let mut known: Vec<&str> = self
            .engine
            .global_names()
            .into_iter()
            .chain(
                crate::lisp::analyze::SPECIAL_FORMS
                    .iter()
                    .map(|(name, _, _)| *name),
            )
            .filter(|name| name.starts_with(prefix) && outline.find(name).is_none())
            .collect();
        known.sort_unstable();
        known.dedup();
        items.extend(known.into_iter().map(|name| CompletionItem {
            label: name.to_string(),
            kind: Some(CompletionItemKind::FUNCTION),
            ..Default::default()
        }));
        Some(CompletionResponse::Array(items))
    }

    fn definition(&self, place: &TextDocumentPositionParams) -> Option<GotoDefinitionResponse> {
        let (text, at) = self.at(place)?;
        let (_, _, name) = name_at(text, at)?;
        let definition = Outline::of(text).find(name)?.clone();
        Some(GotoDefinitionResponse::Scalar(Location {
            uri: place.text_document.uri.clone(),
            range: range(text, definition.name_at),
        }))
    }

    fn symbols(&self, uri: &Uri) -> Option<DocumentSymbolResponse> {
        let text = self.documents.get(uri)?;
        #[allow(deprecated)] // `deprecated` is a required field of the type
        let symbols = Outline::of(text)
            .definitions
            .into_iter()
            .map(|d| DocumentSymbol {
                name: d.name,
                detail: Some(d.signature),
                kind: if d.callable {
                    SymbolKind::FUNCTION
                } else {
                    SymbolKind::VARIABLE
                },
                tags: None,
                deprecated: None,
                range: range(text, d.form_at),
                selection_range: range(text, d.name_at),
                children: None,
            })
            .collect();
        Some(DocumentSymbolResponse::Nested(symbols))
    }
}

/// A request's parameters, or a sentence saying why they are malformed.
fn parse<P: lsp_types::request::Request>(request: Request) -> Result<P::Params, String> {
    request
        .extract::<P::Params>(P::METHOD)
        .map(|(_, params)| params)
        .map_err(|err| format!("malformed {} parameters: {err:?}", P::METHOD))
}

/// The LSP range of a byte range of `text`.
fn range(text: &str, (start, end): (usize, usize)) -> Range {
    let (line, character) = position(text, start);
    let (end_line, end_character) = position(text, end);
    Range {
        start: Position { line, character },
        end: Position {
            line: end_line,
            character: end_character,
        },
    }
}
