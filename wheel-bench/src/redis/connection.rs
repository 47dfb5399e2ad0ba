//! One TCP connection shared by every caller: commands are written in one
//! stream, and replies, which Redis sends in the same order, are matched to
//! them by position in a FIFO of [`InFlight`] commands.
//!
//! # Ground rules
//! - Appending a command's bytes to the outbox and pushing it onto the FIFO
//!   happen under the outbox lock, so FIFO order is write order.
//! - Whoever finds the outbox not being flushed flushes it, outside the lock,
//!   until it is empty; callers arriving meanwhile only append. Under load
//!   one `write` carries many commands, as an event loop's flush would.
//! - The reader thread gives each reply to the FIFO's front. A command that
//!   timed out is still there, so its late reply is consumed in its place
//!   and dropped, never taken for the next command's. Taken off the FIFO,
//!   a command counts as in flight until its reply is settled (given to it,
//!   or counted late), so a caller that finds nothing in flight finds every
//!   late reply counted.
//! - A failed read or write kills the connection: `dead` is set under the
//!   outbox lock, after which no command enters the FIFO, and then every
//!   command in it completes with [`CommandError::Disconnected`].

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};

use bytes::BytesMut;
use redis_protocol::resp2::decode::decode_bytes_mut;
use redis_protocol::resp2::encode::extend_encode_borrowed;
use redis_protocol::resp2::types::{BorrowedFrame, BytesFrame};

use super::in_flight::{InFlight, Outcome};
use super::CommandError;

/// Bytes read from the socket at a time.
const READ_CHUNK: usize = 64 * 1024;

/// A multiplexed connection to one Redis server. Commands go through a
/// [`Client`](super::Client) or [`AsyncClient`](super::AsyncClient), which
/// add the timeouts; [`Connection::request`] sends one without.
///
/// # Examples
/// ```no_run
/// use wheel_bench::redis::{Connection, RedisServer};
///
/// let server = RedisServer::start().unwrap();
/// let connection = Connection::connect(server.addr()).unwrap();
/// connection.request(&[b"SET", b"k", b"v"]).unwrap();
/// ```
pub struct Connection {
    wire: Arc<Wire>,
    reader: Option<JoinHandle<()>>,
}

/// What the callers and the reader thread share.
struct Wire {
    stream: TcpStream,
    outbox: Mutex<Outbox>,
    in_flight: Mutex<VecDeque<Arc<InFlight>>>,
    /// Commands the reader has taken off `in_flight` and not yet settled.
    settling: AtomicUsize,
    /// Replies that came for a command already completed (timed out).
    late: AtomicU64,
    /// Replies that came with no command in flight.
    unsolicited: AtomicU64,
}

