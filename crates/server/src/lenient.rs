//! Raw `<` and `>` in URLs. The contract lets clients write `order_by=lastUpdate<` without
//! percent-encoding, and curl sends it that way, but the HTTP parser refuses `"`, `<` and `>` in
//! a request target before any handler runs. This stream adapter sits between TLS and the HTTP
//! parser and percent-encodes exactly those bytes inside HTTP/1.1 request targets. It follows
//! the message framing (Content-Length and chunked bodies), so header values and bodies pass
//! through untouched; anything it does not understand is passed on unchanged for the HTTP
//! parser to judge.
//!
//! It also keeps request targets within [`MAX_TARGET`]: a longer one is replaced by
//! [`TOO_LONG_TARGET`], which the router answers with a problem+json 414 (the HTTP parser's own
//! 414 for a target past its limit would carry neither the problem body nor `X-Request-Id`).
//! Bytes of a target past the limit are counted and dropped, never held.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Longest method, version or header line the adapter follows before giving up (and passing
/// everything through unchanged).
const MAX_LINE: usize = 64 * 1024;

/// The longest request target (path and query, as rewritten) passed on; below the HTTP
/// parser's own limit (65,534 bytes), so the API answers first.
pub const MAX_TARGET: usize = 60 * 1024;

/// The target that stands for one that was too long: the router answers it with 414.
pub const TOO_LONG_TARGET: &str = "/.uri-too-long";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// In the request line: before the target, in it, or after it.
    Method,
    Target,
    Version,
    /// In the header section; `length` and `chunked` describe the body to come.
    Headers,
    /// Passing a body of known length.
    Body(u64),
    /// Reading a chunk-size line.
    ChunkSize,
    /// Passing chunk data (then its CRLF).
    ChunkData(u64),
    /// Passing the trailer section after the last chunk.
    Trailers,
    /// Something unexpected: no more rewriting on this connection.
    Passthrough,
}

/// The byte-level rewriter, separate from I/O so it can be tested on any chunking.
#[derive(Debug)]
pub struct Normaliser {
    state: State,
    /// The current header, chunk-size or trailer line.
    line: Vec<u8>,
    /// Bytes seen of the current request line outside its target (guards against endless
    /// lines).
    line_length: usize,
    /// The current request target as rewritten so far, up to [`MAX_TARGET`] bytes.
    target: Vec<u8>,
    /// Its rewritten length, counting the bytes dropped past the limit.
    target_length: usize,
    content_length: Option<u64>,
    chunked: bool,
    /// Whether the request line so far reads `PRI` (the HTTP/2 connection preface).
    method_is_pri: bool,
}

impl Default for Normaliser {
    fn default() -> Self {
        Normaliser {
            state: State::Method,
            line: Vec::new(),
            line_length: 0,
            target: Vec::new(),
            target_length: 0,
            content_length: None,
            chunked: false,
            method_is_pri: false,
        }
    }
}

