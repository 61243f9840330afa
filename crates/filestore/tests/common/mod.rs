//! Checks shared by the local and the S3 tests, so both backends are held to the same behaviour.

#![allow(dead_code)]

use std::io;

use brandhub_filestore::{ByteStream, FileStore, PutError, StoreError};
use bytes::Bytes;
use futures_util::stream::{self, Stream, StreamExt};

pub const MIB: usize = 1024 * 1024;

/// `len` reproducible pseudo-random bytes (xorshift), so a shifted or dropped chunk shows.
pub fn data(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// `data` as a body of `chunk`-sized pieces.
pub fn body(data: &[u8], chunk: usize) -> impl Stream<Item = Result<Bytes, io::Error>> + use<> {
    let chunks: Vec<_> = data
        .chunks(chunk)
        .map(|c| Ok(Bytes::copy_from_slice(c)))
        .collect();
    stream::iter(chunks)
}

/// A body that yields `data` in `chunk`-sized pieces and then fails.
pub fn failing_body(
    data: &[u8],
    chunk: usize,
) -> impl Stream<Item = Result<Bytes, io::Error>> + use<> {
    body(data, chunk).chain(stream::once(async {
        Err(io::Error::new(
            io::ErrorKind::ConnectionReset,
            "client went away",
        ))
    }))
}

pub async fn collect(mut stream: ByteStream) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(chunk) = stream.next().await {
        out.extend_from_slice(&chunk.expect("chunk"));
    }
    out
}

pub async fn assert_missing(store: &FileStore, key: &str) {
    match store.get(key).await {
        Err(StoreError::NotFound { key: k }) => assert_eq!(k, key),
        Err(other) => panic!("get {key}: expected NotFound, got {other}"),
        Ok(_) => panic!("get {key}: expected NotFound, found an object"),
    }
    assert!(matches!(
        store.get_bytes(key).await,
        Err(StoreError::NotFound { .. })
    ));
}

/// A multi-part upload in odd-sized chunks comes back byte for byte, streamed and whole.
pub async fn round_trip(store: &FileStore, key: &str, len: usize, seed: u64) -> Vec<u8> {
    let bytes = data(len, seed);
    let stored = store
        .put_stream(key, body(&bytes, 64 * 1024 + 7), len as u64)
        .await
        .expect("put");
    assert_eq!(stored, len as u64);
    let (size, stream) = store.get(key).await.expect("get");
    assert_eq!(size, len as u64);
    assert!(collect(stream).await == bytes, "streamed bytes differ");
    assert!(
        store.get_bytes(key).await.expect("get_bytes") == bytes,
        "bytes differ"
    );
    bytes
}

/// Every behaviour both backends must have.
pub async fn exercise(store: &FileStore) {
    // Small (one plain put) and multi-part uploads, and an empty one.
    round_trip(store, "0123456789abcdef0123456789abcdef", 100_000, 1).await;
    let big = round_trip(store, "big", 12 * MIB + 12_345, 2).await;
    round_trip(store, "empty", 0, 3).await;

    // Exactly the limit is accepted; one byte more is not, and leaves nothing, whether it is
    // passed while buffering or after parts were sent.
    let exact = data(3 * MIB, 4);
    assert_eq!(
        store
            .put_stream("exact", body(&exact, MIB), exact.len() as u64)
            .await
            .expect("put at the limit"),
        exact.len() as u64
    );
    for (key, len, limit) in [
        ("small-over", 3 * MIB, 3 * MIB as u64 - 1),
        ("big-over", 14 * MIB, 11 * MIB as u64),
    ] {
        match store
            .put_stream(key, body(&data(len, 5), 100_003), limit)
            .await
        {
            Err(PutError::TooLarge { limit: l }) => assert_eq!(l, limit),
            other => panic!("{key}: expected TooLarge, got {other:?}"),
        }
        assert_missing(store, key).await;
    }

    // A failing body stores nothing, early or after parts were sent.
    for (key, len) in [("fail-small", MIB), ("fail-big", 13 * MIB)] {
        match store
            .put_stream(key, failing_body(&data(len, 6), 200_000), u64::MAX)
            .await
        {
            Err(PutError::Body(e)) => assert_eq!(e.kind(), io::ErrorKind::ConnectionReset),
            other => panic!("{key}: expected Body, got {other:?}"),
        }
        assert_missing(store, key).await;
    }

    // A failed overwrite leaves the previous bytes alone.
    assert!(matches!(
        store
            .put_stream("big", failing_body(&data(7 * MIB, 7), MIB), u64::MAX)
            .await,
        Err(PutError::Body(_))
    ));
    assert!(matches!(
        store
            .put_stream("big", body(&data(9 * MIB, 7), MIB), 8 * MIB as u64)
            .await,
        Err(PutError::TooLarge { .. })
    ));
    assert!(store.get_bytes("big").await.expect("big") == big);

    // Missing keys, deletion, and keys that are not a single safe segment.
    assert_missing(store, "never-stored").await;
    store.delete("big").await.expect("delete");
    assert_missing(store, "big").await;
    store
        .delete("big")
        .await
        .expect("deleting a missing key succeeds");
    for bad in ["", "..", "a/b", "../etc", "x.xlsx"] {
        assert!(matches!(
            store.get(bad).await,
            Err(StoreError::InvalidKey { .. })
        ));
        assert!(matches!(
            store.put_stream(bad, body(b"x", 1), 10).await,
            Err(PutError::Store(StoreError::InvalidKey { .. }))
        ));
        assert!(matches!(
            store.delete(bad).await,
            Err(StoreError::InvalidKey { .. })
        ));
    }
}

/// Starts an upload whose body sends 6 MiB (so a multipart upload is under way) and then stalls,
/// and drops it as a server drops the handler of a request whose client went away.
pub async fn cancel_an_upload(store: &FileStore, key: &str) {
    let head = body(&data(6 * MIB, 9), MIB);
    let put = store.put_stream(key, head.chain(stream::pending()), u64::MAX);
    let timed_out = tokio::time::timeout(std::time::Duration::from_millis(500), put).await;
    assert!(timed_out.is_err(), "the stalled body keeps the upload open");
}

/// Polls `done` for up to 5 s: the cancelled upload is cleaned up in the background.
pub async fn eventually(mut done: impl FnMut() -> bool) -> bool {
    for _ in 0..250 {
        if done() {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    done()
}
