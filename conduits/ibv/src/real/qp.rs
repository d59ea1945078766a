//! The QP state machine: `ibv_modify_qp` with the attributes and mask
//! each transition requires, and `ibv_query_qp` for the state.

use std::ffi::c_int;

use super::abi::{qp_mask, IbvGid, IbvQpAttr, IbvQpInitAttr};
use super::errno::rc_errno;
use super::objects::Qp;
use crate::verbs::{QpState, QpTransition, VerbsError, VerbsResult};

/// Hop limit of the GRH on RoCE and routed InfiniBand (verbs examples
/// use 1 for one subnet; 64 also lets a routed path through).
const HOP_LIMIT: u8 = 64;

/// The attributes and mask of `to`, on `port` with GID index `gid_index`.
pub(crate) fn transition_attr(to: &QpTransition, port: u8, gid_index: u8) -> (IbvQpAttr, c_int) {
    let mut a = IbvQpAttr::default();
    let mask = match to {
        QpTransition::Init { access } => {
            a.qp_state = QpState::Init as u32;
            a.pkey_index = 0;
            a.port_num = port;
            a.qp_access_flags = access.bits();
            qp_mask::STATE | qp_mask::PKEY_INDEX | qp_mask::PORT | qp_mask::ACCESS_FLAGS
        }
        QpTransition::Rtr(r) => {
            a.qp_state = QpState::Rtr as u32;
            a.path_mtu = r.mtu as u32;
            a.dest_qp_num = r.dest_qp_num;
            a.rq_psn = r.rq_psn;
            a.max_dest_rd_atomic = r.max_dest_rd_atomic;
            a.min_rnr_timer = r.min_rnr_timer;
            a.ah_attr.dlid = r.dlid;
            a.ah_attr.sl = 0;
            a.ah_attr.src_path_bits = 0;
            a.ah_attr.port_num = port;
            if let Some(dgid) = r.dgid {
                a.ah_attr.is_global = 1;
                a.ah_attr.grh.dgid = IbvGid { raw: dgid };
                a.ah_attr.grh.sgid_index = gid_index;
                a.ah_attr.grh.hop_limit = HOP_LIMIT;
                a.ah_attr.grh.flow_label = 0;
                a.ah_attr.grh.traffic_class = 0;
            }
            qp_mask::STATE
                | qp_mask::AV
                | qp_mask::PATH_MTU
                | qp_mask::DEST_QPN
                | qp_mask::RQ_PSN
                | qp_mask::MAX_DEST_RD_ATOMIC
                | qp_mask::MIN_RNR_TIMER
        }
        QpTransition::Rts(r) => {
            a.qp_state = QpState::Rts as u32;
            a.timeout = r.timeout;
            a.retry_cnt = r.retry_cnt;
            a.rnr_retry = r.rnr_retry;
            a.sq_psn = r.sq_psn;
            a.max_rd_atomic = r.max_rd_atomic;
            qp_mask::STATE
                | qp_mask::TIMEOUT
                | qp_mask::RETRY_CNT
                | qp_mask::RNR_RETRY
                | qp_mask::SQ_PSN
                | qp_mask::MAX_QP_RD_ATOMIC
        }
        QpTransition::Err => {
            a.qp_state = QpState::Err as u32;
            qp_mask::STATE
        }
        QpTransition::Reset => {
            a.qp_state = QpState::Reset as u32;
            qp_mask::STATE
        }
    };
    (a, mask)
}

/// `ibv_modify_qp` along `to`.
pub(crate) fn modify(qp: &Qp, to: &QpTransition, port: u8, gid_index: u8) -> VerbsResult<()> {
    let (mut attr, mask) = transition_attr(to, port, gid_index);
    let fns = &qp.pd.ctx.lib.fns;
    // SAFETY: a live QP and an attribute struct of the verb's layout.
    let rc = unsafe { (fns.ibv_modify_qp)(qp.raw.as_ptr(), &mut attr, mask) };
    if rc != 0 {
        return Err(VerbsError::call(
            "ibv_modify_qp",
            rc_errno(rc),
            format!("QP {:#x} to {to:?} (mask {mask:#x})", qp.qp_num),
        ));
    }
    Ok(())
}

