//! A connection's stream with a watcher beside it: the watcher tells the client what the
//! connection is ([`Watch::connected`]) and sees how many bytes each write took
//! ([`Watch::wrote`]); reads and writes go to the stream unchanged.

use std::pin::Pin;
use std::task::{Context, Poll};

use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_util::client::legacy::connect::{Connected, Connection};

/// What watches a connection's stream.
pub trait Watch {
    /// What the client is told of the connection, from what the stream under it tells.
    fn connected(&self, under: Connected) -> Connected;

    /// `n` bytes were written to the stream.
    fn wrote(&self, _n: usize) {}
}

/// A stream with its watcher.
#[derive(Debug)]
pub struct Watched<T, W> {
    io: T,
    watch: W,
}

impl<T, W> Watched<T, W> {
    pub fn new(io: T, watch: W) -> Self {
        Watched { io, watch }
    }
}

impl<T: Connection, W: Watch> Connection for Watched<T, W> {
    fn connected(&self) -> Connected {
        self.watch.connected(self.io.connected())
    }
}

impl<T: Read + Unpin, W: Unpin> Read for Watched<T, W> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: ReadBufCursor<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl<T: Write + Unpin, W: Watch + Unpin> Write for Watched<T, W> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.io).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = r {
            this.watch.wrote(n);
        }
        r
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.io).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Ok(n)) = r {
            this.watch.wrote(n);
        }
        r
    }
}
