//! Which CPUs a process runs on, read and set with Linux's
//! `sched_getaffinity(2)` and `sched_setaffinity(2)` (through `libc`): the
//! redis experiment gives the server one CPU and the client the others, so
//! that neither takes the other's time.

use core::fmt;
use std::io;
use std::os::unix::process::CommandExt;
use std::process::Command;

/// A set of CPUs, as the kernel takes it.
#[derive(Clone, Copy)]
pub struct CpuSet(libc::cpu_set_t);

impl CpuSet {
    /// The set of `cpus`; those past the largest set the kernel takes are
    /// left out.
    ///
    /// # Examples
    /// ```
    /// let set = wheel_bench::affinity::CpuSet::of(&[0, 2]);
    /// assert_eq!(set.cpus(), [0, 2]);
    /// ```
    pub fn of(cpus: &[usize]) -> CpuSet {
        // SAFETY: `cpu_set_t` is a plain bit array: all zeros is the empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for &cpu in cpus.iter().filter(|&&cpu| cpu < CpuSet::CAPACITY) {
            // SAFETY: `cpu` is below the set's capacity, so the bit is inside it.
            unsafe { libc::CPU_SET(cpu, &mut set) };
        }
        CpuSet(set)
    }

    /// CPUs a set can hold.
    const CAPACITY: usize = 8 * std::mem::size_of::<libc::cpu_set_t>();

    /// The CPUs in the set, in order.
    pub fn cpus(&self) -> Vec<usize> {
        (0..CpuSet::CAPACITY)
            // SAFETY: every `cpu` is below the set's capacity.
            .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &self.0) })
            .collect()
    }

    /// The CPUs this thread may run on.
    ///
    /// # Errors
    /// If the kernel refuses (it does not on Linux for the calling thread).
    ///
    /// # Examples
    /// ```
    /// let cpus = wheel_bench::affinity::CpuSet::allowed().unwrap().cpus();
    /// assert!(!cpus.is_empty());
    /// ```
    pub fn allowed() -> io::Result<CpuSet> {
        let mut set = CpuSet::of(&[]);
        // SAFETY: `set.0` is a live `cpu_set_t` of the size passed.
        let done = unsafe {
            libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set.0)
        };
        match done {
            0 => Ok(set),
            _ => Err(io::Error::last_os_error()),
        }
    }

    /// Confines the calling thread to this set; threads and processes it
    /// starts afterwards inherit it.
    ///
    /// # Errors
    /// If none of the set's CPUs is available to this process.
    pub fn pin_this_thread(&self) -> io::Result<()> {
        // SAFETY: `self.0` is a live `cpu_set_t` of the size passed.
        let done =
            unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &self.0) };
        match done {
            0 => Ok(()),
            _ => Err(io::Error::last_os_error()),
        }
    }

    /// Makes the process `command` spawns start confined to this set, all
    /// its threads with it.
    pub fn pin_spawned(&self, command: &mut Command) {
        let set = *self;
        // SAFETY: the hook runs in the forked child before exec, where only
        // async-signal-safe calls are allowed: it makes one system call on
        // a set copied in beforehand, and allocates nothing.
        unsafe { command.pre_exec(move || set.pin_this_thread()) };
    }
}

impl PartialEq for CpuSet {
    fn eq(&self, other: &CpuSet) -> bool {
        self.cpus() == other.cpus()
    }
}

impl fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.cpus()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_pinned_to_one_allowed_cpu_runs_there_and_children_inherit_it() {
        let allowed = CpuSet::allowed().unwrap().cpus();
        let last = *allowed.last().unwrap();
        std::thread::spawn(move || {
            CpuSet::of(&[last]).pin_this_thread().unwrap();
            assert_eq!(CpuSet::allowed().unwrap().cpus(), [last]);
            let inherited = std::thread::spawn(|| CpuSet::allowed().unwrap().cpus());
            assert_eq!(inherited.join().unwrap(), [last]);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_spawned_process_starts_on_its_set() {
        let allowed = CpuSet::allowed().unwrap().cpus();
        let first = allowed[0];
        let mut command = Command::new("grep");
        command.args(["^Cpus_allowed_list:", "/proc/self/status"]);
        CpuSet::of(&[first]).pin_spawned(&mut command);
        let out = command.output().unwrap();
        let line = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            line.split_whitespace().nth(1),
            Some(first.to_string().as_str())
        );
    }

    #[test]
    fn cpus_past_the_capacity_are_left_out() {
        assert_eq!(CpuSet::of(&[1, usize::MAX]).cpus(), [1]);
    }
}
