//! A `redis-server` of our own on a free loopback port, without persistence,
//! stopped when dropped; and a stall of any server from a side connection.

use core::fmt;
use std::io;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use super::{CommandError, Connection};
use crate::affinity::CpuSet;

/// How long a fresh server may take to answer its first PING.
const READY_WITHIN: Duration = Duration::from_secs(10);
/// Fresh ports to try when another process takes the one we picked first.
const ATTEMPTS: usize = 5;

/// Why no server could be started.
///
/// # Examples
/// ```
/// use wheel_bench::redis::ServerError;
///
/// assert!(ServerError::NotInstalled.to_string().contains("apt-get install redis-server"));
/// ```
#[derive(Debug)]
pub enum ServerError {
    /// `redis-server` is not on `PATH`.
    NotInstalled,
    /// It could not be spawned, or no port could be found.
    Io(io::Error),
    /// It exited before answering.
    Exited(ExitStatus),
    /// It did not answer a PING within `READY_WITHIN` (10 s).
    NotReady,
}

impl fmt::Display for ServerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerError::NotInstalled => write!(
                f,
                "redis-server is not on PATH: install it (`apt-get install redis-server`) \
                 or give --redis-url"
            ),
            ServerError::Io(e) => write!(f, "cannot start redis-server: {e}"),
            ServerError::Exited(status) => {
                write!(f, "redis-server exited before answering ({status})")
            }
            ServerError::NotReady => write!(
                f,
                "redis-server did not answer within {} s",
                READY_WITHIN.as_secs()
            ),
        }
    }
}

impl std::error::Error for ServerError {}

impl From<io::Error> for ServerError {
    fn from(e: io::Error) -> Self {
        ServerError::Io(e)
    }
}

/// A `redis-server` child process listening on 127.0.0.1; killed on drop.
///
/// # Examples
/// ```no_run
/// use wheel_bench::redis::{Connection, RedisServer};
///
/// let server = RedisServer::start().unwrap();
/// let connection = Connection::connect(server.addr()).unwrap();
/// connection.request(&[b"PING"]).unwrap();
/// drop(server); // stops it
/// ```
pub struct RedisServer {
    child: Child,
    addr: SocketAddr,
}

impl RedisServer {
    /// Starts a server on a free loopback port with no snapshots and no
    /// append-only file, and waits until it answers.
    ///
    /// # Errors
    /// [`ServerError::NotInstalled`] when there is no `redis-server`; the
    /// others if it does not come up.
    ///
    /// # Examples
    /// ```no_run
    /// let server = wheel_bench::redis::RedisServer::start().unwrap();
    /// assert!(server.addr().ip().is_loopback());
    /// ```
    pub fn start() -> Result<RedisServer, ServerError> {
        RedisServer::start_on(None)
    }

    /// As [`RedisServer::start`], confined to `cpus` if given (all its
    /// threads, from its start).
    ///
    /// # Errors
    /// As [`RedisServer::start`].
    ///
    /// # Examples
    /// ```no_run
    /// use wheel_bench::affinity::CpuSet;
    /// use wheel_bench::redis::RedisServer;
    ///
    /// let server = RedisServer::start_on(Some(&CpuSet::of(&[1]))).unwrap();
    /// ```
    pub fn start_on(cpus: Option<&CpuSet>) -> Result<RedisServer, ServerError> {
        let mut last = ServerError::NotReady;
        for _ in 0..ATTEMPTS {
            match RedisServer::start_once(cpus) {
                // Another process may have taken the port between our probe
                // and the server's bind: try another.
                Err(e @ ServerError::Exited(_)) => last = e,
                other => return other,
            }
        }
        Err(last)
    }

    fn start_once(cpus: Option<&CpuSet>) -> Result<RedisServer, ServerError> {
        let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?
            .local_addr()?
            .port();
        let mut command = Command::new("redis-server");
        command
            .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .args(["--loglevel", "warning"])
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        if let Some(cpus) = cpus {
            cpus.pin_spawned(&mut command);
        }
        let spawned = command.spawn();
        let child = match spawned {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(ServerError::NotInstalled),
            other => other?,
        };
        let mut server = RedisServer {
            child,
            addr: SocketAddr::from((Ipv4Addr::LOCALHOST, port)),
        };
        server.wait_ready()?;
        Ok(server)
    }

    fn wait_ready(&mut self) -> Result<(), ServerError> {
        let start = Instant::now();
        while start.elapsed() < READY_WITHIN {
            if let Some(status) = self.child.try_wait()? {
                return Err(ServerError::Exited(status));
            }
            let answered = Connection::connect(self.addr)
                .ok()
                .is_some_and(|c| c.request(&[b"PING"]).is_ok());
            if answered {
                return Ok(());
            }
            thread::sleep(Duration::from_millis(20));
        }
        Err(ServerError::NotReady)
    }

    /// Where it listens.
    ///
    /// # Examples
    /// ```no_run
    /// let server = wheel_bench::redis::RedisServer::start().unwrap();
    /// println!("redis on {}", server.addr());
    /// ```
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its process id, to read its CPU time or CPUs from `/proc`.
    ///
    /// # Examples
    /// ```no_run
    /// let server = wheel_bench::redis::RedisServer::start().unwrap();
    /// let stat = std::fs::read_to_string(format!("/proc/{}/stat", server.pid())).unwrap();
    /// ```
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Kills it at once (SIGKILL) and reaps it, as a crash would end it.
    ///
    /// # Errors
    /// If it cannot be signalled or reaped.
    ///
    /// # Examples
    /// ```no_run
    /// let mut server = wheel_bench::redis::RedisServer::start().unwrap();
    /// server.kill().unwrap();
    /// ```
    pub fn kill(&mut self) -> io::Result<()> {
        self.child.kill()?;
        self.child.wait().map(drop)
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        // Already gone if `kill` ran; nothing to report either way.
        let _ = self.kill();
    }
}

/// Makes the server at `addr` stall: it leaves every client's commands
/// unanswered for `ms` milliseconds (`CLIENT PAUSE ms ALL`, sent from a side
/// connection), then answers them in order.
///
/// # Errors
/// If the side connection fails or the server refuses.
///
/// # Examples
/// ```no_run
/// let server = wheel_bench::redis::RedisServer::start().unwrap();
/// wheel_bench::redis::stall(server.addr(), 500).unwrap();
/// ```
pub fn stall(addr: SocketAddr, ms: u64) -> Result<(), CommandError> {
    let side = Connection::connect(addr).map_err(|e| CommandError::Disconnected(e.kind()))?;
    side.request(&[b"CLIENT", b"PAUSE", ms.to_string().as_bytes(), b"ALL"])
        .map(drop)
}
