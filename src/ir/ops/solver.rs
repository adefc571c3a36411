//! Dense linear algebra on a device: how an operation of the table runs
//! as routines of the device's solver library (cuSOLVER and cuBLAS on
//! CUDA) together with small kernels that prepare their operands and
//! finish their results, so that no matrix goes to the host and back.
//!
//! An operation says so with [`DeviceSolve`]: scratch buffers, then steps
//! in order, each reading and writing buffers named by [`Slot`]. The
//! routines ([`Routine`]) follow LAPACK's column-major definitions over a
//! batch of matrices stored one after another; a row-major matrix is read
//! by them as its transpose, which the recipes use rather than copy.
//! Integers a routine writes (pivots, error codes) are 32-bit, two to an
//! 8-byte slot, the lower half first ([`int_slots`], [`read_ints`]).
//!
//! A routine's failure (a matrix not positive definite, singular, an
//! iteration that did not converge) and the kernels' input checks are
//! codes written on the device; [`Step::Check`] names them and
//! [`Failure`] turns a code into the message the CPU kernel gives for the
//! same input, so an error reads the same on every backend. Executors
//! read the codes once the work is queued, not between steps.

use super::CudaKernel;
use smallvec::SmallVec;

/// A buffer a step reads or writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    /// The operation's operand `k` (read only).
    Operand(u8),
    /// The operation's result.
    Out,
    /// Scratch buffer `k` of [`DeviceSolve::scratch`].
    Scratch(u8),
}

/// One step of a device solve.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// A kernel with the usual parameters (`n`, the operands, the
    /// output), `reads` its operands and `writes` its output. A kernel
    /// whose [`CudaKernel::zeroed`] is set starts from zeros.
    Kernel {
        /// The kernel.
        kernel: CudaKernel,
        /// Its operands, in parameter order.
        reads: SmallVec<[Slot; 3]>,
        /// Its output.
        writes: Slot,
    },
    /// `len` numbers of `from`, from position `at`, copied to the start
    /// of `to`.
    Copy {
        /// The source.
        from: Slot,
        /// Where in it.
        at: usize,
        /// The destination.
        to: Slot,
        /// How many numbers.
        len: usize,
    },
    /// The row-major products `out = a b` of `batch` pairs of `n x n`
    /// matrices (one batched `gemm`).
    Product {
        /// The left factors.
        a: Slot,
        /// The right factors.
        b: Slot,
        /// The products.
        out: Slot,
        /// The side.
        n: usize,
        /// How many products.
        batch: usize,
    },
    /// A routine of the solver library (see [`Routine`] for what each
    /// reads and writes).
    Routine {
        /// The routine.
        routine: Routine,
        /// What it reads.
        reads: SmallVec<[Slot; 2]>,
        /// What it writes, in place.
        writes: SmallVec<[Slot; 5]>,
    },
    /// Codes in `codes` (`count` records of [`Failure::slots`] each) that
    /// are an error when not zero.
    Check {
        /// The buffer holding the codes.
        codes: Slot,
        /// How many records (matrices).
        count: usize,
        /// What a code means.
        failure: Failure,
    },
}

/// An operation as device work: scratch buffers (sizes in 8-byte slots)
/// and the steps that fill the result.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct DeviceSolve {
    /// The scratch buffers' sizes.
    pub scratch: Vec<usize>,
    /// The steps, in order.
    pub steps: Vec<Step>,
}

impl DeviceSolve {
    /// A new scratch buffer of `len` slots.
    pub fn scratch(&mut self, len: usize) -> Slot {
        self.scratch.push(len.max(1));
        Slot::Scratch((self.scratch.len() - 1) as u8)
    }

    /// Appends a kernel.
    pub fn kernel(&mut self, kernel: CudaKernel, reads: &[Slot], writes: Slot) {
        self.steps.push(Step::Kernel {
            kernel,
            reads: reads.iter().copied().collect(),
            writes,
        });
    }

