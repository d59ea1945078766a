//! Segments over client memory on the conduit under test: a heap `Vec`
//! (a different length on every rank) and a static array, registered
//! collectively; put, get (blocking, non-blocking, NBI, chunked beyond a
//! Medium) and atomics into each, checked in the memory itself; ranges
//! outside what a rank registered refused, naming the rank, the range and
//! the limit; the path to each peer (a copy to this rank, cross-memory
//! attach to a node-local peer, active messages to the others); and
//! deregistration: an operation arriving after the target closed its
//! segment fails at its initiator by active messages and lands by
//! cross-memory attach, and one after the initiator's own is refused.

use rgex::{
    AtomicDomain, AtomicFlags, AtomicOp, Client, ClientPath, ClientSegment, Error, Flags,
    GlobalAddr, NbiCategory, OpSet, Rank, RmaPath, Strided, Vector, Vis,
};
use rgex_tests::{conduit_banner, ok, skip};

/// The static array registered raw: the executable's own data, 2 MiB,
/// so that its largest transfers reach cross-memory attach's smallest
/// ([`rgex::CMA_MIN`]) while the others stay below it.
static mut TABLE: [u64; 1 << 18] = [0; 1 << 18];
const TABLE_BYTES: usize = std::mem::size_of::<[u64; 1 << 18]>();

/// A byte of the pattern rank `from` writes at position `i`.
fn pattern(from: u32, i: usize) -> u8 {
    (from as usize * 31 + i * 7 + 1) as u8
}

fn vec_len(r: u32) -> usize {
    4096 + 64 * r as usize
}

fn main() -> rgex::Result<()> {
    let client = rgex::init()?;
    conduit_banner(&client);
    let ep = client.endpoint();
    let (me, n) = (client.rank().0, client.size());
    let right = Rank((me + 1) % n);
    let left = (me + n - 1) % n;

    let heap = ep.register_segment(client.world(), vec![0u8; vec_len(me)])?;
    // SAFETY: a static lives for the program; while registered it is
    // touched only through rgex, and read here only after barriers.
    let table = unsafe {
        ep.register_segment_raw(
            client.world(),
            std::ptr::addr_of_mut!(TABLE).cast(),
            TABLE_BYTES,
        )?
    };
    assert_eq!(
        (heap.id(), table.id()),
        (1, 2),
        "segments numbered in registration order"
    );
    assert_eq!(
        heap.len(right),
        vec_len(right.0) as u64,
        "the peer's length, exchanged"
    );

    paths(&client, &heap);
    rma_into(&client, &heap, right, left, vec_len(right.0))?;
    rma_into(&client, &table, right, left, TABLE_BYTES)?;
    // The static's own bytes hold what the left neighbour put (read
    // after the barrier that ended the puts).
    client.barrier()?;
    // SAFETY: no peer writes the table between these barriers.
    let mine = unsafe { std::slice::from_raw_parts(std::ptr::addr_of!(TABLE).cast::<u8>(), 64) };
    for (i, b) in mine.iter().enumerate() {
        assert_eq!(
            *b,
            pattern(left, i),
            "rank {me}: the static's byte {i} is not rank {left}'s put"
        );
    }
    ok(&client, "put and get into a heap Vec and a static array registered as client segments: blocking, non-blocking, NBI, beyond one Medium, to every neighbour and to this rank; the static's own memory holds the bytes");

    vis_into(&client, &heap, right)?;
    out_of_range(&client, &heap, right)?;
    atomics_into(&client, &table)?;
    client.barrier()?;
    let back = heap
        .deregister(client.world())?
        .expect("the Vec comes back");
    assert_eq!(back.len(), vec_len(me));
    assert!(
        back[..64]
            .iter()
            .enumerate()
            .all(|(i, b)| *b == pattern(left, i)),
        "rank {me}: the Vec handed back lacks rank {left}'s put"
    );
    refused_after(&client, table, right)?;
    ok(&client, "deregistration hands the Vec back holding what peers put; an operation after the initiator's own deregistration is refused before anything is sent");
    Ok(())
}

