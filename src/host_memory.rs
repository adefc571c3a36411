//! The memory this process can get from the system: what the machine
//! has (`MemTotal`) and has free (`MemAvailable`), what its control group
//! allows (`memory.max` less `memory.current`, or cgroup v1's limit and
//! usage), and what its address-space limit (`RLIMIT_AS`, `ulimit -v`)
//! leaves above the address space already mapped (`VmSize`).
//!
//! Read from `/proc` and `/sys` on Linux; elsewhere only the address-space
//! limit is known, and a figure nobody reports is `None`.

/// The most memory this process could ever hold: the least of the
/// machine's memory, its control group's limit and its address-space
/// limit (`None` where none can be read).
pub fn total() -> Option<usize> {
    let machine = read("/proc/meminfo").and_then(|text| meminfo_field(&text, "MemTotal:"));
    let group = group_limit().map(|(limit, _)| limit);
    [machine, group, address_space_limit()]
        .into_iter()
        .flatten()
        .min()
}

/// The memory this process can get now: the least of the machine's free
/// memory (`MemAvailable`), what its control group has left, and what its
/// address-space limit leaves above what it has mapped (`None` where
/// none can be read).
pub fn available() -> Option<usize> {
    let machine = read("/proc/meminfo").and_then(|text| meminfo_field(&text, "MemAvailable:"));
    let group = group_limit().map(|(limit, used)| limit.saturating_sub(used));
    let address_space = address_space_limit().map(|limit| {
        let mapped = read("/proc/self/status")
            .and_then(|text| meminfo_field(&text, "VmSize:"))
            .unwrap_or(0);
        limit.saturating_sub(mapped)
    });
    [machine, group, address_space].into_iter().flatten().min()
}

/// The control group's limit and its current usage, where a limit is set.
fn group_limit() -> Option<(usize, usize)> {
    let number = |path: &str| read(path)?.trim().parse::<usize>().ok();
    [
        ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
        (
            "/sys/fs/cgroup/memory/memory.limit_in_bytes",
            "/sys/fs/cgroup/memory/memory.usage_in_bytes",
        ),
    ]
    .iter()
    .find_map(|(limit, usage)| {
        // "max" (no limit) does not parse; cgroup v1 writes a huge number.
        let limit = number(limit).filter(|&l| l < usize::MAX / 4)?;
        Some((limit, number(usage).unwrap_or(0)))
    })
}

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

/// The address-space limit (`RLIMIT_AS`), where one is set.
pub fn address_space_limit() -> Option<usize> {
    #[cfg(unix)]
    {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: `getrlimit` writes the limit into the struct it is given.
        let read = unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut limit) } == 0;
        (read && limit.rlim_cur != libc::RLIM_INFINITY).then_some(limit.rlim_cur as usize)
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// A `kB` field of `/proc/meminfo` or `/proc/self/status`, in bytes.
pub fn meminfo_field(text: &str, name: &str) -> Option<usize> {
    let rest = text.lines().find_map(|line| line.strip_prefix(name))?;
    let kb: usize = rest.trim().trim_end_matches("kB").trim().parse().ok()?;
    kb.checked_mul(1024)
}

/// `bytes` for a message: "80.0 GB", "3.2 MB", "512 bytes".
pub fn show(bytes: usize) -> String {
    let b = bytes as f64;
    if b >= 1e9 {
        format!("{:.2} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.1} MB", b / 1e6)
    } else if b >= 1e3 {
        format!("{:.1} kB", b / 1e3)
    } else {
        format!("{bytes} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_fields_read_in_bytes() {
        let text = "MemTotal:       16384 kB\nMemFree:  1 kB\n";
        assert_eq!(meminfo_field(text, "MemTotal:"), Some(16384 * 1024));
        assert_eq!(meminfo_field(text, "Swap:"), None);
    }

    #[test]
    fn what_is_available_is_at_most_the_total() {
        if let (Some(total), Some(available)) = (total(), available()) {
            assert!(available <= total, "{available} > {total}");
        }
    }

    #[test]
    fn sizes_show_in_readable_units() {
        assert_eq!(show(80_000_000_000), "80.00 GB");
        assert_eq!(show(3_200_000), "3.2 MB");
        assert_eq!(show(512), "512 bytes");
    }
}