    /// Appends a routine.
    pub fn routine(&mut self, routine: Routine, reads: &[Slot], writes: &[Slot]) {
        self.steps.push(Step::Routine {
            routine,
            reads: reads.iter().copied().collect(),
            writes: writes.iter().copied().collect(),
        });
    }

    /// Appends the products `out = a b` of `batch` pairs of `n x n`
    /// matrices.
    pub fn product(&mut self, a: Slot, b: Slot, out: Slot, n: usize, batch: usize) {
        self.steps.push(Step::Product {
            a,
            b,
            out,
            n,
            batch,
        });
    }

    /// Appends a copy of the first `len` numbers of `from`.
    pub fn copy(&mut self, from: Slot, to: Slot, len: usize) {
        self.copy_from(from, 0, to, len);
    }

    /// Appends a copy of `len` numbers of `from` from position `at`.
    pub fn copy_from(&mut self, from: Slot, at: usize, to: Slot, len: usize) {
        self.steps.push(Step::Copy { from, at, to, len });
    }

    /// Appends the steps of `inner` (an operation's device work on
    /// `operand`) with its result in a new scratch buffer of `len`
    /// numbers, which is returned.
    pub fn embed(&mut self, inner: DeviceSolve, operand: Slot, len: usize) -> Slot {
        let base = self.scratch.len() as u8;
        self.scratch.extend(inner.scratch);
        let out = self.scratch(len);
        let map = |slot: Slot| match slot {
            Slot::Operand(_) => operand,
            Slot::Out => out,
            Slot::Scratch(k) => Slot::Scratch(base + k),
        };
        for step in inner.steps {
            self.steps.push(match step {
                Step::Kernel {
                    kernel,
                    reads,
                    writes,
                } => Step::Kernel {
                    kernel,
                    reads: reads.into_iter().map(map).collect(),
                    writes: map(writes),
                },
                Step::Product {
                    a,
                    b,
                    out,
                    n,
                    batch,
                } => Step::Product {
                    a: map(a),
                    b: map(b),
                    out: map(out),
                    n,
                    batch,
                },
                Step::Copy { from, at, to, len } => Step::Copy {
                    from: map(from),
                    at,
                    to: map(to),
                    len,
                },
                Step::Routine {
                    routine,
                    reads,
                    writes,
                } => Step::Routine {
                    routine,
                    reads: reads.into_iter().map(map).collect(),
                    writes: writes.into_iter().map(map).collect(),
                },
                Step::Check {
                    codes,
                    count,
                    failure,
                } => Step::Check {
                    codes: map(codes),
                    count,
                    failure,
                },
            });
        }
        out
    }

    /// Appends a check.
    pub fn check(&mut self, codes: Slot, count: usize, failure: Failure) {
        self.steps.push(Step::Check {
            codes,
            count,
            failure,
        });
    }

    /// The number of routine calls.
    pub fn routines(&self) -> usize {
        self.steps
            .iter()
            .filter(|s| matches!(s, Step::Routine { .. }))
            .count()
    }
}

