//! NumPy's `.npy` format, read for every number kind NumPy writes:
//! float64 and float32, the signed and unsigned integers of 8 to 64 bits,
//! and bool, in either byte order and in C or Fortran order (format
//! versions 1 to 3). Integers and bools become float64 numbers, or float32
//! when asked; an integer the asked type cannot hold exactly (past 2^53
//! for float64, 2^24 for float32) is an error, never a silently rounded
//! number. The sizes a header claims are checked against the bytes that
//! follow it before any memory is taken, so a damaged or hostile header is
//! an error, not a huge allocation. Complex arrays (`<c16`, `<c8`) are
//! read into their real and imaginary parts. Real arrays are written with
//! `ndarray-npy` (`<f8`, or `<f4` for float32), complex ones here (`<c16`,
//! `<c8`: the parts interleaved).

use ndarray::{ArrayD, IxDyn, ShapeBuilder};
use std::fmt;

/// The number kind of an array's elements, as its header's `descr` says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// IEEE floats of 4 or 8 bytes.
    Float(usize),
    /// Signed integers of 1, 2, 4 or 8 bytes.
    Int(usize),
    /// Unsigned integers of 1, 2, 4 or 8 bytes.
    Uint(usize),
    /// NumPy's bool: one byte, 0 or 1.
    Bool,
    /// Complex numbers of 8 or 16 bytes (two floats of half that).
    Complex(usize),
}

impl Kind {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Kind::Float(n) | Kind::Int(n) | Kind::Uint(n) | Kind::Complex(n) => n,
            Kind::Bool => 1,
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Kind::Float(n) => write!(f, "float{}", n * 8),
            Kind::Int(n) => write!(f, "int{}", n * 8),
            Kind::Uint(n) => write!(f, "uint{}", n * 8),
            Kind::Bool => write!(f, "bool"),
            Kind::Complex(n) => write!(f, "complex{}", n * 8),
        }
    }
}

/// The float type numbers are read into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// float32 arrays as float32, everything else as float64.
    Natural,
    /// Everything as float64.
    F64,
    /// Everything as float32 (float64 numbers rounded, as NumPy's
    /// `astype` does).
    F32,
}

/// An array read from a `.npy` file, in C (row-major) order.
#[derive(Clone, Debug, PartialEq)]
pub enum Array {
    /// float64 numbers.
    F64(ArrayD<f64>),
    /// float32 numbers.
    F32(ArrayD<f32>),
    /// complex128 numbers: the real parts and the imaginary parts.
    Complex128(ArrayD<f64>, ArrayD<f64>),
    /// complex64 numbers: the real parts and the imaginary parts.
    Complex64(ArrayD<f32>, ArrayD<f32>),
}

impl Array {
    /// The array's shape.
    pub fn shape(&self) -> &[usize] {
        match self {
            Array::F64(a) | Array::Complex128(a, _) => a.shape(),
            Array::F32(a) | Array::Complex64(a, _) => a.shape(),
        }
    }
}

/// What a header says.
#[derive(Clone, Debug, PartialEq)]
struct Header {
    kind: Kind,
    big_endian: bool,
    fortran_order: bool,
    shape: Vec<usize>,
}

const MAGIC: &[u8] = b"\x93NUMPY";

/// Reads the `.npy` bytes `bytes` into `target`'s float type, with the
/// kind the file stores; the error says what is wrong (the caller adds the
/// file's name).
pub fn read(bytes: &[u8], target: Target) -> Result<(Kind, Array), String> {
    let (header, data) = split(bytes)?;
    let data = checked_data(&header, data)?;
    let single = match target {
        Target::Natural => matches!(header.kind, Kind::Float(4) | Kind::Complex(8)),
        Target::F64 => false,
        Target::F32 => true,
    };
    if let Kind::Complex(size) = header.kind {
        let parts = Header {
            kind: Kind::Float(size / 2),
            ..header.clone()
        };
        let array = if single {
            let (re, im) = split_pairs(numbers::<f32>(&parts, data)?);
            Array::Complex64(arrange(&header, re)?, arrange(&header, im)?)
        } else {
            let (re, im) = split_pairs(numbers::<f64>(&parts, data)?);
            Array::Complex128(arrange(&header, re)?, arrange(&header, im)?)
        };
        return Ok((header.kind, array));
    }
    let array = if single {
        let numbers = numbers::<f32>(&header, data)?;
        arrange(&header, numbers).map(Array::F32)?
    } else {
        let numbers = numbers::<f64>(&header, data)?;
        arrange(&header, numbers).map(Array::F64)?
    };
    Ok((header.kind, array))
}

