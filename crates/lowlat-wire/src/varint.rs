//! QUIC variable-length integers (RFC 9000 §16): 1, 2, 4 or 8 bytes, the two high bits of the
//! first byte giving the length.

use crate::{Reader, WireError};

/// The largest value a varint holds (2^62 - 1).
pub const MAX: u64 = (1 << 62) - 1;

/// Bytes `v` takes.
pub fn len(v: u64) -> usize {
    match v {
        0..=63 => 1,
        64..=16_383 => 2,
        16_384..=1_073_741_823 => 4,
        _ => 8,
    }
}

/// Appends `v`; values above [`MAX`] are an error.
pub fn write(v: u64, out: &mut Vec<u8>) -> Result<(), WireError> {
    match len(v) {
        1 => out.push(v as u8),
        2 => out.extend_from_slice(&((v as u16) | 0x4000).to_be_bytes()),
        4 => out.extend_from_slice(&((v as u32) | 0x8000_0000).to_be_bytes()),
        _ if v <= MAX => out.extend_from_slice(&(v | 0xc000_0000_0000_0000).to_be_bytes()),
        _ => return Err(WireError::Invalid("varint above 2^62 - 1")),
    }
    Ok(())
}

/// Reads one varint.
pub(crate) fn read(r: &mut Reader<'_>) -> Result<u64, WireError> {
    let first = r.u8()?;
    let extra = (1usize << (first >> 6)) - 1;
    let mut v = u64::from(first & 0x3f);
    for &b in r.take(extra)? {
        v = (v << 8) | u64::from(b);
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc9000_appendix_a1_examples() {
        // RFC 9000 §A.1: 0xc2197c5eff14e88c = 151288809941952652, 0x9d7f3e7d = 494878333,
        // 0x7bbd = 15293, 0x25 = 37 (and 0x4025 = 37 too).
        let cases: [(&[u8], u64); 5] = [
            (&[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c], 151_288_809_941_952_652),
            (&[0x9d, 0x7f, 0x3e, 0x7d], 494_878_333),
            (&[0x7b, 0xbd], 15_293),
            (&[0x25], 37),
            (&[0x40, 0x25], 37),
        ];
        for (bytes, v) in cases {
            assert_eq!(read(&mut Reader::new(bytes)).unwrap(), v);
        }
        for v in [0, 63, 64, 16_383, 16_384, 1 << 30, MAX] {
            let mut out = Vec::new();
            write(v, &mut out).unwrap();
            assert_eq!(out.len(), len(v));
            assert_eq!(read(&mut Reader::new(&out)).unwrap(), v);
        }
        assert!(write(MAX + 1, &mut Vec::new()).is_err());
        assert!(read(&mut Reader::new(&[0x9d, 0x7f])).is_err());
    }
}