/// Puts of every form into `right`'s registration, then gets of them back
/// (from `right`, and from this rank's own through the left neighbour's
/// puts), each checked.
fn rma_into(
    client: &Client,
    seg: &ClientSegment,
    right: Rank,
    left: u32,
    right_len: usize,
) -> rgex::Result<()> {
    let ep = client.endpoint();
    let me = client.rank().0;
    let data: Vec<u8> = (0..right_len).map(|i| pattern(me, i)).collect();
    // Blocking 64 bytes at 0; non-blocking the rest but the last 8;
    // NBI the last 8.
    ep.put(seg.addr(right, 0), &data[..64], Flags::empty())?;
    ep.put_nb(
        seg.addr(right, 64),
        &data[64..right_len - 8],
        Flags::empty(),
    )?
    .wait()?;
    ep.put_nbi(
        seg.addr(right, (right_len - 8) as u64),
        &data[right_len - 8..],
        Flags::empty(),
    )?;
    ep.nbi_wait(NbiCategory::Put)?;
    let mut back = vec![0u8; right_len];
    ep.get(&mut back, seg.addr(right, 0), Flags::empty())?;
    assert!(
        back == data,
        "rank {me}: the get from {right}'s client segment differs from the put"
    );
    let got = ep
        .get_nb(vec![0u8; 100], seg.addr(right, 5), Flags::empty())?
        .wait()?;
    assert_eq!(&got[..], &data[5..105]);
    client.barrier()?;
    // This rank's own registration, by a get to itself.
    let mine_len = seg.len(client.rank()) as usize;
    let mut own = vec![0u8; mine_len];
    ep.get(&mut own, seg.addr(client.rank(), 0), Flags::empty())?;
    assert!(
        own.iter().enumerate().all(|(i, b)| *b == pattern(left, i)),
        "rank {me}: its own client segment does not hold rank {left}'s puts"
    );
    client.barrier()?;
    Ok(())
}

/// Vector and strided transfers into `right`'s registration, read back
/// by both forms and by plain gets; one past its end refused.
fn vis_into(client: &Client, seg: &ClientSegment, right: Rank) -> rgex::Result<()> {
    let ep = client.endpoint();
    let vis = Vis::new(ep)?;
    let me = client.rank().0;
    let src: Vec<u8> = (0..64).map(|i| pattern(me + 7, i)).collect();
    let (a, b) = (seg.base() + 1000, seg.base() + 2000);
    let frags = [(a, 16), (b, 16)];
    vis.put(
        right,
        Vector {
            peer: &frags,
            local: &[(0, 32)],
        },
        &src[..32],
        Flags::empty(),
    )?;
    let strided = |local_offset| Strided {
        elem_size: 8,
        counts: &[4],
        peer_offset: seg.base() + 3000,
        peer_strides: &[64],
        local_offset,
        local_strides: &[8],
    };
    vis.put(right, strided(32), &src, Flags::empty())?;
    let mut back = vec![0u8; 64];
    vis.get(
        right,
        Vector {
            peer: &frags,
            local: &[(0, 32)],
        },
        &mut back[..32],
        Flags::empty(),
    )?;
    vis.get(right, strided(32), &mut back, Flags::empty())?;
    assert!(
        back == src,
        "rank {me}: VIS into {right}'s client segment read back differently"
    );
    let mut word = [0u8; 8];
    ep.get(&mut word, seg.addr(right, 3000 + 3 * 64), Flags::empty())?;
    assert_eq!(
        &word,
        &src[56..64],
        "the strided put's last element, by a plain get"
    );
    let len = seg.len(right);
    let past = [(seg.base() + len - 8, 16)];
    let e = vis
        .put(
            right,
            Vector {
                peer: &past,
                local: &[(0, 16)],
            },
            &src[..16],
            Flags::empty(),
        )
        .unwrap_err();
    assert!(
        matches!(e, Error::OutOfClientSegment { rank, segment: 1, limit, .. } if rank == right && limit == len),
        "{e}"
    );
    client.barrier()?;
    ok(client, "VIS (vector and strided) put and get into a client segment, read back by both and by a plain get; one past what the peer registered refused");
    Ok(())
}

/// Ranges beyond what `right` registered are refused before anything
/// moves, naming the rank, the range and the limit; so are atomics.
fn out_of_range(client: &Client, seg: &ClientSegment, right: Rank) -> rgex::Result<()> {
    let ep = client.endpoint();
    let len = seg.len(right);
    let at = seg.addr(right, len - 4);
    let e = ep.put(at, &[0u8; 8], Flags::empty()).unwrap_err();
    let text = e.to_string();
    assert!(
        matches!(e, Error::OutOfClientSegment { rank, segment: 1, limit, .. } if rank == right && limit == len),
        "{text}"
    );
    assert!(
        text.contains(&format!("{right}")) && text.contains(&format!("{len:#x}")),
        "{text}"
    );
    let e = ep.get(&mut [0u8; 8], at, Flags::empty()).unwrap_err();
    assert!(matches!(e, Error::OutOfClientSegment { .. }), "{e}");
    let e = ep
        .put_nb(seg.addr(right, len), &[1], Flags::empty())
        .unwrap_err();
    assert!(matches!(e, Error::OutOfClientSegment { .. }), "{e}");
    // Nothing was written: the last bytes still hold this rank's pattern.
    let mut tail = [0u8; 4];
    ep.get(&mut tail, seg.addr(right, len - 4), Flags::empty())?;
    let me = client.rank().0;
    for (j, b) in tail.iter().enumerate() {
        assert_eq!(
            *b,
            pattern(me, len as usize - 4 + j),
            "an out-of-range put wrote"
        );
    }
    // Past the last registered segment: the primordial segment's error.
    let far = GlobalAddr::new(right, 7 * rgex::CLIENT_SEGMENT_STRIDE);
    let e = ep.put(far, &[0u8; 8], Flags::empty()).unwrap_err();
    assert!(matches!(e, Error::OutOfSegment { .. }), "{e}");
    let ad = AtomicDomain::<u64>::new(ep, client.world(), OpSet::of(&[AtomicOp::Fadd]))?;
    let e = ad
        .fetch_add(seg.addr(right, len), 1, AtomicFlags::empty())
        .unwrap_err();
    assert!(matches!(e, Error::OutOfClientSegment { .. }), "{e}");
    client.barrier()?;
    ok(client, "outside what a rank registered of a client segment: put, get, non-blocking put and atomics refused before anything moves, naming the rank, the range and the limit");
    Ok(())
}