/// `ibv_query_qp` for the state.
pub(crate) fn state(qp: &Qp) -> VerbsResult<QpState> {
    let mut attr = IbvQpAttr::default();
    // SAFETY: plain data; all-zero is valid.
    let mut init: IbvQpInitAttr = unsafe { std::mem::zeroed() };
    let fns = &qp.pd.ctx.lib.fns;
    // SAFETY: a live QP and out-structs of the verb's layout.
    let rc = unsafe { (fns.ibv_query_qp)(qp.raw.as_ptr(), &mut attr, qp_mask::STATE, &mut init) };
    if rc != 0 {
        return Err(VerbsError::call(
            "ibv_query_qp",
            rc_errno(rc),
            format!("the state of QP {:#x}", qp.qp_num),
        ));
    }
    state_from_code(attr.qp_state).ok_or_else(|| {
        VerbsError::call(
            "ibv_query_qp",
            libc::EPROTO,
            format!(
                "QP {:#x} reports unknown state {}",
                qp.qp_num, attr.qp_state
            ),
        )
    })
}

/// `enum ibv_qp_state` as the trait's state.
pub(crate) fn state_from_code(code: u32) -> Option<QpState> {
    Some(match code {
        0 => QpState::Reset,
        1 => QpState::Init,
        2 => QpState::Rtr,
        3 => QpState::Rts,
        4 => QpState::Sqd,
        5 => QpState::Sqe,
        6 => QpState::Err,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verbs::{Access, Mtu, RtrAttr, RtsAttr};

    fn rtr(dgid: Option<[u8; 16]>) -> QpTransition {
        QpTransition::Rtr(RtrAttr {
            mtu: Mtu::M1024,
            dest_qp_num: 0x1234,
            rq_psn: 77,
            dlid: 9,
            dgid,
            max_dest_rd_atomic: 4,
            min_rnr_timer: 12,
        })
    }

    #[test]
    fn init_sets_port_pkey_and_access() {
        let (a, m) = transition_attr(
            &QpTransition::Init {
                access: Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC,
            },
            2,
            0,
        );
        // IBV_QP_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX | IBV_QP_PORT
        assert_eq!(m, 0x1 | 0x8 | 0x10 | 0x20);
        assert_eq!(
            (a.qp_state, a.port_num, a.pkey_index, a.qp_access_flags),
            (1, 2, 0, 2 | 4 | 8)
        );
    }

    #[test]
    fn rtr_on_infiniband_has_no_grh() {
        let (a, m) = transition_attr(&rtr(None), 1, 3);
        // STATE | AV | PATH_MTU | RQ_PSN | MIN_RNR_TIMER | MAX_DEST_RD_ATOMIC | DEST_QPN
        assert_eq!(m, 0x1 | 0x80 | 0x100 | 0x1000 | 0x8000 | 0x20000 | 0x100000);
        assert_eq!(
            (a.qp_state, a.path_mtu, a.dest_qp_num, a.rq_psn),
            (2, 3, 0x1234, 77)
        );
        assert_eq!((a.max_dest_rd_atomic, a.min_rnr_timer), (4, 12));
        assert_eq!(
            (a.ah_attr.dlid, a.ah_attr.port_num, a.ah_attr.is_global),
            (9, 1, 0)
        );
    }

    #[test]
    fn rtr_with_a_gid_routes_by_grh_from_the_chosen_index() {
        let gid = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8];
        let (a, _) = transition_attr(&rtr(Some(gid)), 1, 3);
        assert_eq!(a.ah_attr.is_global, 1);
        assert_eq!(a.ah_attr.grh.dgid.raw, gid);
        assert_eq!(a.ah_attr.grh.sgid_index, 3);
        assert!((1..=64).contains(&a.ah_attr.grh.hop_limit));
    }

    #[test]
    fn rts_sets_timers_and_retries() {
        let (a, m) = transition_attr(
            &QpTransition::Rts(RtsAttr {
                sq_psn: 55,
                timeout: 14,
                retry_cnt: 7,
                rnr_retry: 6,
                max_rd_atomic: 8,
            }),
            1,
            0,
        );
        // STATE | TIMEOUT | RETRY_CNT | RNR_RETRY | MAX_QP_RD_ATOMIC | SQ_PSN
        assert_eq!(m, 0x1 | 0x200 | 0x400 | 0x800 | 0x2000 | 0x10000);
        assert_eq!(
            (
                a.qp_state,
                a.sq_psn,
                a.timeout,
                a.retry_cnt,
                a.rnr_retry,
                a.max_rd_atomic
            ),
            (3, 55, 14, 7, 6, 8)
        );
    }

    #[test]
    fn err_and_reset_set_only_the_state() {
        assert_eq!(transition_attr(&QpTransition::Err, 1, 0).1, 0x1);
        assert_eq!(transition_attr(&QpTransition::Err, 1, 0).0.qp_state, 6);
        assert_eq!(transition_attr(&QpTransition::Reset, 1, 0).0.qp_state, 0);
        for c in 0..7 {
            assert_eq!(state_from_code(c).map(|s| s as u32), Some(c));
        }
        assert_eq!(state_from_code(7), None);
    }
}
