//! Several blocks of bytes in one collective message (a subtree's blocks
//! in a gather or a scatter, a dissemination round's in an allgatherv):
//! each block as its length (8 bytes, little-endian), then its bytes.
//! [`decode`] checks everything a peer sent: the count, each length
//! against what is left (a peer's word alone never reserves memory) and,
//! for fixed-size blocks, against that size.

/// Append `blocks`, each with its length.
pub(crate) fn encode<B: AsRef<[u8]>>(blocks: &[B], out: &mut Vec<u8>) {
    let total: usize = blocks.iter().map(|b| 8 + b.as_ref().len()).sum();
    out.reserve(total);
    for b in blocks {
        let b = b.as_ref();
        out.extend_from_slice(&(b.len() as u64).to_le_bytes());
        out.extend_from_slice(b);
    }
}

/// The `count` blocks of `msg`, each `fixed` bytes long where given; the
/// error says what was wrong.
pub(crate) fn decode(
    mut msg: &[u8],
    count: usize,
    fixed: Option<usize>,
) -> Result<Vec<Vec<u8>>, String> {
    let mut out = Vec::with_capacity(count.min(msg.len() / 8));
    for i in 0..count {
        let Some((len, rest)) = msg.split_first_chunk::<8>() else {
            return Err(format!("{} blocks in the message, not {count}", out.len()));
        };
        let len = u64::from_le_bytes(*len);
        if len > rest.len() as u64 {
            return Err(format!(
                "block {i} says {len} bytes, {} are left in the message",
                rest.len()
            ));
        }
        let len = len as usize;
        if let Some(f) = fixed.filter(|&f| f != len) {
            return Err(format!("block {i} has {len} bytes, not {f}"));
        }
        out.push(rest[..len].to_vec());
        msg = &rest[len..];
    }
    if !msg.is_empty() {
        return Err(format!(
            "{} bytes after the {count} blocks of the message",
            msg.len()
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_refusals() {
        let blocks = vec![vec![1u8, 2, 3], vec![], vec![9; 100]];
        let mut msg = Vec::new();
        encode(&blocks, &mut msg);
        assert_eq!(msg.len(), 3 * 8 + 103);
        assert_eq!(decode(&msg, 3, None).unwrap(), blocks);
        assert!(decode(&msg, 4, None).unwrap_err().contains("not 4"));
        assert!(decode(&msg, 2, None).unwrap_err().contains("after the 2"));
        assert!(decode(&msg, 3, Some(3)).unwrap_err().contains("not 3"));
        assert!(decode(&msg[..msg.len() - 1], 3, None)
            .unwrap_err()
            .contains("are left"));
        let mut huge = u64::MAX.to_le_bytes().to_vec();
        huge.push(0);
        assert!(decode(&huge, 1, None).unwrap_err().contains("are left"));
        assert_eq!(decode(&[], 0, Some(4)).unwrap(), Vec::<Vec<u8>>::new());
    }
}
