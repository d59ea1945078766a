//! A rank's address card, exchanged through the bootstrap at setup: what
//! every peer needs to connect its QP to ours and reach our segment.

use crate::verbs::{Gid, Mtu};
use rgex_core::{Error, Result};

/// One rank's card.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Card {
    /// The port's LID (InfiniBand).
    pub lid: u16,
    /// The port's GID at the chosen index (RoCE, the software device).
    pub gid: Gid,
    /// The port's path MTU as this rank would use it.
    pub mtu: Mtu,
    /// The segment's virtual address.
    pub base: u64,
    /// The segment's remote key.
    pub rkey: u32,
    /// This rank's QP number for each rank (in rank order).
    pub qpns: Vec<u32>,
}

const FIXED: usize = 2 + 16 + 2 + 8 + 4 + 4;

impl Card {
    /// The bytes sent.
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(FIXED + 4 * self.qpns.len());
        v.extend_from_slice(&self.lid.to_le_bytes());
        v.extend_from_slice(&self.gid);
        v.extend_from_slice(&(self.mtu.bytes() as u16).to_le_bytes());
        v.extend_from_slice(&self.base.to_le_bytes());
        v.extend_from_slice(&self.rkey.to_le_bytes());
        v.extend_from_slice(&(self.qpns.len() as u32).to_le_bytes());
        for q in &self.qpns {
            v.extend_from_slice(&q.to_le_bytes());
        }
        v
    }

    /// Rank `rank`'s card in a job of `size` ranks, from its bytes.
    pub fn decode(rank: usize, size: usize, b: &[u8]) -> Result<Card> {
        let bad = |why: String| {
            Error::Bootstrap(format!(
                "rank {rank} sent a malformed ibv address card ({} bytes): {why}",
                b.len()
            ))
        };
        if b.len() != FIXED + 4 * size {
            return Err(bad(format!(
                "{} bytes expected for {size} ranks",
                FIXED + 4 * size
            )));
        }
        let u16_at = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        let mtu_bytes = u16_at(18) as usize;
        let mtu = Mtu::from_bytes(mtu_bytes).ok_or_else(|| bad(format!("MTU {mtu_bytes}")))?;
        let n = u32_at(32) as usize;
        if n != size {
            return Err(bad(format!("QP numbers for {n} ranks, not {size}")));
        }
        Ok(Card {
            lid: u16_at(0),
            gid: b[2..18].try_into().expect("16 bytes"),
            mtu,
            base: u64::from_le_bytes(b[20..28].try_into().expect("8 bytes")),
            rkey: u32_at(28),
            qpns: (0..n).map(|i| u32_at(FIXED + 4 * i)).collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_a_short_or_foreign_card() {
        let c = Card {
            lid: 7,
            gid: [3; 16],
            mtu: Mtu::M2048,
            base: 0x7f00_1234_5000,
            rkey: 0xdead_beef,
            qpns: vec![11, 12, 13],
        };
        let b = c.encode();
        assert_eq!(Card::decode(1, 3, &b).unwrap(), c);
        let e = Card::decode(1, 4, &b).unwrap_err().to_string();
        assert!(
            e.contains("rank 1 sent a malformed ibv address card"),
            "{e}"
        );
        let e = Card::decode(2, 3, &b[..10]).unwrap_err().to_string();
        assert!(e.contains("rank 2"), "{e}");
    }
}