/// The integer a 0-dimensional integer or bool array holds, exactly;
/// `None` for any other array.
pub fn scalar_integer(bytes: &[u8]) -> Result<Option<i128>, String> {
    let (header, data) = split(bytes)?;
    if !header.shape.is_empty() || matches!(header.kind, Kind::Float(_)) {
        return Ok(None);
    }
    let data = checked_data(&header, data)?;
    Ok(Some(integer(&header, data)))
}

/// The data of exactly the elements the header's shape counts, after
/// checking that the file holds them.
fn checked_data<'a>(header: &Header, data: &'a [u8]) -> Result<&'a [u8], String> {
    let count = header
        .shape
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .ok_or_else(|| format!("its header's shape {:?} is too large", header.shape))?;
    let needed = count.checked_mul(header.kind.size());
    if needed.is_none_or(|needed| needed > data.len()) {
        return Err(format!(
            "its header's shape {} of {} needs {} bytes of data, and the file holds {}",
            shape_text(&header.shape),
            header.kind,
            needed.map_or_else(|| "more than 2^64".to_string(), |n| n.to_string()),
            data.len()
        ));
    }
    Ok(&data[..count * header.kind.size()])
}

/// Interleaved (real, imaginary) numbers as the real parts and the
/// imaginary parts.
fn split_pairs<T: Copy>(pairs: Vec<T>) -> (Vec<T>, Vec<T>) {
    let re = pairs.iter().step_by(2).copied().collect();
    let im = pairs.iter().skip(1).step_by(2).copied().collect();
    (re, im)
}

/// The `.npy` bytes of `array`: `<f8` for float64, `<f4` for float32,
/// `<c16` and `<c8` for complex numbers.
pub fn write(array: &Array) -> Result<Vec<u8>, String> {
    use ndarray_npy::WriteNpyExt;
    let mut bytes = Vec::new();
    match array {
        Array::F64(a) => a.write_npy(&mut bytes),
        Array::F32(a) => a.write_npy(&mut bytes),
        Array::Complex128(re, im) => {
            let mut data = Vec::with_capacity(16 * re.len());
            for (r, i) in re.iter().zip(im.iter()) {
                data.extend_from_slice(&r.to_le_bytes());
                data.extend_from_slice(&i.to_le_bytes());
            }
            return Ok(with_header("<c16", re.shape(), data));
        }
        Array::Complex64(re, im) => {
            let mut data = Vec::with_capacity(8 * re.len());
            for (r, i) in re.iter().zip(im.iter()) {
                data.extend_from_slice(&r.to_le_bytes());
                data.extend_from_slice(&i.to_le_bytes());
            }
            return Ok(with_header("<c8", re.shape(), data));
        }
    }
    .map_err(|err| err.to_string())?;
    Ok(bytes)
}

/// A version 1.0 `.npy` file of C-order `data` of kind `descr`: the
/// header padded with spaces so that the data starts at a multiple of 64
/// bytes, as NumPy writes it.
fn with_header(descr: &str, shape: &[usize], data: Vec<u8>) -> Vec<u8> {
    let mut header = format!(
        "{{'descr': '{descr}', 'fortran_order': False, 'shape': {}, }}",
        shape_text(shape)
    );
    let unpadded = MAGIC.len() + 2 + 2 + header.len() + 1;
    header.push_str(&" ".repeat(unpadded.next_multiple_of(64) - unpadded));
    header.push('\n');
    let mut bytes = Vec::with_capacity(MAGIC.len() + 4 + header.len() + data.len());
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&[1, 0]);
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend(data);
    bytes
}