/// Every rank adds to words of rank 0's static table and swaps into its
/// right neighbour's: the sums and the swaps are exact.
fn atomics_into(client: &Client, table: &ClientSegment) -> rgex::Result<()> {
    let ep = client.endpoint();
    let (me, n) = (client.rank().0, client.size());
    let ops = OpSet::of(&[AtomicOp::Fadd, AtomicOp::Add, AtomicOp::Swap, AtomicOp::Get]);
    let ad = AtomicDomain::<u64>::new(ep, client.world(), ops)?;
    // Word 100 of rank 0's table, which the puts filled: cleared first.
    let word = table.addr(Rank(0), 800);
    if me == 0 {
        ad.op(word, AtomicOp::Swap, 0, 0, AtomicFlags::empty())?;
    }
    client.barrier()?;
    for _ in 0..10 {
        ad.fetch_add(word, u64::from(me) + 1, AtomicFlags::empty())?;
        ad.op(word, AtomicOp::Add, 1, 0, AtomicFlags::empty())?;
    }
    client.barrier()?;
    let total = ad.op(word, AtomicOp::Get, 0, 0, AtomicFlags::empty())?;
    let n64 = u64::from(n);
    assert_eq!(
        total,
        10 * (n64 * (n64 + 1) / 2) + 10 * n64,
        "rank {me}: the sum at rank 0"
    );
    let right = Rank((me + 1) % n);
    ad.op(
        table.addr(right, 808),
        AtomicOp::Swap,
        u64::from(me) + 1000,
        0,
        AtomicFlags::empty(),
    )?;
    client.barrier()?;
    // SAFETY: between barriers no peer writes the table.
    let got = unsafe {
        std::ptr::addr_of!(TABLE)
            .cast::<u64>()
            .add(101)
            .read_volatile()
    };
    assert_eq!(
        got,
        u64::from((me + n - 1) % n) + 1000,
        "rank {me}: the swap into its own static"
    );
    client.barrier()?;
    ok(client, "atomics on client segment words (fetch-add, add, swap, get): exact sums at rank 0, each swap in the target's own static memory");
    Ok(())
}

/// The path this rank's puts and gets take into each rank's registration
/// of `seg`: this rank's own by a copy; a node-local peer's (its segment
/// mapped here, the bypass on) by cross-memory attach, where the kernel
/// allows it (Yama's `ptrace_scope` 2 and 3 forbid it); a peer the
/// network reaches by the network's RMA on ofi and ibv (`fi_mr_reg`,
/// `ibv_reg_mr`); every other
/// by active messages; all of them by active messages under
/// `RGEX_RMA=reference`.
fn expected_path(client: &Client, peer: Rank) -> ClientPath {
    let ep = client.endpoint();
    let yama_forbids = std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope")
        .is_ok_and(|s| matches!(s.trim(), "2" | "3"))
        || std::env::var("RGEX_FAULT_CMA_REFUSED").as_deref() == Ok("1");
    match ep.rma_path(peer) {
        RmaPath::Reference => ClientPath::Reference,
        _ if peer == client.rank() => ClientPath::Local,
        RmaPath::Mapped if !yama_forbids => ClientPath::Cma,
        RmaPath::Native if matches!(ep.conduit().name(), "ofi" | "ibv") => ClientPath::Native,
        _ => ClientPath::Reference,
    }
}