#[derive(Default)]
struct Outbox {
    bytes: BytesMut,
    flushing: bool,
    dead: Option<io::ErrorKind>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing panics while holding these, so a poisoned one is intact.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Connection {
    /// Connects and starts the reader thread.
    ///
    /// # Errors
    /// If the connection or the thread cannot be made.
    ///
    /// # Examples
    /// ```no_run
    /// # let server = wheel_bench::redis::RedisServer::start().unwrap();
    /// let connection = wheel_bench::redis::Connection::connect(server.addr()).unwrap();
    /// ```
    pub fn connect(addr: SocketAddr) -> io::Result<Connection> {
        let stream = TcpStream::connect(addr)?;
        // Each flush carries whatever is waiting; holding it back for more
        // would only add latency.
        stream.set_nodelay(true)?;
        let read_half = stream.try_clone()?;
        let wire = Arc::new(Wire {
            stream,
            outbox: Mutex::default(),
            in_flight: Mutex::default(),
            settling: AtomicUsize::new(0),
            late: AtomicU64::new(0),
            unsolicited: AtomicU64::new(0),
        });
        let reading = Arc::clone(&wire);
        let reader = thread::Builder::new()
            .name("redis-reader".into())
            .spawn(move || reading.read_replies(read_half))?;
        Ok(Connection {
            wire,
            reader: Some(reader),
        })
    }

    /// Sends `args` as one command and blocks for its reply, with no timeout.
    ///
    /// # Errors
    /// An error reply, or a failed connection.
    ///
    /// # Examples
    /// ```no_run
    /// # let server = wheel_bench::redis::RedisServer::start().unwrap();
    /// # let connection = wheel_bench::redis::Connection::connect(server.addr()).unwrap();
    /// use redis_protocol::resp2::types::BytesFrame;
    ///
    /// let pong = connection.request(&[b"PING"]).unwrap();
    /// assert_eq!(pong, BytesFrame::SimpleString("PONG".into()));
    /// ```
    pub fn request(&self, args: &[&[u8]]) -> Outcome {
        let command = InFlight::new();
        self.send(args, &command)?;
        command.wait()
    }

    /// Writes `args` as one command whose reply completes `command`.
    pub(super) fn send(&self, args: &[&[u8]], command: &Arc<InFlight>) -> Result<(), CommandError> {
        let frames: Vec<BorrowedFrame<'_>> =
            args.iter().map(|a| BorrowedFrame::BulkString(a)).collect();
        let frame = BorrowedFrame::Array(&frames);
        let mut outbox = lock(&self.wire.outbox);
        if let Some(kind) = outbox.dead {
            return Err(CommandError::Disconnected(kind));
        }
        extend_encode_borrowed(&mut outbox.bytes, &frame, false)
            .map_err(|_| CommandError::Encode)?;
        lock(&self.wire.in_flight).push_back(Arc::clone(command));
        if outbox.flushing {
            return Ok(());
        }
        outbox.flushing = true;
        loop {
            let batch = outbox.bytes.split();
            drop(outbox);
            let written = (&self.wire.stream).write_all(&batch);
            // Dropped before relocking, so the next append can reuse the space.
            drop(batch);
            outbox = lock(&self.wire.outbox);
            if let Err(e) = written {
                outbox.flushing = false;
                drop(outbox);
                // The reader then fails every command in flight, this one too.
                let _ = self.wire.stream.shutdown(Shutdown::Both);
                return Err(CommandError::Disconnected(e.kind()));
            }
            if outbox.bytes.is_empty() {
                outbox.flushing = false;
                return Ok(());
            }
        }
    }

    /// Commands written whose reply has not come, timed-out ones included.
    ///
    /// # Examples
    /// ```no_run
    /// # let server = wheel_bench::redis::RedisServer::start().unwrap();
    /// # let connection = wheel_bench::redis::Connection::connect(server.addr()).unwrap();
    /// assert_eq!(connection.in_flight(), 0);
    /// ```
    pub fn in_flight(&self) -> usize {
        let queued = lock(&self.wire.in_flight);
        // Read under the lock: a batch the reader takes is counted here
        // before the lock is let go; each command in it is uncounted
        // (Release) after its late reply is counted, or before its caller
        // can take its reply.
        queued.len() + self.wire.settling.load(Ordering::Acquire)
    }

    /// Replies that came after their command had timed out, and were dropped.
    ///
    /// # Examples
    /// ```no_run
    /// # let server = wheel_bench::redis::RedisServer::start().unwrap();
    /// # let connection = wheel_bench::redis::Connection::connect(server.addr()).unwrap();
    /// assert_eq!(connection.late_replies(), 0);
    /// ```
    pub fn late_replies(&self) -> u64 {
        self.wire.late.load(Ordering::Relaxed)
    }

    /// Replies that came with no command in flight (never, unless the
    /// matching is wrong).
    ///
    /// # Examples
    /// ```no_run
    /// # let server = wheel_bench::redis::RedisServer::start().unwrap();
    /// # let connection = wheel_bench::redis::Connection::connect(server.addr()).unwrap();
    /// assert_eq!(connection.unsolicited_replies(), 0);
    /// ```
    pub fn unsolicited_replies(&self) -> u64 {
        self.wire.unsolicited.load(Ordering::Relaxed)
    }

    /// Whether the connection has failed.
    ///
    /// # Examples
    /// ```no_run
    /// # let server = wheel_bench::redis::RedisServer::start().unwrap();
    /// # let connection = wheel_bench::redis::Connection::connect(server.addr()).unwrap();
    /// assert!(!connection.is_dead());
    /// ```
    pub fn is_dead(&self) -> bool {
        lock(&self.wire.outbox).dead.is_some()
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        // The reader's read returns, it fails what is left in flight, and ends.
        let _ = self.wire.stream.shutdown(Shutdown::Both);
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }
}

impl Wire {
    fn read_replies(&self, mut stream: TcpStream) {
        let mut buf = BytesMut::with_capacity(READ_CHUNK);
        let mut chunk = vec![0; READ_CHUNK];
        let mut replies = Vec::new();
        let mut commands = Vec::new();
        let failure = loop {
            let n = match stream.read(&mut chunk) {
                Ok(0) => break io::ErrorKind::UnexpectedEof,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => break e.kind(),
            };
            buf.extend_from_slice(&chunk[..n]);
            let parsed = loop {
                match decode_bytes_mut(&mut buf) {
                    Ok(Some((frame, _, _))) => replies.push(frame),
                    Ok(None) => break Ok(()),
                    Err(_) => break Err(io::ErrorKind::InvalidData),
                }
            };
            {
                // One lock for every reply of this read.
                let mut in_flight = lock(&self.in_flight);
                commands.extend(replies.iter().map(|_| in_flight.pop_front()));
                self.settling.fetch_add(commands.len(), Ordering::Relaxed);
            }
            // Each command leaves `settling` once its reply is counted: a late
            // or unsolicited one after its count, a live one before its caller
            // can take the outcome.
            let settle = || {
                self.settling.fetch_sub(1, Ordering::Release);
            };
            for (reply, command) in replies.drain(..).zip(commands.drain(..)) {
                match command {
                    Some(command) => {
                        if !command.complete_after(outcome_of(reply), settle) {
                            self.late.fetch_add(1, Ordering::Relaxed);
                            settle();
                        }
                    }
                    None => {
                        self.unsolicited.fetch_add(1, Ordering::Relaxed);
                        settle();
                    }
                }
            }
            if let Err(kind) = parsed {
                break kind;
            }
        };
        self.fail(failure);
    }

    /// Kills the connection and fails every command in flight.
    fn fail(&self, kind: io::ErrorKind) {
        lock(&self.outbox).dead = Some(kind);
        let _ = self.stream.shutdown(Shutdown::Both);
        let stranded: Vec<_> = lock(&self.in_flight).drain(..).collect();
        for command in stranded {
            command.complete(Err(CommandError::Disconnected(kind)));
        }
    }
}

fn outcome_of(reply: BytesFrame) -> Outcome {
    match reply {
        BytesFrame::Error(message) => Err(CommandError::Server(message.to_string())),
        reply => Ok(reply),
    }
}

#[cfg(test)]
mod tests;
