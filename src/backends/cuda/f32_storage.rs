//! f32 storage on the device. A value the tape keeps in f32 storage
//! (`Instruction::single`, decided by `tape::storage`) is held as f32
//! numbers packed two per 8-byte slot of device memory
//! (`Datum::F32`): half the bytes written by the kernel making it and
//! read by its users. Elementwise kernels and groups, f32 matrix products
//! (sgemm) and the operations that move elements read and write it
//! directly; any other kernel gets its f32 operands widened first, and a
//! value such a kernel makes is narrowed after when the tape keeps it in
//! f32 storage ([`reads_as_stored`] decides). The numbers are f32 ones
//! either way, so the storage changes no result.

use crate::ir::TOp;
use crate::tape::Kernel;

/// Slots holding `len` f32 numbers.
pub fn slots(len: usize) -> usize {
    len.div_ceil(2)
}

/// The f32 numbers of slots, two per slot (low half first, as a
/// little-endian device lays out a `float` array).
pub fn unpacked(slots: &[f64]) -> Vec<f32> {
    slots
        .iter()
        .flat_map(|slot| {
            let bits = slot.to_bits();
            [
                f32::from_bits(bits as u32),
                f32::from_bits((bits >> 32) as u32),
            ]
        })
        .collect()
}

#[cfg(test)]
/// f32 numbers packed two per slot (the last slot's high half 0 for an
/// odd count).
pub fn packed(numbers: &[f32]) -> Vec<f64> {
    numbers
        .chunks(2)
        .map(|pair| {
            let low = u64::from(pair[0].to_bits());
            let high = pair.get(1).map_or(0, |x| u64::from(x.to_bits()));
            f64::from_bits(low | high << 32)
        })
        .collect()
}

/// Whether `kernel` runs on its operands as they are stored and makes its
/// value in the storage `single` asks for; otherwise f32 operands are
/// widened first and the result narrowed after where `single`.
/// `stored` says, per operand, whether it is in f32 storage.
pub fn reads_as_stored(kernel: &Kernel, stored: &[bool], single: bool) -> bool {
    let all_single = stored.iter().all(|&f| f);
    let none_single = !stored.iter().any(|&f| f);
    match kernel {
        // Any mix of operands; the result in either storage but a sum's.
        Kernel::Fused(group) => group.results.len() == 1 && !(single && group.sum_over.is_some()),
        Kernel::Op(op) if op.is_elementwise() => true,
        Kernel::Gemm { single: true, .. } => true,
        // Views and moves: the same storage in and out.
        Kernel::Op(
            TOp::Reshape(_)
            | TOp::StopGradient
            | TOp::Tag(_)
            | TOp::Linearized
            | TOp::Custom(_)
            | TOp::Transpose(_)
            | TOp::Broadcast(_)
            | TOp::Slice { .. }
            | TOp::Pad { .. }
            | TOp::Roll { .. }
            | TOp::Concat(_),
        ) => {
            if single {
                all_single && !stored.is_empty()
            } else {
                none_single
            }
        }
        _ => none_single && !single,
    }
}