impl Normaliser {
    /// Rewrites `input` (the next bytes from the client) into `output`.
    pub fn feed(&mut self, input: &[u8], output: &mut Vec<u8>) {
        let mut i = 0;
        while i < input.len() {
            let byte = input[i];
            match self.state {
                State::Passthrough => {
                    output.extend_from_slice(&input[i..]);
                    return;
                }
                State::Target => {
                    match byte {
                        b' ' | b'\r' | b'\n' => {
                            self.flush_target(output);
                            // The byte that ends the target is read as part of what follows.
                            self.state = State::Version;
                            if byte != b' ' {
                                continue;
                            }
                            output.push(byte);
                        }
                        b'"' => self.push_target(b"%22"),
                        b'<' => self.push_target(b"%3C"),
                        b'>' => self.push_target(b"%3E"),
                        _ => self.push_target(&[byte]),
                    }
                    i += 1;
                }
                State::Method | State::Version => {
                    self.line_length += 1;
                    if self.state == State::Method {
                        self.method_is_pri = match self.line_length {
                            1 => byte == b'P',
                            2 => self.method_is_pri && byte == b'R',
                            3 => self.method_is_pri && byte == b'I',
                            _ => self.method_is_pri && byte == b' ',
                        };
                    }
                    if self.line_length > MAX_LINE {
                        self.state = State::Passthrough;
                        continue;
                    }
                    match (self.state, byte) {
                        // An HTTP/2 preface: binary frames follow, never touch them.
                        (State::Method, b' ') if self.method_is_pri => {
                            self.state = State::Passthrough
                        }
                        (State::Method, b' ') => {
                            self.state = State::Target;
                            self.target.clear();
                            self.target_length = 0;
                        }
                        (State::Method, b'\r' | b'\n') if self.line_length == 1 => {
                            // Blank lines before a request are allowed; stay put.
                            self.line_length = 0;
                        }
                        (State::Version, b'\n') => {
                            self.state = State::Headers;
                            self.line.clear();
                            self.content_length = None;
                            self.chunked = false;
                        }
                        _ => {}
                    }
                    output.push(byte);
                    i += 1;
                }
                State::Headers | State::ChunkSize | State::Trailers => {
                    output.push(byte);
                    i += 1;
                    if byte != b'\n' {
                        self.line.push(byte);
                        if self.line.len() > MAX_LINE {
                            self.state = State::Passthrough;
                        }
                        continue;
                    }
                    let line = std::mem::take(&mut self.line);
                    let line = line.strip_suffix(b"\r").unwrap_or(&line);
                    self.end_of_line(line);
                }
                State::Body(remaining) => {
                    let take = (remaining as usize).min(input.len() - i);
                    output.extend_from_slice(&input[i..i + take]);
                    i += take;
                    let left = remaining - take as u64;
                    self.state = if left == 0 {
                        self.next_request()
                    } else {
                        State::Body(left)
                    };
                }
                State::ChunkData(remaining) => {
                    let take = (remaining as usize).min(input.len() - i);
                    output.extend_from_slice(&input[i..i + take]);
                    i += take;
                    let left = remaining - take as u64;
                    // The chunk's CRLF is read as an (empty) chunk-size line.
                    self.state = if left == 0 {
                        State::ChunkSize
                    } else {
                        State::ChunkData(left)
                    };
                }
            }
        }
    }

    /// Adds rewritten bytes to the target; past [`MAX_TARGET`] they are only counted.
    fn push_target(&mut self, bytes: &[u8]) {
        self.target_length = self.target_length.saturating_add(bytes.len());
        if self.target_length <= MAX_TARGET {
            self.target.extend_from_slice(bytes);
        }
    }

    /// Passes the finished target on, or [`TOO_LONG_TARGET`] in its place.
    fn flush_target(&mut self, output: &mut Vec<u8>) {
        if self.target_length > MAX_TARGET {
            output.extend_from_slice(TOO_LONG_TARGET.as_bytes());
        } else {
            output.extend_from_slice(&self.target);
        }
        self.target = Vec::new();
        self.target_length = 0;
    }

    /// Whether the client owes bytes of a request the server is reading: a request line or
    /// header section begun, or a body not yet complete. Between requests, and once the
    /// framing could not be followed, it owes nothing the adapter knows of.
    pub fn mid_request(&self) -> bool {
        match self.state {
            State::Method => self.line_length > 0,
            State::Passthrough => false,
            _ => true,
        }
    }

    fn next_request(&mut self) -> State {
        self.line_length = 0;
        State::Method
    }

    fn end_of_line(&mut self, line: &[u8]) {
        match self.state {
            State::Headers if line.is_empty() => {
                self.state = if self.chunked {
                    State::ChunkSize
                } else {
                    match self.content_length {
                        Some(0) | None => self.next_request(),
                        Some(length) => State::Body(length),
                    }
                };
            }
            State::Headers => {
                let Some(colon) = line.iter().position(|b| *b == b':') else {
                    return;
                };
                let name = String::from_utf8_lossy(&line[..colon])
                    .trim()
                    .to_ascii_lowercase();
                let value = String::from_utf8_lossy(&line[colon + 1..])
                    .trim()
                    .to_ascii_lowercase();
                match name.as_str() {
                    "content-length" => match value.parse::<u64>() {
                        Ok(length) => self.content_length = Some(length),
                        Err(_) => self.state = State::Passthrough,
                    },
                    "transfer-encoding" => {
                        self.chunked = value.split(',').any(|v| v.trim() == "chunked")
                    }
                    "upgrade" => self.state = State::Passthrough,
                    _ => {}
                }
            }
            State::ChunkSize if line.is_empty() => {
                // The CRLF that ends a chunk's data.
            }
            State::ChunkSize => {
                let size = line.split(|b| *b == b';').next().unwrap_or_default();
                match u64::from_str_radix(String::from_utf8_lossy(size).trim(), 16) {
                    Ok(0) => self.state = State::Trailers,
                    Ok(size) => self.state = State::ChunkData(size),
                    Err(_) => self.state = State::Passthrough,
                }
            }
            State::Trailers if line.is_empty() => self.state = self.next_request(),
            _ => {}
        }
    }
}

