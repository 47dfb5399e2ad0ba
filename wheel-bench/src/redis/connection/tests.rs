use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::mpsc::{self, Sender};
use std::thread::{self, JoinHandle};

use super::super::in_flight::InFlight;
use super::super::CommandError;
use super::Connection;

/// A connection to a server that, once told to go, answers `replies`
/// commands with `+OK` in one write, so the reader takes many at once; the
/// server holds its socket open until the client hangs up.
fn answered_at_once(replies: usize) -> (Connection, Sender<()>, JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (go, told) = mpsc::channel::<()>();
    let server = thread::spawn(move || {
        let (mut socket, _) = listener.accept().unwrap();
        told.recv().unwrap();
        socket.write_all(&b"+OK\r\n".repeat(replies)).unwrap();
        let mut sink = [0; 4096];
        while socket.read(&mut sink).is_ok_and(|n| n > 0) {}
    });
    (Connection::connect(addr).unwrap(), go, server)
}

/// A caller that finds nothing in flight finds every late reply counted,
/// even while the reader is still settling a large batch it took at once.
#[test]
fn nothing_in_flight_means_every_late_reply_is_counted() {
    const COMMANDS: usize = 20_000;
    let (connection, go, server) = answered_at_once(COMMANDS);
    for _ in 0..COMMANDS {
        let command = InFlight::new();
        connection.send(&[b"PING"], &command).unwrap();
        // Timed out before its reply comes: the reply will be late.
        assert!(command.complete(Err(CommandError::Timeout)));
    }
    go.send(()).unwrap();
    while connection.in_flight() > 0 {
        std::hint::spin_loop();
    }
    assert_eq!(connection.late_replies(), COMMANDS as u64);
    drop(connection);
    server.join().unwrap();
}

/// A caller that has taken its reply no longer finds its command in flight,
/// though the reader is still settling the rest of the batch it came in.
#[test]
fn a_command_whose_reply_is_taken_is_no_longer_in_flight() {
    const COMMANDS: usize = 20_000;
    let (connection, go, server) = answered_at_once(COMMANDS);
    let commands: Vec<_> = (0..COMMANDS)
        .map(|_| {
            let command = InFlight::new();
            connection.send(&[b"PING"], &command).unwrap();
            command
        })
        .collect();
    go.send(()).unwrap();
    for (taken, command) in commands.iter().enumerate() {
        assert!(command.wait().is_ok());
        let left = COMMANDS - taken - 1;
        assert!(connection.in_flight() <= left, "{taken} taken");
    }
    assert_eq!(connection.in_flight(), 0);
    drop(connection);
    server.join().unwrap();
}