/// A routine of a dense solver library, over `batch` column-major
/// matrices stored one after another (leading dimension = rows).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Routine {
    /// `potrf`: writes `[a, info]`. Each `n x n` matrix of `a` is factored
    /// in place, `a = uᵀu` in its upper triangle when `upper` (else
    /// `a = l lᵀ` in its lower triangle); the other triangle is not
    /// defined after (the batched routine uses it as workspace). `info`: 0, or `i` when the leading `i x i` block is not
    /// positive definite.
    Cholesky {
        /// The side.
        n: usize,
        /// How many matrices.
        batch: usize,
        /// Factor the upper triangle.
        upper: bool,
    },
    /// `getrf`: writes `[a, pivots, info]`. Each `n x n` matrix in place
    /// as `p l u` with partial pivoting; `pivots`: `n` 1-based row
    /// interchanges per matrix; `info`: 0, or `i` when `u[i-1, i-1]` is
    /// exactly zero.
    Lu {
        /// The side.
        n: usize,
        /// How many matrices.
        batch: usize,
    },
    /// `getrs`: reads `[lu, pivots]` (from [`Routine::Lu`]), writes
    /// `[b, info]`: each `n x nrhs` matrix of `b` replaced by the solution
    /// of `a x = b` (`aᵀ x = b` when `transpose`). With `shared`, one
    /// factorization serves every right-hand side.
    LuSolve {
        /// The side.
        n: usize,
        /// Columns of each right-hand side.
        nrhs: usize,
        /// How many right-hand sides.
        batch: usize,
        /// Solve with the transpose.
        transpose: bool,
        /// One factored matrix for the whole batch.
        shared: bool,
    },
    /// `trsm` from the right: reads `[a]`, writes `[b]`: each `m x n`
    /// matrix of `b` replaced by `x` with `x op(a) = b`, `op(a)` = `a` or
    /// `aᵀ`, `a` an `n x n` triangle (`upper` or lower, the other triangle
    /// not read). With `shared`, one `a` serves every `b`.
    TriangularSolve {
        /// Rows of each `b`.
        m: usize,
        /// The triangle's side.
        n: usize,
        /// How many right-hand sides.
        batch: usize,
        /// `a` is upper triangular.
        upper: bool,
        /// Solve with `aᵀ`.
        transpose: bool,
        /// One `a` for the whole batch.
        shared: bool,
    },
    /// `geqrf`: writes `[a, tau, info]`: each `m x n` matrix in place as
    /// `r` (upper triangle) and Householder vectors (below), `tau`:
    /// `min(m, n)` scalars per matrix.
    Qr {
        /// Rows.
        m: usize,
        /// Columns.
        n: usize,
        /// How many matrices.
        batch: usize,
    },
    /// `orgqr`: reads `[tau]`, writes `[a, info]`: the first `min(m, n)`
    /// columns of each `m x n` matrix of `a` (as [`Routine::Qr`] left it)
    /// replaced by those of `q`.
    QrBasis {
        /// Rows.
        m: usize,
        /// Columns.
        n: usize,
        /// How many matrices.
        batch: usize,
    },
    /// `syevd`: writes `[a, w, info]`: the eigenvalues of each symmetric
    /// `n x n` matrix (its lower triangle is read) in ascending order into
    /// `w`, its eigenvectors as the columns of `a`; `info`: 0, or not when
    /// the iteration did not converge.
    Eigh {
        /// The side.
        n: usize,
        /// How many matrices.
        batch: usize,
    },
    /// `gesvd` (thin): for `m >= n`, writes `[a, s, u, vt, info]`: each
    /// `m x n` matrix of `a` (destroyed) as `u diag(s) vt`, `s` in
    /// descending order, `u` `m x n`, `vt` `n x n`; `info`: 0, or not
    /// when the iteration did not converge.
    Svd {
        /// Rows (at least `n`).
        m: usize,
        /// Columns.
        n: usize,
        /// How many matrices.
        batch: usize,
    },
    /// A discrete Fourier transform (cuFFT's `Z2Z`, unnormalized), in
    /// place: writes `[x]`, complex numbers as interleaved pairs laid out
    /// `[outer, len, inner]`; each of the `outer * inner` lines of `len`
    /// numbers (`inner` apart) is transformed, forward (`e^(-2 pi i jk/n)`)
    /// or `backward` (`e^(+2 pi i jk/n)`). Not column-major matrices: the
    /// routine of the FFT library rather than the solver's.
    Fft {
        /// The transform's length.
        len: usize,
        /// Numbers between consecutive elements of a line.
        inner: usize,
        /// Blocks of `len * inner` numbers.
        outer: usize,
        /// The backward transform.
        backward: bool,
    },
}