/// A stream whose reads pass through a [`Normaliser`]; writes are untouched.
pub struct NormalisedStream<S> {
    inner: S,
    normaliser: Normaliser,
    /// Rewritten bytes not yet handed to the reader.
    pending: Vec<u8>,
    offset: usize,
}

impl<S> NormalisedStream<S> {
    /// Wraps a client connection.
    pub fn new(inner: S) -> Self {
        NormalisedStream {
            inner,
            normaliser: Normaliser::default(),
            pending: Vec::new(),
            offset: 0,
        }
    }
}

impl<S> crate::timeouts::Owed for NormalisedStream<S> {
    fn mid_request(&self) -> bool {
        self.normaliser.mid_request()
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for NormalisedStream<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if this.offset < this.pending.len() {
                let take = (this.pending.len() - this.offset).min(buf.remaining());
                buf.put_slice(&this.pending[this.offset..this.offset + take]);
                this.offset += take;
                if this.offset == this.pending.len() {
                    this.pending.clear();
                    this.offset = 0;
                }
                return Poll::Ready(Ok(()));
            }
            let mut raw = [0u8; 16 * 1024];
            let mut raw_buf = ReadBuf::new(&mut raw);
            match Pin::new(&mut this.inner).poll_read(cx, &mut raw_buf) {
                Poll::Ready(Ok(())) => {
                    let filled = raw_buf.filled();
                    if filled.is_empty() {
                        return Poll::Ready(Ok(()));
                    }
                    this.normaliser.feed(filled, &mut this.pending);
                }
                other => return other,
            }
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for NormalisedStream<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, data)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// An acceptor that wraps each accepted connection (after TLS) in a [`NormalisedStream`].
#[derive(Debug, Clone)]
pub struct NormalisingAcceptor<A> {
    inner: A,
}

impl<A> NormalisingAcceptor<A> {
    /// Wraps the connections `inner` accepts.
    pub fn new(inner: A) -> Self {
        NormalisingAcceptor { inner }
    }
}

impl<A, I, S> axum_server::accept::Accept<I, S> for NormalisingAcceptor<A>
where
    A: axum_server::accept::Accept<I, S>,
    A::Future: Send + 'static,
    A::Stream: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    A::Service: Send + 'static,
{
    type Stream = NormalisedStream<A::Stream>;
    type Service = A::Service;
    type Future = Pin<
        Box<dyn std::future::Future<Output = io::Result<(Self::Stream, Self::Service)>> + Send>,
    >;

    fn accept(&self, stream: I, service: S) -> Self::Future {
        let accepting = self.inner.accept(stream, service);
        Box::pin(async move {
            let (stream, service) = accepting.await?;
            Ok((NormalisedStream::new(stream), service))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn rewrite(chunks: &[&[u8]]) -> Vec<u8> {
        let mut normaliser = Normaliser::default();
        let mut out = Vec::new();
        for chunk in chunks {
            normaliser.feed(chunk, &mut out);
        }
        out
    }

    const PIPELINE: &[u8] = b"GET /api/stock?order_by=lastUpdate<;>id HTTP/1.1\r\nHost: x\r\nX-Note: a<b\r\n\r\n\
POST /api/order/query?order_by=\"x\" HTTP/1.1\r\nContent-Length: 27\r\n\r\n{\"operator\":\"<\",\"v\":\">\"}\r\n\
POST /api/x?a=<1> HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n5;ext=1\r\n<<>>>\r\n0\r\nTrailer: <\r\n\r\n\
GET /api/y?z=> HTTP/1.1\r\n\r\n";

    const EXPECTED: &[u8] = b"GET /api/stock?order_by=lastUpdate%3C;%3Eid HTTP/1.1\r\nHost: x\r\nX-Note: a<b\r\n\r\n\
POST /api/order/query?order_by=%22x%22 HTTP/1.1\r\nContent-Length: 27\r\n\r\n{\"operator\":\"<\",\"v\":\">\"}\r\n\
POST /api/x?a=%3C1%3E HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n5;ext=1\r\n<<>>>\r\n0\r\nTrailer: <\r\n\r\n\
GET /api/y?z=%3E HTTP/1.1\r\n\r\n";

    #[test]
    fn only_request_targets_are_rewritten_across_pipelined_requests() {
        assert_eq!(
            String::from_utf8_lossy(&rewrite(&[PIPELINE])),
            String::from_utf8_lossy(EXPECTED)
        );
    }

    #[test]
    fn bad_framing_passes_through_untouched() {
        let input =
            b"POST /a?x=< HTTP/1.1\r\nContent-Length: lots\r\n\r\nGET /b?y=< HTTP/1.1\r\n\r\n";
        let out = rewrite(&[input]);
        assert!(out.starts_with(b"POST /a?x=%3C HTTP/1.1"));
        assert!(
            out.ends_with(b"GET /b?y=< HTTP/1.1\r\n\r\n"),
            "after a framing it cannot follow, nothing changes"
        );
    }

    #[test]
    fn a_target_past_the_limit_is_replaced_whole_and_never_held() {
        let mut normaliser = Normaliser::default();
        let mut out = Vec::new();
        normaliser.feed(b"GET /api/brand?name=", &mut out);
        for _ in 0..100 {
            normaliser.feed(&[b'x'; 10_000], &mut out);
            assert!(normaliser.target.len() <= MAX_TARGET);
        }
        normaliser.feed(
            b" HTTP/1.1\r\nHost: x\r\n\r\nGET /ok HTTP/1.1\r\n\r\n",
            &mut out,
        );
        assert_eq!(
            String::from_utf8(out).unwrap(),
            format!("GET {TOO_LONG_TARGET} HTTP/1.1\r\nHost: x\r\n\r\nGET /ok HTTP/1.1\r\n\r\n")
        );
        // Measured as rewritten: `<` takes three bytes.
        let exact = format!("GET /{} HTTP/1.1\r\n\r\n", "x".repeat(MAX_TARGET - 1));
        assert_eq!(rewrite(&[exact.as_bytes()]), exact.as_bytes());
        let over = format!("GET /{}< HTTP/1.1\r\n\r\n", "x".repeat(MAX_TARGET - 3));
        assert_eq!(
            String::from_utf8(rewrite(&[over.as_bytes()])).unwrap(),
            format!("GET {TOO_LONG_TARGET} HTTP/1.1\r\n\r\n")
        );
    }

    #[test]
    fn the_adapter_knows_when_a_request_is_owed() {
        let mut normaliser = Normaliser::default();
        let mut out = Vec::new();
        assert!(!normaliser.mid_request());
        normaliser.feed(b"POST /a HTTP/1.1\r\nContent-Length: 4\r\n", &mut out);
        assert!(normaliser.mid_request(), "in the headers");
        normaliser.feed(b"\r\nab", &mut out);
        assert!(normaliser.mid_request(), "in the body");
        normaliser.feed(b"cd", &mut out);
        assert!(!normaliser.mid_request(), "between requests");
        normaliser.feed(b"G", &mut out);
        assert!(normaliser.mid_request(), "a request line begun");
    }

    #[test]
    fn an_http2_preface_is_left_alone() {
        let input = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00 <> \x04";
        assert_eq!(rewrite(&[input]), input.to_vec());
    }

    proptest! {
        #[test]
        fn any_chunking_gives_the_same_rewrite(cuts in prop::collection::vec(0usize..PIPELINE.len(), 0..12)) {
            let mut cuts = cuts;
            cuts.sort_unstable();
            cuts.dedup();
            let mut chunks: Vec<&[u8]> = Vec::new();
            let mut start = 0;
            for cut in cuts {
                chunks.push(&PIPELINE[start..cut]);
                start = cut;
            }
            chunks.push(&PIPELINE[start..]);
            prop_assert_eq!(rewrite(&chunks), EXPECTED.to_vec());
        }
    }
}
