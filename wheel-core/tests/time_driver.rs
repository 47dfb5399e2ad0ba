//! A time driver built on `WakerQueue` the way an embassy HAL builds one on
//! its timer queue, run on the host against a fake hardware alarm.
//!
//! The driver keeps the queue behind its critical section (here a `Mutex`,
//! as `critical_section::Mutex<RefCell<_>>` would on a microcontroller).
//! `schedule_wake` re-arms the alarm only when the queue says the earliest
//! deadline moved; the alarm's interrupt asks `next_expiration` for the
//! next one. Arming an alarm for a tick already passed fails, as hardware
//! compare registers do, and the driver then asks the queue again.
//!
//! Tasks here are futures that wait for a tick, polled by a minimal
//! executor that runs whatever was woken; the fake clock jumps from alarm
//! to alarm.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

use wheel_core::WakerQueue;

/// The hardware: a free-running counter and one compare alarm.
#[derive(Default)]
struct Hardware {
    now: u64,
    /// The armed compare value, if any.
    alarm: Option<u64>,
    /// How often the driver armed the alarm.
    armed: usize,
    /// Ticks that pass while the alarm is armed: the time a driver takes,
    /// which can carry the clock past the deadline it arms for.
    drift: u64,
}

impl Hardware {
    /// Arms the alarm; `false` if `at` has already passed (the interrupt
    /// would never come), as an embassy HAL's `set_alarm` answers.
    fn set_alarm(&mut self, at: u64) -> bool {
        self.armed += 1;
        self.now += self.drift;
        if at == u64::MAX {
            self.alarm = None;
            return true;
        }
        if at <= self.now {
            self.alarm = None;
            return false;
        }
        self.alarm = Some(at);
        true
    }
}

/// What the critical section guards: the queue and the alarm together.
struct State {
    queue: WakerQueue<16>,
    hardware: Hardware,
}

/// The time driver.
struct Driver {
    critical: Mutex<State>,
}

impl Driver {
    fn new() -> Self {
        Driver {
            critical: Mutex::new(State {
                queue: WakerQueue::new(),
                hardware: Hardware::default(),
            }),
        }
    }

    fn now(&self) -> u64 {
        self.critical.lock().unwrap().hardware.now
    }

    /// embassy's `Driver::schedule_wake`: queue the waker and move the
    /// alarm only if the earliest deadline moved.
    fn schedule_wake(&self, at: u64, waker: &Waker) {
        let mut cs = self.critical.lock().unwrap();
        let State { queue, hardware } = &mut *cs;
        if queue.schedule_wake(at, waker) {
            Self::rearm(queue, hardware);
        }
    }

    /// The alarm interrupt: wake what is due and arm for the next deadline.
    fn on_alarm(&self) {
        let mut cs = self.critical.lock().unwrap();
        let State { queue, hardware } = &mut *cs;
        hardware.alarm = None;
        Self::rearm(queue, hardware);
    }

    /// Arms the alarm for the queue's next deadline, asking again while
    /// that deadline has already passed.
    fn rearm(queue: &mut WakerQueue<16>, hardware: &mut Hardware) {
        let mut next = queue.next_expiration(hardware.now);
        while !hardware.set_alarm(next) {
            next = queue.next_expiration(hardware.now);
        }
    }

    /// A poll took `ticks`: the clock moves, and the alarm's interrupt
    /// comes if the clock passed it.
    fn spend(&self, ticks: u64) {
        let passed = {
            let mut cs = self.critical.lock().unwrap();
            cs.hardware.now += ticks;
            cs.hardware.alarm.is_some_and(|at| at <= cs.hardware.now)
        };
        if passed {
            self.on_alarm();
        }
    }

    /// The fake clock reaches the alarm: returns false when none is armed.
    fn run_to_alarm(&self) -> bool {
        let at = {
            let mut cs = self.critical.lock().unwrap();
            let Some(at) = cs.hardware.alarm else {
                return false;
            };
            cs.hardware.now = at;
            at
        };
        assert_eq!(self.now(), at);
        self.on_alarm();
        true
    }
}

/// A future that completes once the driver's clock reaches `at`.
struct Timer<'a> {
    driver: &'a Driver,
    at: u64,
}

impl Future for Timer<'_> {
    type Output = u64;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u64> {
        let now = self.driver.now();
        if now >= self.at {
            return Poll::Ready(now);
        }
        self.driver.schedule_wake(self.at, cx.waker());
        Poll::Pending
    }
}

/// A task's waker: puts the task back on the run queue.
struct TaskWaker {
    task: usize,
    run_queue: Arc<Mutex<VecDeque<usize>>>,
}

impl Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let mut run_queue = self.run_queue.lock().unwrap();
        if !run_queue.contains(&self.task) {
            run_queue.push_back(self.task);
        }
    }
}

type Task<'a> = Pin<Box<dyn Future<Output = Vec<u64>> + 'a>>;

