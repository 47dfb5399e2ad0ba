//! The blocking client: each caller thread writes a command, arms its
//! timeout on one of the [`Expiry`] mechanisms, blocks for the outcome and
//! cancels the timeout when the reply wins.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use redis_protocol::resp2::types::BytesFrame;
use wheel_sync::{TimerHandle, TimerService};

use super::in_flight::{InFlight, Outcome};
use super::{CommandError, Connection};
use crate::peers::{HeapHandle, HeapScheduler};

/// What completes a command whose reply is late.
///
/// # Examples
/// ```
/// use wheel_bench::redis::Expiry;
///
/// let wheel = Expiry::Wheel(wheel_sync::TimerService::new());
/// let executor = Expiry::Executor(wheel_bench::peers::HeapScheduler::with_workers(2).unwrap());
/// # drop((wheel, executor));
/// ```
pub enum Expiry {
    /// Nothing: a command waits for its reply however long it takes.
    None,
    /// A scheduled executor: a task per command on a heap under a lock,
    /// run by the executor's workers at the deadline; cancel marks it.
    Executor(HeapScheduler),
    /// A `wheel-sync` callback per command on one shared service; cancel
    /// takes it out.
    Wheel(TimerService),
}

enum Armed {
    None,
    Executor(HeapHandle),
    Wheel(TimerHandle),
}

impl Armed {
    fn cancel(self) {
        match self {
            Armed::None => {}
            Armed::Executor(handle) => handle.cancel(),
            Armed::Wheel(handle) => {
                handle.cancel();
            }
        }
    }
}

/// A blocking client over a shared [`Connection`], any number of threads
/// calling at once, each command under a timeout.
///
/// # Examples
/// ```no_run
/// use std::time::Duration;
/// use wheel_bench::redis::{Client, Connection, Expiry, RedisServer};
///
/// let server = RedisServer::start().unwrap();
/// let connection = Connection::connect(server.addr()).unwrap();
/// let client = Client::new(connection, Expiry::Wheel(wheel_sync::TimerService::new()), Duration::from_secs(1));
/// std::thread::scope(|s| {
///     for i in 0..4 {
///         let client = &client;
///         s.spawn(move || client.call(&[b"SET", format!("k{i}").as_bytes(), b"v"]).unwrap());
///     }
/// });
/// ```
pub struct Client {
    connection: Connection,
    expiry: Expiry,
    timeout: Duration,
    fired: AtomicU64,
}

/// A command written by [`Client::begin`], its timeout armed.
///
/// # Examples
/// ```no_run
/// # use std::time::Duration;
/// # use wheel_bench::redis::*;
/// # let server = RedisServer::start().unwrap();
/// # let client = Client::new(Connection::connect(server.addr()).unwrap(), Expiry::None, Duration::from_secs(1));
/// let call: Call<'_> = client.begin(&[b"PING"]).unwrap();
/// assert!(call.wait().is_ok());
/// ```
pub struct Call<'a> {
    client: &'a Client,
    command: Arc<InFlight>,
    armed: Armed,
}

impl Client {
    /// A client whose commands each time out after `timeout` on `expiry`.
    ///
    /// # Examples
    /// ```no_run
    /// # use std::time::Duration;
    /// # use wheel_bench::redis::*;
    /// # let server = RedisServer::start().unwrap();
    /// let client = Client::new(Connection::connect(server.addr()).unwrap(), Expiry::None, Duration::from_secs(1));
    /// ```
    pub fn new(connection: Connection, expiry: Expiry, timeout: Duration) -> Client {
        Client {
            connection,
            expiry,
            timeout,
            fired: AtomicU64::new(0),
        }
    }

    /// Sends `args` as one command and blocks for its outcome.
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
    /// # let client = Client::new(Connection::connect(server.addr()).unwrap(), Expiry::None, Duration::from_secs(1));
    /// client.call(&[b"SET", b"k", b"v"]).unwrap();
    /// ```
    pub fn call(&self, args: &[&[u8]]) -> Outcome {
        self.begin(args)?.wait()
    }

    /// Writes `args` as one command, its timeout armed, without waiting.
    ///
    /// # Errors
    /// A failed connection; scheduling refused by the timer.
    ///
    /// # Examples
    /// ```no_run
    /// # use std::time::Duration;
    /// # use wheel_bench::redis::*;
    /// # let server = RedisServer::start().unwrap();
    /// # let client = Client::new(Connection::connect(server.addr()).unwrap(), Expiry::None, Duration::from_secs(1));
    /// // Two commands in flight from one thread: their replies come in order.
    /// let del = client.begin(&[b"DEL", b"list"]).unwrap();
    /// let push = client.begin(&[b"LPUSH", b"list", b"a"]).unwrap();
    /// del.wait().unwrap();
    /// push.wait().unwrap();
    /// ```
    pub fn begin(&self, args: &[&[u8]]) -> Result<Call<'_>, CommandError> {
        let command = InFlight::new();
        let armed = self.arm(&command)?;
        if let Err(e) = self.connection.send(args, &command) {
            armed.cancel();
            return Err(e);
        }
        Ok(Call {
            client: self,
            command,
            armed,
        })
    }

    fn arm(&self, command: &Arc<InFlight>) -> Result<Armed, CommandError> {
        let expire = {
            let command = Arc::clone(command);
            move || {
                command.complete(Err(CommandError::Timeout));
            }
        };
        Ok(match &self.expiry {
            Expiry::None => Armed::None,
            Expiry::Executor(executor) => Armed::Executor(
                executor.schedule_cancellable(Instant::now() + self.timeout, expire),
            ),
            Expiry::Wheel(service) => Armed::Wheel(
                service
                    .schedule(self.timeout, expire)
                    .map_err(CommandError::Timer)?,
            ),
        })
    }

    /// Commands that completed with [`CommandError::Timeout`].
    ///
    /// # Examples
    /// ```no_run
    /// # use std::time::Duration;
    /// # use wheel_bench::redis::*;
    /// # let server = RedisServer::start().unwrap();
    /// # let client = Client::new(Connection::connect(server.addr()).unwrap(), Expiry::None, Duration::from_secs(1));
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
    /// # let client = Client::new(Connection::connect(server.addr()).unwrap(), Expiry::None, Duration::from_secs(1));
    /// assert_eq!(client.connection().late_replies(), 0);
    /// ```
    pub fn connection(&self) -> &Connection {
        &self.connection
    }
}

impl Call<'_> {
    /// Blocks for the outcome; cancels the timeout if the reply won.
    ///
    /// # Errors
    /// As [`Client::call`].
    ///
    /// # Examples
    /// ```no_run
    /// # use std::time::Duration;
    /// # use wheel_bench::redis::*;
    /// # let server = RedisServer::start().unwrap();
    /// # let client = Client::new(Connection::connect(server.addr()).unwrap(), Expiry::None, Duration::from_secs(1));
    /// let reply = client.begin(&[b"PING"]).unwrap().wait();
    /// ```
    pub fn wait(self) -> Result<BytesFrame, CommandError> {
        let outcome = self.command.wait();
        if outcome == Err(CommandError::Timeout) {
            self.client.fired.fetch_add(1, Ordering::Relaxed);
        } else {
            self.armed.cancel();
        }
        outcome
    }
}