impl Routine {
    /// How many buffers it writes.
    pub fn writes(&self) -> usize {
        match self {
            Routine::TriangularSolve { .. } | Routine::Fft { .. } => 1,
            Routine::Cholesky { .. } | Routine::LuSolve { .. } | Routine::QrBasis { .. } => 2,
            Routine::Lu { .. } | Routine::Qr { .. } | Routine::Eigh { .. } => 3,
            Routine::Svd { .. } => 5,
        }
    }
}

/// What a non-zero code of a [`Step::Check`] means, and its message: the
/// CPU kernel's message for the same input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// A NaN or infinite entry (any non-zero code).
    NotFinite,
    /// `potrf`'s `info`.
    NotPositiveDefinite,
    /// `getrf`'s `info`: a zero pivot.
    Singular,
    /// A zero diagonal entry of a triangle: the code is its index + 1.
    SingularTriangle,
    /// An iteration that did not converge; the text names it.
    NotConverged(&'static str),
    /// `getrf`'s `info` for the denominator of `matrix-exp`'s Padé
    /// approximant.
    PadeSingular,
    /// A position out of range or not whole, along an axis of `len`
    /// elements: two numbers (the position's index + 1 or 0, the
    /// position), written by [`position_check`].
    BadIndex {
        /// The axis's length.
        len: usize,
    },
    /// A rank-deficient triangular factor: three numbers per matrix (the
    /// diagonal index + 1 or 0, the entry, the tolerance), as doubles.
    RankDeficient,
}

impl Failure {
    /// The 8-byte slots each record takes in the codes buffer, for
    /// `count` records.
    pub fn slots(&self, count: usize) -> usize {
        match self {
            Failure::RankDeficient => 3 * count,
            Failure::BadIndex { .. } => 2 * count,
            _ => int_slots(count),
        }
    }

    /// The error of the first failing record among `codes` (`count` of
    /// them), labelled with its matrix when there are several, as the CPU
    /// kernels label it.
    pub fn error(&self, codes: &[f64], count: usize) -> Option<super::OpError> {
        let (b, message) = match self {
            Failure::BadIndex { len } => {
                let (index, k) = (codes.first()?, codes.get(1)?);
                if *index == 0.0 {
                    return None;
                }
                let message = if k.fract() != 0.0 || !k.is_finite() {
                    format!("index {k} is not a whole number")
                } else {
                    format!("index {k} is out of range for an axis of length {len}")
                };
                return Some(super::OpError::new(message));
            }
            Failure::RankDeficient => (0..count).find_map(|b| {
                let record = codes.get(3 * b..3 * b + 3)?;
                let index = record[0];
                (index != 0.0).then(|| {
                    (b, format!(
                        "the matrix is rank deficient: diagonal entry {} of its triangular factor R is {:e}, not above the tolerance {:e}",
                        index as i64 - 1,
                        record[1],
                        record[2]
                    ))
                })
            })?,
            _ => {
                let ints = read_ints(codes, count);
                let (b, code) = ints.iter().enumerate().find(|(_, c)| **c != 0)?;
                (b, self.message(*code))
            }
        };
        Some(super::OpError::new(if count > 1 {
            format!("{message} (matrix {b} of the batch)")
        } else {
            message
        }))
    }

    fn message(&self, code: i32) -> String {
        match self {
            Failure::NotFinite => "the matrix has a NaN or an infinite entry".to_string(),
            Failure::NotPositiveDefinite => {
                let index = code - 1;
                format!(
                    "the matrix is not positive definite (pivot {index}: the leading {code} x {code} block is not)"
                )
            }
            Failure::Singular => format!(
                "the matrix is singular (pivot {} of its LU factorization is zero)",
                code - 1
            ),
            Failure::SingularTriangle => format!(
                "the matrix is singular (diagonal entry {} is zero)",
                code - 1
            ),
            Failure::NotConverged(what) => format!("the {what} iteration did not converge"),
            Failure::PadeSingular => format!(
                "the Padé denominator is singular (pivot {}); the matrix is too large to exponentiate",
                code - 1
            ),
            Failure::RankDeficient => "the matrix is rank deficient".to_string(),
            Failure::BadIndex { len } => {
                format!("an index is out of range for an axis of length {len}")
            }
        }
    }
}