/// Runs the tasks to completion: polls what is woken, each poll taking
/// `poll_ticks` of the clock, and when nothing is woken, lets the clock run
/// to the alarm. Returns each task's output and how many polls returned
/// `Pending`.
fn run(driver: &Driver, mut tasks: Vec<Task<'_>>, poll_ticks: u64) -> (Vec<Vec<u64>>, usize) {
    let run_queue = Arc::new(Mutex::new((0..tasks.len()).collect::<VecDeque<_>>()));
    let wakers: Vec<Waker> = (0..tasks.len())
        .map(|task| {
            Waker::from(Arc::new(TaskWaker {
                task,
                run_queue: run_queue.clone(),
            }))
        })
        .collect();
    let mut done: Vec<Option<Vec<u64>>> = vec![None; tasks.len()];
    let mut pending = 0;
    loop {
        let next = run_queue.lock().unwrap().pop_front();
        match next {
            Some(task) => {
                if done[task].is_some() {
                    continue;
                }
                let mut cx = Context::from_waker(&wakers[task]);
                match tasks[task].as_mut().poll(&mut cx) {
                    Poll::Ready(output) => done[task] = Some(output),
                    Poll::Pending => pending += 1,
                }
                assert!(pending < 1_000_000, "the tasks never finish");
                driver.spend(poll_ticks);
            }
            None => {
                if !driver.run_to_alarm() {
                    break;
                }
            }
        }
    }
    let outputs = done
        .into_iter()
        .map(|d| d.expect("every task finished"))
        .collect();
    (outputs, pending)
}

/// A task that sleeps `delays` in turn and reports when each sleep ended.
fn sleeper<'a>(driver: &'a Driver, delays: Vec<u64>) -> Task<'a> {
    Box::pin(async move {
        let mut woke = Vec::new();
        for delay in delays {
            let at = driver.now() + delay;
            let ended = Timer { driver, at }.await;
            assert!(ended >= at, "woken at {ended}, before {at}");
            woke.push(ended);
        }
        woke
    })
}

#[test]
fn every_sleep_ends_exactly_at_its_deadline() {
    let driver = Driver::new();
    let tasks = vec![
        sleeper(&driver, vec![10, 10, 10, 10]),
        sleeper(&driver, vec![25, 15]),
        sleeper(&driver, vec![1_000_000]),
        sleeper(&driver, vec![40, 1, 1, 1]),
    ];
    let (outputs, pending) = run(&driver, tasks, 0);
    assert_eq!(outputs[0], [10, 20, 30, 40]);
    assert_eq!(outputs[1], [25, 40]);
    assert_eq!(outputs[2], [1_000_000]);
    assert_eq!(outputs[3], [40, 41, 42, 43]);
    // One pending poll per wait: no task was polled again before its time.
    let waits = 4 + 2 + 1 + 4;
    assert_eq!(pending, waits, "no task polled before its deadline");
    let cs = driver.critical.lock().unwrap();
    assert!(cs.queue.is_empty());
    assert_eq!(cs.hardware.alarm, None);
}

/// A task that counts its wakes.
#[derive(Default)]
struct Counted(std::sync::atomic::AtomicUsize);

impl Wake for Counted {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

#[test]
fn the_alarm_moves_only_when_the_earliest_deadline_does() {
    let driver = Driver::new();
    let tasks: Vec<Arc<Counted>> = (0..4).map(|_| Arc::default()).collect();
    let wakers: Vec<Waker> = tasks.iter().map(|t| Waker::from(t.clone())).collect();
    let woken = || -> Vec<usize> {
        let count = |t: &Arc<Counted>| t.0.load(std::sync::atomic::Ordering::Relaxed);
        tasks.iter().map(count).collect()
    };
    let alarm = |driver: &Driver| {
        let cs = driver.critical.lock().unwrap();
        (cs.hardware.alarm, cs.hardware.armed)
    };
    driver.schedule_wake(500, &wakers[0]);
    driver.schedule_wake(700, &wakers[1]); // later: the alarm stays at 500
    driver.schedule_wake(600, &wakers[0]); // task 0 keeps 500
    assert_eq!(alarm(&driver), (Some(500), 1));
    driver.schedule_wake(300, &wakers[2]); // earlier: re-armed
    assert_eq!(alarm(&driver), (Some(300), 2));
    // From here each arming takes 300 ticks, so every deadline the queue
    // names has passed by the time the alarm is set: the driver asks
    // again, and the queue wakes what came due meanwhile.
    driver.critical.lock().unwrap().hardware.drift = 300;
    driver.schedule_wake(290, &wakers[3]);
    assert_eq!(woken(), [1, 1, 1, 1]);
    assert_eq!(
        alarm(&driver),
        (None, 2 + 4),
        "290, 500, 700 missed; none left"
    );
    assert_eq!(driver.now(), 1_200);
    assert!(!driver.run_to_alarm());
}

#[test]
fn a_full_queue_wakes_tasks_early_but_loses_none() {
    // Twenty sleepers on a queue of 16, each poll taking a tick: a task
    // woken early polls, finds its time not come and waits again, waking
    // another; as with embassy's queue they take turns until deadlines
    // pass, and every sleep ends, none before its deadline.
    let driver = Driver::new();
    let tasks = (0..20)
        .map(|k| sleeper(&driver, vec![100 + 7 * k, 50]))
        .collect();
    let (outputs, pending) = run(&driver, tasks, 1);
    assert!(pending > 2 * 20, "some tasks were woken early");
    for (k, output) in outputs.iter().enumerate() {
        assert_eq!(output.len(), 2, "task {k}: {output:?}");
    }
    assert!(driver.critical.lock().unwrap().queue.is_empty());
}
