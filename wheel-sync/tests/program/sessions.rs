// A program written for `tokio_util::time::DelayQueue`: a table of sessions
// that expire `ttl` after their last touch, and a scenario that uses it.
// `tests/tokio_util_program.rs` includes this file twice, once on
// tokio-util and once on wheel-sync; the two differ only in the `use`
// lines written above each `include!`.

/// Sessions that expire `ttl` after they were last touched.
pub struct Sessions {
    open: HashMap<String, (u32, Key)>,
    names: HashMap<Key, String>,
    expirations: DelayQueue<String>,
    ttl: Duration,
}

impl Sessions {
    pub fn new(ttl: Duration) -> Self {
        Self {
            open: HashMap::new(),
            names: HashMap::new(),
            expirations: DelayQueue::with_capacity(16),
            ttl,
        }
    }

    /// Opens the session, or touches it: it now expires `ttl` from now.
    pub fn touch(&mut self, name: &str, value: u32) {
        if let Some((old, key)) = self.open.get_mut(name) {
            *old = value;
            self.expirations.reset(key, self.ttl);
            return;
        }
        let key = self.expirations.insert(name.to_owned(), self.ttl);
        self.names.insert(key, name.to_owned());
        self.open.insert(name.to_owned(), (value, key));
    }

    pub fn get(&self, name: &str) -> Option<u32> {
        self.open.get(name).map(|&(value, _)| value)
    }

    /// Closes the session before it expires.
    pub fn close(&mut self, name: &str) -> Option<u32> {
        let (value, key) = self.open.remove(name)?;
        self.names.remove(&key);
        let expired: Expired<String> = self.expirations.remove(&key);
        assert_eq!(expired.get_ref(), name);
        Some(value)
    }

    /// Closes the session if it is open, by its key alone.
    pub fn close_by_key(&mut self, key: &Key) -> Option<String> {
        let name = self.expirations.try_remove(key)?.into_inner();
        self.names.remove(key);
        self.open.remove(&name);
        Some(name)
    }

    pub fn key_of(&self, name: &str) -> Option<Key> {
        self.open.get(name).map(|&(_, key)| key)
    }

    /// The session that expires next, and when.
    pub fn next_to_expire(&self) -> Option<(String, Instant)> {
        let key = self.expirations.peek()?;
        Some((self.names[&key].clone(), self.expirations.deadline(&key)))
    }

    /// Waits for the next session to expire and forgets it: its name and
    /// when it was due; `None` at once if none is open.
    pub async fn expire_next(&mut self) -> Option<(String, Instant)> {
        let expired = self.expirations.next().await?;
        self.names.remove(&expired.key());
        let deadline = expired.deadline();
        let name = expired.into_inner();
        self.open.remove(&name);
        Some((name, deadline))
    }

    pub fn compact(&mut self) {
        self.expirations.compact();
    }

    pub fn capacity(&self) -> usize {
        self.expirations.capacity()
    }

    pub fn len(&self) -> usize {
        self.expirations.len()
    }
}

/// What the scenario saw, each event with the time since `start` when it
/// happened and, where it has one, the deadline it names (also since
/// `start`).
pub type Log = Vec<(String, Duration, Option<Duration>)>;

/// Opens, touches, closes and expires sessions over a few simulated
/// minutes, logging what it sees; `now` reads the clock the queue runs on.
pub async fn scenario(now: impl Fn() -> Instant) -> Log {
    let start = now();
    let since = |at: Instant| at - start;
    let mut log: Log = Vec::new();
    let mut sessions = Sessions::new(Duration::from_secs(30));
    for (i, name) in ["alice", "bob", "carol", "dave"].into_iter().enumerate() {
        sessions.touch(name, i as u32);
    }
    sleep(Duration::from_secs(10)).await;
    sessions.touch("alice", 10); // active again: expires at 40 s
    let bob = sessions.close("bob").expect("bob was open");
    log.push((format!("closed bob {bob}"), since(now()), None));
    let dave = sessions.key_of("dave").expect("dave is open");
    let closed = sessions.close_by_key(&dave);
    log.push((format!("closed by key {closed:?}"), since(now()), None));
    assert!(sessions.close_by_key(&dave).is_none(), "a stale key closed something");
    let (next, at) = sessions.next_to_expire().expect("carol");
    log.push((format!("next {next}"), since(now()), Some(since(at))));

    sleep(Duration::from_secs(25)).await; // 35 s: carol's time has passed
    sessions.touch("erin", 4); // expires at 65 s
    while let Some((name, at)) = sessions.expire_next().await {
        log.push((format!("expired {name}"), since(now()), Some(since(at))));
        if name == "alice" {
            // Only erin is left: its place is moved down.
            sessions.compact();
            log.push((
                format!("compacted to {} of {}", sessions.capacity(), sessions.len()),
                since(now()),
                None,
            ));
            sessions.touch("erin", 5); // 40 s: expires at 70 s
            log.push((format!("erin is {:?}", sessions.get("erin")), since(now()), None));
        }
    }
    log.push(("empty".to_owned(), since(now()), None));
    log
}
