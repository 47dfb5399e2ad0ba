//! The async client: tasks on a tokio runtime share the same [`Connection`],
//! each awaiting its command's reply under a timeout future, either
//! `wheel_sync::timeout` or `tokio::time::timeout`, or under none.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::in_flight::{InFlight, Outcome, Reply};
use super::{CommandError, Connection};

/// Which timeout future wraps each command's reply.
///
/// # Examples
/// ```
/// use wheel_bench::redis::AsyncExpiry;
///
/// assert_ne!(AsyncExpiry::WheelSync, AsyncExpiry::Tokio);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AsyncExpiry {
    /// No timeout: the async client's ceiling.
    None,
    /// `wheel_sync::timeout`, on the global service.
    WheelSync,
    /// `tokio::time::timeout`, on the runtime's timer (so calls must run
    /// inside a tokio runtime with time enabled).
    Tokio,
}

/// An async client over a shared [`Connection`], any number of tasks
/// calling at once, each command under a timeout.
///
/// # Examples
/// ```no_run
/// use std::time::Duration;
/// use wheel_bench::redis::{AsyncClient, AsyncExpiry, Connection, RedisServer};
///
/// let server = RedisServer::start().unwrap();
/// let connection = Connection::connect(server.addr()).unwrap();
/// let client = AsyncClient::new(connection, AsyncExpiry::WheelSync, Duration::from_secs(1));
/// let rt = wheel_bench::tokio_runtime().unwrap();
/// rt.block_on(async { client.call(&[b"SET", b"k", b"v"]).await.unwrap() });
/// ```
pub struct AsyncClient {
    connection: Connection,
    expiry: AsyncExpiry,
    timeout: Duration,
    fired: AtomicU64,
}

/// A command written by [`AsyncClient::begin`], its timeout running.
///
/// # Examples
/// ```no_run
/// # use std::time::Duration;
/// # use wheel_bench::redis::*;
/// # let server = RedisServer::start().unwrap();
/// # let client = AsyncClient::new(Connection::connect(server.addr()).unwrap(), AsyncExpiry::WheelSync, Duration::from_secs(1));
/// # let rt = wheel_bench::tokio_runtime().unwrap();
/// rt.block_on(async {
///     let call: AsyncCall<'_> = client.begin(&[b"PING"]).unwrap();
///     assert!(call.wait().await.is_ok());
/// });
/// ```
pub struct AsyncCall<'a> {
    client: &'a AsyncClient,
    command: Arc<InFlight>,
    timer: Timer,
}

enum Timer {
    None(Reply),
    WheelSync(wheel_sync::Timeout<Reply>),
    Tokio(tokio::time::Timeout<Reply>),
}

impl AsyncClient {
    /// A client whose commands each time out after `timeout` on `expiry`.
    ///
    /// # Examples
    /// ```no_run
    /// # use std::time::Duration;
    /// # use wheel_bench::redis::*;
    /// # let server = RedisServer::start().unwrap();
    /// let connection = Connection::connect(server.addr()).unwrap();
    /// let client = AsyncClient::new(connection, AsyncExpiry::Tokio, Duration::from_secs(1));
    /// ```
    pub fn new(connection: Connection, expiry: AsyncExpiry, timeout: Duration) -> AsyncClient {
        AsyncClient {
            connection,
            expiry,
            timeout,
            fired: AtomicU64::new(0),
        }
    }

    /// Sends `args` as one command and awaits its outcome.
    ///
    /// # Errors
    /// [`CommandError::Timeout`] if no reply came in time; an error reply; a
    /// failed connection.
    ///
    /// # Examples
    /// ```no_run
    /// # use std::time::Duration;
    /// # use wheel_bench::redis::*;
    /// # let server = RedisServer::start().unwrap();
    /// # let client = AsyncClient::new(Connection::connect(server.addr()).unwrap(), AsyncExpiry::Tokio, Duration::from_secs(1));
    /// # let rt = wheel_bench::tokio_runtime().unwrap();
    /// rt.block_on(async { client.call(&[b"PING"]).await.unwrap() });
    /// ```
    pub async fn call(&self, args: &[&[u8]]) -> Outcome {
        self.begin(args)?.wait().await
    }