/// A kernel finding the first of `count` positions (`idx`, row-major)
/// that is not a whole number in `-len..len` (negative ones counting from
/// the end): one block of 256 threads, each scanning every 256th
/// position, the smallest found by a reduction in shared memory. It
/// writes the position's index + 1 (0: none) and the position, the
/// record of [`Failure::BadIndex`].
pub fn position_check(count: usize, len: usize) -> CudaKernel {
    CudaKernel {
        name: "position_check",
        source: format!(
            "extern \"C\" __global__ void position_check(long long n, const double* idx, double* out) {{
    __shared__ long long first[256];
    long long t = threadIdx.x, mine = {count}LL;
    for (long long j = t; j < {count}LL; j += 256) {{
        double k = idx[j];
        double at = k < 0.0 ? k + {len}.0 : k;
        if (!(isfinite(k) && k == floor(k) && at >= 0.0 && at < {len}.0)) {{ mine = j; break; }}
    }}
    first[t] = mine;
    __syncthreads();
    for (long long half = 128; half > 0; half /= 2) {{
        if (t < half && first[t + half] < first[t]) first[t] = first[t + half];
        __syncthreads();
    }}
    if (t == 0) {{
        long long j = first[0];
        out[0] = j < {count}LL ? (double)(j + 1) : 0.0;
        out[1] = j < {count}LL ? idx[j] : 0.0;
    }}
}}
"
        ),
        threads: 256,
        zeroed: false,
        copy_first: false,
    }
}

/// The 8-byte slots holding `count` 32-bit integers.
pub fn int_slots(count: usize) -> usize {
    count.div_ceil(2).max(1)
}

/// The first `count` 32-bit integers packed in `slots` (two per slot,
/// the lower half first).
pub fn read_ints(slots: &[f64], count: usize) -> Vec<i32> {
    (0..count)
        .map(|k| {
            let bits = slots.get(k / 2).map_or(0, |x| x.to_bits());
            (if k % 2 == 0 { bits } else { bits >> 32 }) as u32 as i32
        })
        .collect()
}

/// `ints` packed two per slot into `slots` (which must be long enough).
pub fn write_ints(slots: &mut [f64], ints: &[i32]) {
    for (k, &x) in ints.iter().enumerate() {
        let old = slots[k / 2].to_bits();
        let x = u64::from(x as u32);
        let bits = if k % 2 == 0 {
            (old & 0xFFFF_FFFF_0000_0000) | x
        } else {
            (old & 0x0000_0000_FFFF_FFFF) | (x << 32)
        };
        slots[k / 2] = f64::from_bits(bits);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_pack_two_to_a_slot_lower_half_first() {
        let mut slots = vec![0.0; 2];
        write_ints(&mut slots, &[3, -1, 7]);
        assert_eq!(read_ints(&slots, 3), vec![3, -1, 7]);
        assert_eq!(slots[0].to_bits() & 0xFFFF_FFFF, 3);
        assert_eq!(slots[1].to_bits(), 7);
    }

    #[test]
    fn a_failure_names_the_first_failing_matrix_of_a_batch() {
        let mut slots = vec![0.0; 2];
        write_ints(&mut slots, &[0, 0, 3]);
        let e = Failure::NotPositiveDefinite.error(&slots, 3).unwrap();
        assert_eq!(
            e.message,
            "the matrix is not positive definite (pivot 2: the leading 3 x 3 block is not) (matrix 2 of the batch)"
        );
        assert!(Failure::Singular.error(&[0.0], 1).is_none());
        let e = Failure::RankDeficient.error(&[0.0, 0.0, 0.0, 2.0, 1e-20, 1e-15], 2);
        assert!(
            e.unwrap()
                .message
                .contains("diagonal entry 1 of its triangular factor R is 1e-20")
        );
    }
}