/// Every peer's path is the expected one (see [`expected_path`]).
fn paths(client: &Client, seg: &ClientSegment) {
    let mut seen = Vec::new();
    for p in 0..client.size() {
        let peer = Rank(p);
        let want = expected_path(client, peer);
        assert_eq!(
            seg.path(peer),
            want,
            "rank {}: the path to {peer}'s client segment {}",
            client.rank().0,
            seg.id()
        );
        seen.push(format!("{peer}: {want:?}"));
    }
    ok(
        client,
        &format!(
            "client segment paths as this row's locality says (this rank by a copy, node-local \
             peers by cross-memory attach, remote ones by the network's RMA on ofi and ibv, the \
             rest by active messages): {}",
            seen.join(", ")
        ),
    );
}

/// Where rank 1 tells rank 0 it is about to deregister: a word of rank
/// 0's primordial segment.
const CLOSING: u64 = 64;

/// Rank 1 deregisters first, after telling rank 0 so. Rank 0 then puts
/// into rank 1's table: by active messages until the target refuses (it
/// closed its entry and waits in the deregistration's barrier); by
/// cross-memory attach or the network's RMA every put succeeds (the
/// memory, and its network registration, are rank 1's until the barrier,
/// which waits for rank 0 to close its own entry and finish its puts),
/// and rank 1 finds the last one in its static once deregistered. After that, every operation on the segment is refused
/// here before anything is sent.
fn refused_after(client: &Client, table: ClientSegment, right: Rank) -> rgex::Result<()> {
    let ep = client.endpoint().clone();
    let me = client.rank().0;
    let (late_at, after) = (table.addr(Rank(1), 0), table.addr(right, 0));
    // Cross-memory attach and the network's RMA: no handler at the target.
    let cma = |peer| matches!(table.path(peer), ClientPath::Cma | ClientPath::Native);
    let late = if client.size() < 2 {
        skip(
            client,
            "an operation arriving after its target deregistered",
            "one rank: no target to close first",
        );
        None
    } else if me == 0 {
        let closing = GlobalAddr::new(Rank(0), CLOSING);
        let mut told = false;
        for _ in 0..2_000_000 {
            ep.poll()?;
            if ep.get_val(closing, Flags::empty())? == 1 {
                told = true;
                break;
            }
            std::thread::yield_now();
        }
        assert!(told, "rank 1 never said it was deregistering");
        if cma(Rank(1)) {
            // Large enough for cross-memory attach (not the reference).
            let nines = vec![9u8; rgex::CMA_MIN.max(8)];
            for _ in 0..20 {
                ep.put(late_at, &nines, Flags::empty())
                    .expect("by cross-memory attach or RDMA a put before this rank's own deregistration lands");
                std::thread::yield_now();
            }
            None
        } else {
            // Bounded: rank 1 closes as soon as it enters deregistration.
            let mut refused = None;
            for _ in 0..200_000 {
                match ep.put(late_at, &[9u8; 8], Flags::empty()) {
                    Ok(()) => std::thread::yield_now(),
                    Err(e) => {
                        refused = Some(e);
                        break;
                    }
                }
            }
            Some(refused.expect("rank 1's closed segment never refused a put"))
        }
    } else {
        if me == 1 {
            ep.put_val(GlobalAddr::new(Rank(0), CLOSING), 1, Flags::empty())?;
        }
        None
    };
    // Rank 1 gets here at once; rank 0 after its late puts.
    // Rank 0's path to rank 1 (the others' to rank 0: the same kind).
    let by_cma = client.size() >= 2 && cma(Rank(u32::from(me == 0)));
    assert!(
        table.deregister(client.world())?.is_none(),
        "raw memory: nothing to hand back"
    );
    if client.size() >= 2 {
        if let Some(e) = late {
            let text = e.to_string();
            assert!(
                text.contains("rank 1")
                    && text.contains("client segment")
                    && text.contains("rank 0"),
                "the late put's error names neither the target nor the initiator: {text}"
            );
        }
        if me == 1 && by_cma {
            // SAFETY: deregistered everywhere: no peer writes it now.
            let first = unsafe { std::ptr::addr_of!(TABLE).cast::<[u8; 8]>().read_volatile() };
            assert_eq!(
                first, [9u8; 8],
                "rank 0's puts by cross-memory attach or RDMA, after this rank closed, are not in its static"
            );
        }
        if by_cma {
            ok(client, "by cross-memory attach or RDMA, a put issued after its target closed the segment but before the initiator's own deregistration lands (the memory and its registration are the target's until the barrier that follows the initiator's puts)");
        } else {
            ok(client, "an operation arriving after its target deregistered fails at its initiator, naming both");
        }
    }
    let e = ep.put(after, &[1u8; 8], Flags::empty()).unwrap_err();
    assert!(
        matches!(e, Error::SegmentUnavailable { segment: 2, .. })
            && e.to_string().contains("deregistered"),
        "{e}"
    );
    Ok(())
}