    /// Writes `args` as one command and starts its timeout, without waiting.
    /// Must run inside the tokio runtime for [`AsyncExpiry::Tokio`].
    ///
    /// # Errors
    /// A failed connection.
    ///
    /// # Examples
    /// ```no_run
    /// # use std::time::Duration;
    /// # use wheel_bench::redis::*;
    /// # let server = RedisServer::start().unwrap();
    /// # let client = AsyncClient::new(Connection::connect(server.addr()).unwrap(), AsyncExpiry::Tokio, Duration::from_secs(1));
    /// # let rt = wheel_bench::tokio_runtime().unwrap();
    /// rt.block_on(async {
    ///     let del = client.begin(&[b"DEL", b"list"]).unwrap();
    ///     client.call(&[b"LPUSH", b"list", b"a"]).await.unwrap();
    ///     del.wait().await.unwrap();
    /// });
    /// ```
    pub fn begin(&self, args: &[&[u8]]) -> Result<AsyncCall<'_>, CommandError> {
        let command = InFlight::new();
        // The deadline is fixed here, as the command is written.
        let reply = command.reply();
        let timer = match self.expiry {
            AsyncExpiry::None => Timer::None(reply),
            AsyncExpiry::WheelSync => Timer::WheelSync(wheel_sync::timeout(self.timeout, reply)),
            AsyncExpiry::Tokio => Timer::Tokio(tokio::time::timeout(self.timeout, reply)),
        };
        self.connection.send(args, &command)?;
        Ok(AsyncCall {
            client: self,
            command,
            timer,
        })
    }

    /// Commands that completed with [`CommandError::Timeout`].
    ///
    /// # Examples
    /// ```no_run
    /// # use std::time::Duration;
    /// # use wheel_bench::redis::*;
    /// # let server = RedisServer::start().unwrap();
    /// # let client = AsyncClient::new(Connection::connect(server.addr()).unwrap(), AsyncExpiry::Tokio, Duration::from_secs(1));
    /// assert_eq!(client.timeouts_fired(), 0);
    /// ```
    pub fn timeouts_fired(&self) -> u64 {
        self.fired.load(Ordering::Relaxed)
    }

    /// The shared connection.
    ///
    /// # Examples
    /// ```no_run
    /// # use std::time::Duration;
    /// # use wheel_bench::redis::*;
    /// # let server = RedisServer::start().unwrap();
    /// # let client = AsyncClient::new(Connection::connect(server.addr()).unwrap(), AsyncExpiry::Tokio, Duration::from_secs(1));
    /// assert_eq!(client.connection().in_flight(), 0);
    /// ```
    pub fn connection(&self) -> &Connection {
        &self.connection
    }
}

impl AsyncCall<'_> {
    /// Awaits the outcome; the timeout, if it elapses first, completes the
    /// command (unless the reply got there in between).
    ///
    /// # Errors
    /// As [`AsyncClient::call`].
    ///
    /// # Examples
    /// ```no_run
    /// # use std::time::Duration;
    /// # use wheel_bench::redis::*;
    /// # let server = RedisServer::start().unwrap();
    /// # let client = AsyncClient::new(Connection::connect(server.addr()).unwrap(), AsyncExpiry::Tokio, Duration::from_secs(1));
    /// # let rt = wheel_bench::tokio_runtime().unwrap();
    /// rt.block_on(async { client.begin(&[b"PING"]).unwrap().wait().await.unwrap() });
    /// ```
    pub async fn wait(self) -> Outcome {
        let replied = match self.timer {
            Timer::None(reply) => Some(reply.await),
            Timer::WheelSync(t) => t.await.ok(),
            Timer::Tokio(t) => t.await.ok(),
        };
        let outcome = match replied {
            Some(outcome) => outcome,
            None => self.command.expire(),
        };
        if outcome == Err(CommandError::Timeout) {
            self.client.fired.fetch_add(1, Ordering::Relaxed);
        }
        outcome
    }
}
