//! Remote atomics the transport offloads: the kit holds an operation
//! slot and an operand buffer (from the RMA pool) until the completion,
//! and hands the fetched value over then. Which ops a network offloads,
//! and how, is the transport's ([`Transport::atomics_offload`],
//! [`Transport::post_atomic`]).

use crate::conduit::NetConduit;
use crate::geometry::POOL_RMA;
use crate::held::Held;
use crate::ops::Op;
use crate::send::would_block_or;
use crate::transport::Transport;
use rgex_core::atomic::AtomicRequest;
use rgex_core::{Error, OpCounter, Result};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

impl<T: Transport> NetConduit<T> {
    /// The SPI's `atomic_start`.
    pub(crate) fn atomic(
        &self,
        req: &AtomicRequest,
        fetched: &Arc<AtomicU64>,
        done: &Arc<OpCounter>,
    ) -> Result<()> {
        let net = &self.net;
        let plan = net.transport.atomic_plan(req)?;
        // Never waits: a busy resource is WouldBlock, which the atomics
        // layer turns into poll-and-retry (or hands to an IMMEDIATE caller).
        let mut st = self.state.lock();
        st.check_alive(req.target, "atomic")?;
        // Given back by its drop on every refusal below.
        let mut held = Held::new(&mut st, &net.geo);
        let Some(id) = held.take_op() else {
            return Err(Error::WouldBlock {
                peer: req.target,
                resource: "RMA operation slots",
            });
        };
        let Some(slot) = held.claim_slot(POOL_RMA) else {
            return Err(Error::WouldBlock {
                peer: req.target,
                resource: "atomic operand buffers",
            });
        };
        let buf = net.send_buf(slot as usize);
        // SAFETY: operands and result lie in send buffer `slot`
        // (registered, 64-aligned, larger than 24 bytes), held until the
        // completion; the target word was bounds- and alignment-checked by
        // the atomics layer.
        let posted = unsafe { net.transport.post_atomic(id, req, plan, buf, net.send_desc) };
        if let Err(e) = posted {
            return Err(would_block_or(e, req.target));
        }
        held.ops[id as usize] = Op::Atomic {
            peer: req.target.0,
            slot,
            size: req.ty.size() as u8,
            fetched: fetched.clone(),
            done: done.clone(),
        };
        held.hand_over();
        done.add(1);
        Ok(())
    }
}
