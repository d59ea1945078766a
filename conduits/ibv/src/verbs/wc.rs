//! Work completions (`ibv_wc`), with verbs' status codes.

/// A completion's status (`IBV_WC_*`; the value is verbs' code).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WcStatus {
    /// Success.
    Success,
    /// A receive buffer was too small, or an inline payload too large.
    LocLenErr,
    /// The QP could not perform the request (wrong state, bad opcode).
    LocQpOpErr,
    /// The local buffer is outside the lkey's region or lacks access.
    LocProtErr,
    /// Flushed: the QP is in error and this request was not performed.
    WrFlushErr,
    /// The target rejected the request as invalid (bad length, opcode).
    RemInvReqErr,
    /// The target rejected the rkey, bounds or access.
    RemAccessErr,
    /// The target could not complete the operation.
    RemOpErr,
    /// No acknowledgement after the retry count (peer gone or unreachable).
    RetryExcErr,
    /// The target had no receive posted after the RNR retry count.
    RnrRetryExcErr,
    /// Fatal or general error.
    GeneralErr,
    /// Any other code, as verbs gave it.
    Other(u32),
}

impl WcStatus {
    /// The status of verbs' code `code`.
    pub fn from_code(code: u32) -> WcStatus {
        match code {
            0 => WcStatus::Success,
            1 => WcStatus::LocLenErr,
            2 => WcStatus::LocQpOpErr,
            4 => WcStatus::LocProtErr,
            5 => WcStatus::WrFlushErr,
            9 => WcStatus::RemInvReqErr,
            10 => WcStatus::RemAccessErr,
            11 => WcStatus::RemOpErr,
            12 => WcStatus::RetryExcErr,
            13 => WcStatus::RnrRetryExcErr,
            21 => WcStatus::GeneralErr,
            c => WcStatus::Other(c),
        }
    }

    /// Verbs' code of this status.
    pub fn code(self) -> u32 {
        match self {
            WcStatus::Success => 0,
            WcStatus::LocLenErr => 1,
            WcStatus::LocQpOpErr => 2,
            WcStatus::LocProtErr => 4,
            WcStatus::WrFlushErr => 5,
            WcStatus::RemInvReqErr => 9,
            WcStatus::RemAccessErr => 10,
            WcStatus::RemOpErr => 11,
            WcStatus::RetryExcErr => 12,
            WcStatus::RnrRetryExcErr => 13,
            WcStatus::GeneralErr => 21,
            WcStatus::Other(c) => c,
        }
    }

    /// Verbs' name of this status (`IBV_WC_REM_ACCESS_ERR`), as
    /// `ibv_wc_status_str` would describe it.
    pub fn name(self) -> &'static str {
        match self {
            WcStatus::Success => "IBV_WC_SUCCESS",
            WcStatus::LocLenErr => "IBV_WC_LOC_LEN_ERR (local length error)",
            WcStatus::LocQpOpErr => "IBV_WC_LOC_QP_OP_ERR (local QP operation error)",
            WcStatus::LocProtErr => "IBV_WC_LOC_PROT_ERR (local protection error)",
            WcStatus::WrFlushErr => "IBV_WC_WR_FLUSH_ERR (flushed: the QP is in error)",
            WcStatus::RemInvReqErr => "IBV_WC_REM_INV_REQ_ERR (remote invalid request)",
            WcStatus::RemAccessErr => "IBV_WC_REM_ACCESS_ERR (remote access error)",
            WcStatus::RemOpErr => "IBV_WC_REM_OP_ERR (remote operation error)",
            WcStatus::RetryExcErr => "IBV_WC_RETRY_EXC_ERR (transport retry counter exceeded)",
            WcStatus::RnrRetryExcErr => "IBV_WC_RNR_RETRY_EXC_ERR (RNR retry counter exceeded)",
            WcStatus::GeneralErr => "IBV_WC_GENERAL_ERR",
            WcStatus::Other(_) => "IBV_WC_* (other)",
        }
    }
}

/// What completed (`IBV_WC_*` opcodes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WcOpcode {
    /// A send (with or without immediate).
    Send,
    /// An RDMA write (with or without immediate), at the initiator.
    RdmaWrite,
    /// An RDMA read.
    RdmaRead,
    /// A compare-and-swap.
    CompSwap,
    /// A fetch-and-add.
    FetchAdd,
    /// A receive consumed by a send.
    Recv,
    /// A receive consumed by an RDMA write with immediate.
    RecvRdmaWithImm,
}

/// One work completion (`ibv_wc`, the parts used). On error only
/// `wr_id`, `status`, `qp_num` and `vendor_err` are meaningful, as in verbs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wc {
    /// The work request's id.
    pub wr_id: u64,
    /// Status.
    pub status: WcStatus,
    /// What completed (valid on success).
    pub opcode: WcOpcode,
    /// Bytes received (receives) or transferred.
    pub byte_len: u32,
    /// Immediate data, if the message carried one.
    pub imm: Option<u32>,
    /// The local QP it completed on.
    pub qp_num: u32,
    /// The sending QP (receives).
    pub src_qp: u32,
    /// The device's own error code (0 where none).
    pub vendor_err: u32,
}

impl Wc {
    /// An empty completion, for output arrays.
    pub const EMPTY: Wc = Wc {
        wr_id: 0,
        status: WcStatus::Success,
        opcode: WcOpcode::Send,
        byte_len: 0,
        imm: None,
        qp_num: 0,
        src_qp: 0,
        vendor_err: 0,
    };
}