/// `[3, 4]` as NumPy writes it: `(3, 4)`, `(3,)`, `()`.
fn shape_text(shape: &[usize]) -> String {
    match shape {
        [n] => format!("({n},)"),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The header and the data after it.
fn split(bytes: &[u8]) -> Result<(Header, &[u8]), String> {
    let not_npy = || "not a NumPy .npy file (no \\x93NUMPY at its start)".to_string();
    let rest = bytes.strip_prefix(MAGIC).ok_or_else(not_npy)?;
    let (&[major, _minor], rest) = rest.split_first_chunk::<2>().ok_or_else(not_npy)?;
    let (length, rest) = match major {
        1 => {
            let (length, rest) = rest
                .split_first_chunk::<2>()
                .ok_or("the file ends inside its header")?;
            (usize::from(u16::from_le_bytes(*length)), rest)
        }
        2 | 3 => {
            let (length, rest) = rest
                .split_first_chunk::<4>()
                .ok_or("the file ends inside its header")?;
            let length = u32::from_le_bytes(*length);
            (usize::try_from(length).unwrap_or(usize::MAX), rest)
        }
        other => return Err(format!("a .npy file of format version {other}, not 1 to 3")),
    };
    if length > rest.len() {
        return Err(format!(
            "its header claims {length} bytes, and the file holds {} after it",
            rest.len()
        ));
    }
    let (text, data) = rest.split_at(length);
    let text = std::str::from_utf8(text).map_err(|_| "its header is not text".to_string())?;
    Ok((parse_header(text)?, data))
}

/// A header's dictionary: `{'descr': '<f8', 'fortran_order': False,
/// 'shape': (3, 4), }`.
fn parse_header(text: &str) -> Result<Header, String> {
    let bad = |what: &str| format!("its header is not a .npy header ({what}): {}", text.trim());
    let mut scanner = Scanner { rest: text.trim() };
    scanner.expect('{').map_err(|()| bad("no {"))?;
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    while !scanner.eat('}') {
        let key = scanner
            .string()
            .ok_or_else(|| bad("a key is not a string"))?;
        scanner.expect(':').map_err(|()| bad("no : after a key"))?;
        match key.as_str() {
            "descr" => {
                descr = Some(scanner.string().ok_or_else(|| {
                    "its elements are records or objects, not numbers".to_string()
                })?);
            }
            "fortran_order" => {
                fortran = Some(match scanner.word() {
                    "True" => true,
                    "False" => false,
                    _ => return Err(bad("fortran_order is not True or False")),
                });
            }
            "shape" => shape = Some(scanner.tuple().ok_or_else(|| bad("a bad shape"))?),
            _ => return Err(bad(&format!("an unknown key {key}"))),
        }
        if !scanner.eat(',') {
            scanner
                .expect('}')
                .map_err(|()| bad("no , or } after a value"))?;
            break;
        }
    }
    let (Some(descr), Some(fortran_order), Some(shape)) = (descr, fortran, shape) else {
        return Err(bad("descr, fortran_order or shape missing"));
    };
    let (kind, big_endian) = parse_descr(&descr)?;
    let limit = crate::ir::shape::MAX_RANK;
    if shape.len() > limit {
        return Err(format!(
            "its header's shape has {} axes; a tensor may have at most {limit}",
            shape.len()
        ));
    }
    Ok(Header {
        kind,
        big_endian,
        fortran_order,
        shape,
    })
}

/// `'<f8'` as float64, little-endian; other kinds are an error naming them.
fn parse_descr(descr: &str) -> Result<(Kind, bool), String> {
    let (order, code) = match descr.as_bytes().first() {
        Some(b'<' | b'|' | b'=') => (false, &descr[1..]),
        Some(b'>') => (true, &descr[1..]),
        _ => (false, descr),
    };
    let unsupported = || {
        format!(
            "its elements are {descr} (NumPy's dtype code); .npy files of float32, float64, \
             complex64, complex128, integers and bool are read"
        )
    };
    let (letter, size) = code.split_at_checked(1).ok_or_else(unsupported)?;
    let size: usize = size.parse().map_err(|_| unsupported())?;
    let kind = match (letter, size) {
        ("f", 4 | 8) => Kind::Float(size),
        ("i", 1 | 2 | 4 | 8) => Kind::Int(size),
        ("u", 1 | 2 | 4 | 8) => Kind::Uint(size),
        ("b", 1) => Kind::Bool,
        ("c", 8 | 16) => Kind::Complex(size),
        _ => return Err(unsupported()),
    };
    let element = match kind {
        Kind::Complex(n) => n / 2,
        _ => size,
    };
    Ok((kind, order && element > 1))
}

/// A float type numbers are read into.
trait Float: Copy {
    const NAME: &'static str;
    fn of_f64(x: f64) -> Self;
    fn of_f32(x: f32) -> Self;
    /// The integer `n` exactly, or `None` when this type cannot hold it.
    fn of_integer(n: i128) -> Option<Self>;
}

impl Float for f64 {
    const NAME: &'static str = "float64";
    fn of_f64(x: f64) -> Self {
        x
    }
    fn of_f32(x: f32) -> Self {
        f64::from(x)
    }
    fn of_integer(n: i128) -> Option<Self> {
        let x = n as f64;
        (x as i128 == n).then_some(x)
    }
}

impl Float for f32 {
    const NAME: &'static str = "float32";
    fn of_f64(x: f64) -> Self {
        x as f32
    }
    fn of_f32(x: f32) -> Self {
        x
    }
    fn of_integer(n: i128) -> Option<Self> {
        let x = n as f32;
        (x as i128 == n).then_some(x)
    }
}

/// The elements of `data` (exactly the header's count) as `T`s, in the
/// file's order.
fn numbers<T: Float>(header: &Header, data: &[u8]) -> Result<Vec<T>, String> {
    let size = header.kind.size();
    let mut out = Vec::new();
    out.try_reserve_exact(data.len() / size)
        .map_err(|_| format!("no memory for its {} numbers", data.len() / size))?;
    for chunk in data.chunks_exact(size) {
        let integer = match header.kind {
            Kind::Float(8) => {
                out.push(T::of_f64(f64::from_bits(word(header, chunk))));
                continue;
            }
            Kind::Float(_) => {
                out.push(T::of_f32(f32::from_bits(word(header, chunk) as u32)));
                continue;
            }
            _ => integer(header, chunk),
        };
        out.push(T::of_integer(integer).ok_or_else(|| {
            format!(
                "it holds the {} {integer}, which {} cannot represent exactly",
                header.kind,
                T::NAME
            )
        })?);
    }
    Ok(out)
}

/// The bits of one element, in the file's byte order.
fn word(header: &Header, chunk: &[u8]) -> u64 {
    let size = chunk.len();
    let mut bytes = [0u8; 8];
    if header.big_endian {
        bytes[8 - size..].copy_from_slice(chunk);
        u64::from_be_bytes(bytes)
    } else {
        bytes[..size].copy_from_slice(chunk);
        u64::from_le_bytes(bytes)
    }
}

/// One element of an integer or bool array (`chunk`, its bytes).
fn integer(header: &Header, chunk: &[u8]) -> i128 {
    let bits = word(header, chunk);
    match header.kind {
        Kind::Bool => i128::from(bits != 0),
        // Sign-extended from its width.
        Kind::Int(n) => {
            let unused = 64 - 8 * n as u32;
            i128::from(((bits << unused) as i64) >> unused)
        }
        _ => i128::from(bits),
    }
}

/// `numbers` shaped as the header says, in C order.
fn arrange<T: Float>(header: &Header, numbers: Vec<T>) -> Result<ArrayD<T>, String> {
    let shape = IxDyn(&header.shape);
    let array = if header.fortran_order {
        ArrayD::from_shape_vec(shape.f(), numbers).map(|a| a.as_standard_layout().into_owned())
    } else {
        ArrayD::from_shape_vec(shape, numbers)
    };
    array.map_err(|err| format!("its shape {}: {err}", shape_text(&header.shape)))
}

/// Reads the pieces of a header's Python literal.
struct Scanner<'a> {
    rest: &'a str,
}

impl Scanner<'_> {
    fn skip_space(&mut self) {
        self.rest = self.rest.trim_start();
    }

    /// Takes `c` if it comes next.
    fn eat(&mut self, c: char) -> bool {
        self.skip_space();
        match self.rest.strip_prefix(c) {
            Some(rest) => {
                self.rest = rest;
                true
            }
            None => false,
        }
    }

    fn expect(&mut self, c: char) -> Result<(), ()> {
        if self.eat(c) { Ok(()) } else { Err(()) }
    }

    /// A quoted string ('...' or "..."), without escapes.
    fn string(&mut self) -> Option<String> {
        self.skip_space();
        let quote = self
            .rest
            .chars()
            .next()
            .filter(|c| *c == '\'' || *c == '"')?;
        let body = &self.rest[1..];
        let end = body.find(quote)?;
        self.rest = &body[end + 1..];
        Some(body[..end].to_string())
    }

    /// A bare word (`True`, `False`).
    fn word(&mut self) -> &str {
        self.skip_space();
        let end = self
            .rest
            .find(|c: char| !c.is_ascii_alphanumeric() && c != '_')
            .unwrap_or(self.rest.len());
        let (word, rest) = self.rest.split_at(end);
        self.rest = rest;
        word
    }

    /// A tuple of sizes: `()`, `(3,)`, `(3, 4)`.
    fn tuple(&mut self) -> Option<Vec<usize>> {
        if !self.eat('(') {
            return None;
        }
        let mut sizes = Vec::new();
        loop {
            if self.eat(')') {
                return Some(sizes);
            }
            // Python 2 wrote long sizes as 3L.
            let digits = self.word().trim_end_matches('L');
            sizes.push(digits.parse().ok()?);
            if !self.eat(',') {
                return self.eat(')').then_some(sizes);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A version 1.0 file with `header` and `data`.
    fn file(header: &str, data: &[u8]) -> Vec<u8> {
        let mut bytes = MAGIC.to_vec();
        bytes.extend([1, 0]);
        bytes.extend((header.len() as u16).to_le_bytes());
        bytes.extend(header.as_bytes());
        bytes.extend(data);
        bytes
    }

    #[test]
    fn integer_kinds_byte_orders_and_fortran_order() {
        let bytes = file(
            "{'descr': '>i2', 'fortran_order': True, 'shape': (2, 2), }",
            &[0xff, 0xfe, 0, 1, 0, 2, 0x80, 0],
        );
        let (Kind::Int(2), Array::F64(a)) = read(&bytes, Target::Natural).unwrap() else {
            panic!()
        };
        // Column-major [-2, 1, 2, -32768]: rows (-2, 2) and (1, -32768).
        assert_eq!(
            a.iter().copied().collect::<Vec<_>>(),
            [-2.0, 2.0, 1.0, -32768.0]
        );
        let bytes = file(
            "{'descr': '|b1', 'fortran_order': False, 'shape': (3,)}",
            &[1, 0, 1],
        );
        let (Kind::Bool, Array::F32(b)) = read(&bytes, Target::F32).unwrap() else {
            panic!()
        };
        assert_eq!(b.iter().copied().collect::<Vec<_>>(), [1.0, 0.0, 1.0]);
        let big = ((1u64 << 53) + 1).to_le_bytes();
        let bytes = file(
            "{'descr': '<u8', 'fortran_order': False, 'shape': (1,)}",
            &big,
        );
        let error = read(&bytes, Target::Natural).unwrap_err();
        assert!(
            error.contains("uint64 9007199254740993, which float64"),
            "{error}"
        );
    }

    #[test]
    fn complex_arrays_read_in_either_order_and_byte_order_and_write_back() {
        // [[1+2i, 3+4i], [5+6i, 7+8i]] in Fortran order, big-endian.
        let mut data = Vec::new();
        for x in [1.0f64, 2.0, 5.0, 6.0, 3.0, 4.0, 7.0, 8.0] {
            data.extend_from_slice(&x.to_be_bytes());
        }
        let bytes = file(
            "{'descr': '>c16', 'fortran_order': True, 'shape': (2, 2), }",
            &data,
        );
        let (kind, array) = read(&bytes, Target::Natural).unwrap();
        assert_eq!(kind, Kind::Complex(16));
        let Array::Complex128(re, im) = &array else {
            panic!("{array:?}");
        };
        assert_eq!(re.iter().copied().collect::<Vec<_>>(), [1.0, 3.0, 5.0, 7.0]);
        assert_eq!(im.iter().copied().collect::<Vec<_>>(), [2.0, 4.0, 6.0, 8.0]);
        let written = write(&array).unwrap();
        // The data (64 bytes) starts at a multiple of 64, as NumPy aligns it.
        let start = written.len() - 64;
        assert_eq!(start % 64, 0);
        assert_eq!(&written[start..], {
            let mut expected = Vec::new();
            for x in [1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0] {
                expected.extend_from_slice(&x.to_le_bytes());
            }
            expected
        });
        assert_eq!(read(&written, Target::Natural).unwrap().1, array);
        // complex64 stays single precision; F64 widens it.
        let single = Array::Complex64(
            ArrayD::from_shape_vec(IxDyn(&[2]), vec![0.5f32, -1.5]).unwrap(),
            ArrayD::from_shape_vec(IxDyn(&[2]), vec![2.0f32, 0.25]).unwrap(),
        );
        let bytes = write(&single).unwrap();
        assert_eq!(
            read(&bytes, Target::Natural).unwrap(),
            (Kind::Complex(8), single)
        );
        let (_, wide) = read(&bytes, Target::F64).unwrap();
        assert!(matches!(wide, Array::Complex128(..)), "{wide:?}");
    }

    #[test]
    fn claimed_sizes_are_checked_before_allocating() {
        let bytes = file(
            "{'descr': '<f8', 'fortran_order': False, 'shape': (4000000000,), }",
            &[0; 16],
        );
        let error = read(&bytes, Target::Natural).unwrap_err();
        assert!(
            error.contains("(4000000000,) of float64 needs 32000000000 bytes"),
            "{error}"
        );
        let bytes = file(
            "{'descr': '<U4', 'fortran_order': False, 'shape': (1,)}",
            &[0; 16],
        );
        assert!(read(&bytes, Target::Natural).unwrap_err().contains("<U4"));
        assert!(
            read(b"\x93NUMPY\x01\x00\xff\xff{", Target::F64)
                .unwrap_err()
                .contains("claims 65535")
        );
    }
}
