//! What a device did, counted per thread (a thread runs its tapes on its
//! own device handle): kernel launches, library calls, graph launches,
//! programs planned and the host time planning took, bytes copied each
//! way, and the device memory held. `(device-stats)` shows and restarts
//! the counts. Without a device every count stays zero.

use std::cell::Cell;
use std::time::Duration;

/// Counts since the last [`take`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceStats {
    /// Kernels launched one by one.
    pub kernel_launches: u64,
    /// Calls of device libraries (cuBLAS, cuSOLVER).
    pub library_calls: u64,
    /// CUDA graphs launched (each runs many kernels).
    pub graph_launches: u64,
    /// Device programs planned (a tape's first run for the kinds of its
    /// inputs).
    pub programs_planned: u64,
    /// Host time spent planning them.
    pub planning: Duration,
    /// Bytes copied from the host to the device.
    pub bytes_to_device: u64,
    /// Bytes copied from the device to the host.
    pub bytes_to_host: u64,
    /// Device memory held now (in use and kept for reuse), in bytes.
    pub memory_held: u64,
}

thread_local! {
    static COUNTS: Cell<DeviceStats> = Cell::new(DeviceStats::default());
}

fn update(change: impl FnOnce(&mut DeviceStats)) {
    COUNTS.with(|counts| {
        let mut stats = counts.get();
        change(&mut stats);
        counts.set(stats);
    });
}

/// A kernel was launched.
pub fn launched() {
    update(|s| s.kernel_launches += 1);
}

/// A device library was called.
pub fn library_call() {
    update(|s| s.library_calls += 1);
}

/// A CUDA graph was launched.
pub fn graph_launched() {
    update(|s| s.graph_launches += 1);
}

/// A program was planned in `took`.
pub fn planned(took: Duration) {
    update(|s| {
        s.programs_planned += 1;
        s.planning += took;
    });
}

/// `bytes` were copied to the device.
pub fn uploaded(bytes: usize) {
    update(|s| s.bytes_to_device += bytes as u64);
}

/// `bytes` were copied to the host.
pub fn downloaded(bytes: usize) {
    update(|s| s.bytes_to_host += bytes as u64);
}

/// The device now holds `bytes` of memory.
pub fn holding(bytes: usize) {
    update(|s| s.memory_held = bytes as u64);
}

/// The counts since the last call (the memory held is kept: it is a
/// level, not a count).
pub fn take() -> DeviceStats {
    COUNTS.with(|counts| {
        let stats = counts.get();
        counts.set(DeviceStats {
            memory_held: stats.memory_held,
            ..DeviceStats::default()
        });
        stats
    })
}
