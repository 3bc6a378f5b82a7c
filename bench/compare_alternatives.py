#!/usr/bin/env python3
"""What kvcheck users would pick instead of kvcheck's CUDA kernels, timed on the same GPU.

Measures, in one process on one GPU (GB/s = (bytes read + bytes written) / time):
  copy          dst.copy_(src) of --copy-gib GiB: the same-process bandwidth baseline
  Triton store  one program per token, nano-vllm style: slot = slot_mapping[i], skip -1,
                BF16(512) row -> cache + slot*512 (1,024 B read + 1,024 B written a token)
  index_copy_   cache.view(-1, 512).index_copy_(0, slots, rows)   (store, BF16(512))
  index_select  cache.view(-1, 512).index_select(0, slots)        (load, BF16(512))
  PyTorch V41   SPEC 4.1 quantise (16 groups of 32, ue8m0 scale, e4m3 data) written as
                PyTorch ops, records [512 data | 16 scales] stored at
                block*block_stride + token*528 (1,024 B read + 528 B written a token)
at --tokens tokens for each of --block-sizes, slots a random permutation of all slots of
a cache of ceil(tokens/bs) blocks (distinct slots, random order), and the Triton store at
the decode sizes --decode too (per launch, back to back inside a CUDA graph). With
--shim build-gpu/bench/libkvcheck_bench_store.so, kvcheck's own BF16(512) store
(bench/store_shim.cpp) is captured the same way in this process, on the same rows and
slots into a cache of its own; the two graphs are timed alternately --rounds times and
the medians compared ("ours/theirs" = Triton's time / kvcheck's: > 1, kvcheck faster),
and kvcheck's cache is then checked (its rows written, every other row unchanged).
Large cases use triton.testing.do_bench(warmup=25, rep=100, return_mode="median").
Every timed result is checked afterwards (bytes equal to plain indexing / to an
independent NumPy model of SPEC 4.1); a failed check exits 1 and prints no table.

BF16(512) caches are non-interleaved with block_stride = bs*1024 (a multiple of 32), so a
flat view(-1, 512) indexed by slot is kvcheck's layout. The script sets no GPU clocks.

Run on the GPU machine (needs torch with CUDA, triton, numpy):
  python3 bench/compare_alternatives.py --ours build-gpu/bench_cuda.json [--json out.json]
--ours reads kvcheck's C++ benchmark JSON ({"copy_gbps", "slots", "launch", "rows": [{"op",
"format", "tokens", "block_size", "bytes", "ms", "gbps", "ratio_to_copy"}]}; a run of
--slots blocks or --pdl is refused before any timing) and adds, per row, the matching
kvcheck GB/s and ours/theirs (> 1: kvcheck faster).
  python3 bench/compare_alternatives.py --check   # correctness only; CPU is fine, no triton
"""
import argparse
import ctypes
import json
import math
import statistics
import sys

import numpy as np
import torch

D, GROUP = 512, 32
GROUPS = D // GROUP               # 16 scale bytes a token
V41_BPT = D + GROUPS              # 528-byte record: [512 e4m3 codes | 16 ue8m0 scales]
INV448_BITS = 0x3B124925          # RN(1.0f / 448), SPEC 4
SENTINEL = 0xA5                   # cache bytes before a store; never-written bytes keep it

def v41_block_stride(bs):
    lcm = 32 * V41_BPT // math.gcd(32, V41_BPT)       # 1056, a multiple of 528
    return -(-bs * V41_BPT // lcm) * lcm

# ---------------------------------------------------------------- PyTorch V41 store
def ceil_log2_bits(s):
    """Smallest k with 2^k >= s (float32 s > 0), from the bits: unbiased exponent, +1
    unless the mantissa is 0. Inf -> 128; subnormals give <= -126 (clamped anyway).
    Not ceil(log2(s)): log2 rounds onto the integer just above a power of two."""
    b = s.view(torch.int32)
    return ((b >> 23) & 0xFF) - 127 + ((b & 0x7FFFFF) != 0).to(torch.int32)

def e4m3_sat(y):
    """cvt_e4m3: round to nearest even, saturate to +-448 (the float8_e4m3fn cast does
    not: clamp first), any NaN -> 0x7F (the cast keeps the sign of a NaN)."""
    q = y.clamp(-448.0, 448.0).to(torch.float8_e4m3fn).view(torch.uint8)
    return torch.where(torch.isnan(y), torch.full_like(q, 0x7F), q)

def v41_records(x, inv448):
    """(n, 512) bf16 -> (n, 528) uint8 V41 records."""
    xf = x.float().view(-1, GROUPS, GROUP)
    amax = torch.where(torch.isnan(xf), 0.0, xf.abs()).amax(-1)   # ignores NaN, Inf counts
    a = torch.clamp_min(amax, 1e-4)                                 # FP8_AMAX_MARGIN
    k = ceil_log2_bits(a * inv448).clamp(-126, 126)
    inv_pow = ((127 - k) << 23).view(torch.float32)                 # exactly 2^-k
    codes = e4m3_sat(xf * inv_pow.unsqueeze(-1)).view(-1, D)
    return torch.cat([codes, (k + 127).to(torch.uint8)], dim=1)

def v41_store(cache_rows, slots, x, bs, inv448):
    """cache_rows: the uint8 cache as rows of 528 (block_stride is a multiple of 528)."""
    per_block = v41_block_stride(bs) // V41_BPT
    cache_rows.index_copy_(0, (slots // bs) * per_block + slots % bs, v41_records(x, inv448))

# ---------------------------------------------------- independent NumPy model (SPEC 4.1)
_E4M3 = np.array([(c & 7) / 8 * 2.0 ** -6 if c >> 3 == 0 else (1 + (c & 7) / 8) * 2.0 ** ((c >> 3) - 7)
                  for c in range(127)])                       # codes 0x00..0x7E, 0x7E = 448

def np_e4m3(y):
    with np.errstate(invalid="ignore"):
        y = np.asarray(y, dtype=np.float64)
    mag = np.abs(y)
    lo = np.clip(np.searchsorted(_E4M3, np.nan_to_num(mag), side="right") - 1, 0, 126)
    hi = np.minimum(lo + 1, 126)
    mid = (_E4M3[lo] + _E4M3[hi]) / 2
    code = np.where(mag < mid, lo, np.where(mag > mid, hi, np.where(lo % 2 == 0, lo, hi)))
    code = np.where((_E4M3[lo] == mag) | (mag >= 448), np.where(mag >= 448, 126, lo), code)
    code = code | np.where(np.signbit(y), 0x80, 0)
    return np.where(np.isnan(y), 0x7F, code).astype(np.uint8)

def np_ceil_log2(s):
    m, e = np.frexp(s)
    return np.where(np.isinf(s), 128, np.where(m == 0.5, e - 1, e))

def np_v41_records(bits):
    """(n, 512) bf16 bit patterns (uint16) -> (n, 528) uint8, by frexp and a value table."""
    x = (bits.astype(np.uint32) << 16).view(np.float32).reshape(-1, GROUPS, GROUP)
    with np.errstate(all="ignore"):
        amax = np.where(np.isnan(x), np.float32(0), np.abs(x)).max(-1)
        s = np.maximum(amax, np.float32(1e-4)) * np.array(INV448_BITS, np.uint32).view(np.float32)
        k = np.clip(np_ceil_log2(s.astype(np.float32)), -126, 126)
        y = x * np.ldexp(np.float32(1), -k).astype(np.float32)[..., None]
    return np.concatenate([np_e4m3(y.astype(np.float32)).reshape(-1, D),
                           (k + 127).astype(np.uint8)], axis=1)

def bf16_bits(values):  # exact for values that bf16 holds
    return (np.asarray(values, np.float32).view(np.uint32) >> 16).astype(np.uint16)

def to_bf16(bits, dev):
    return torch.from_numpy(bits.astype(np.int16)).view(torch.bfloat16).to(dev)


# Hand-worked groups, SPEC 4.1 (RN(1/448) = 0.0022321428...):
#   1.0: s = 0.00223 in (2^-9, 2^-8] -> k -8, byte 119; 1.0 * 2^8 = 256 = 2^8 -> 0x78
#   0:   a = 1e-4, s = 2.23e-7 in (2^-23, 2^-22] -> k -22, byte 105; 0 -> 0x00 (-0 -> 0x80)
#   448: 448 * RN(1/448) = 1 + 3*2^-26 rounds to 1.0 -> k 0, byte 127; 448 -> 0x7E
#   450: s > 1 -> k 1, byte 128; 225 -> 224 = 1.75 * 2^7 -> 0x76 (-450 -> 0xF6)
#   Inf: s = Inf -> 128 -> clamp 126, byte 253; Inf -> 448 = 0x7E, 1.0 * 2^-126 -> 0x00
#   mixed (amax 1.0, k -8): 0.25 -> 64 -> 0x68; 2^-12 -> 2^-4 -> 0x18; 2^-17 -> 2^-9 = one
#        subnormal step -> 0x01; 2^-18 -> half a step, tie to even -> 0x00; 3*2^-18 -> 1.5
#        steps, tie to even -> 0x02; -0.25 -> 0xE8
#   2^-14: a = 1e-4 -> k -22; 2^-14 * 2^22 = 256 -> 0x78
#   bf16 max (2-2^-7)*2^127: s in (2^119, 2^120] -> k 120, byte 247; *2^-120 = 255 -> 256 -> 0x78
INF, NAN = float("inf"), float("nan")
HAND = [  # (group values (padded with the last value to 32), scale byte, codes (padded likewise))
    ([1.0], 119, [0x78]), ([0.0], 105, [0x00]), ([-0.0], 105, [0x80]), ([448.0], 127, [0x7E]),
    ([NAN, 1.0], 119, [0x7F, 0x78]), ([INF, 1.0], 253, [0x7E, 0x00]), ([NAN], 105, [0x7F]),
    ([-INF, -1.0], 253, [0xFE, 0x80]), ([2.0], 120, [0x78]), ([450.0], 128, [0x76]),
    ([1.0, 0.25, 2.0**-12, 2.0**-17, 2.0**-18, 3 * 2.0**-18, -0.25, 0.0], 119,
     [0x78, 0x68, 0x18, 0x01, 0x00, 0x02, 0xE8, 0x00]),
    ([896.0], 128, [0x7E]), ([2.0**-14], 105, [0x78]), ([(2 - 2.0**-7) * 2.0**127], 247, [0x78]),
    ([2.0**-133], 105, [0x00]), ([-450.0], 128, [0xF6]),
]

def hand_token():
    pad = lambda v: list(v) + [v[-1]] * (GROUP - len(v))
    bits = np.concatenate([bf16_bits(pad(v)) for v, _, _ in HAND])[None, :]
    want = np.array([c for _, _, cs in HAND for c in pad(cs)] + [b for _, b, _ in HAND], np.uint8)
    return bits, want

def special_tokens(n, rng):
    """bf16 tokens of randn times 2^[-20, 12) per group, ~3% of elements replaced by NaN,
    +-Inf, +-0, subnormals, bf16 max; a few whole groups zero / NaN / Inf."""
    x = rng.standard_normal((n, GROUPS, GROUP)).astype(np.float32)
    x *= np.ldexp(np.float32(1), rng.integers(-20, 12, (n, GROUPS, 1))).astype(np.float32)
    bits = bf16_bits(x).reshape(n, GROUPS, GROUP)
    specials = np.array([0x7FC0, 0xFFC0, 0x7F81, 0x7F80, 0xFF80, 0x0000, 0x8000, 0x0001,
                         0x807F, 0x0080, 0x7F7F, 0xFF7F], np.uint16)
    hit = rng.random(bits.shape) < 0.03
    bits[hit] = rng.choice(specials, hit.sum())
    for g, v in enumerate([0x0000, 0x7FC0, 0x7F80, 0x8000]):
        bits[g::7, g] = v
    return bits.reshape(n, D)

# -------------------------------------------------------------------------- checks
def run_checks(dev, triton_store=None):
    """Correctness of every alternative on `dev`; returns the number of failures."""
    results = []

    def check(name, ok):
        print(("PASS  " if ok else "FAIL  ") + name)
        results.append(bool(ok))

    inv448 = torch.tensor([INV448_BITS], dtype=torch.int32).view(torch.float32).to(dev)
    check("V41 block_stride: bs 64 -> 33792, bs 133 -> 70752 (SPEC 3)",
          (v41_block_stride(64), v41_block_stride(133)) == (33792, 70752))
    f, up = np.float32, lambda v, to: np.nextafter(np.float32(v), np.float32(to))
    s = np.array([2.0**-8, up(2.0**-8, 1), up(2.0**-8, 0), 1, 3, 2.0**100, up(2.0**100, np.inf),
                  f(1e-4) * f(1 / 448), np.inf], np.float32)
    got = ceil_log2_bits(torch.from_numpy(s).to(dev)).cpu().numpy()
    check("ceil_log2 from bits on crafted floats", got.tolist() == [-8, -7, -8, 0, 2, 100, 101, -22, 128]
          and (got == np_ceil_log2(s)).all())
    allbits = np.arange(65536, dtype=np.uint32)
    check("e4m3 encode of all 65,536 bf16 values (NaN, Inf, >448, subnormals)",
          np.array_equal(e4m3_sat(to_bf16(allbits.astype(np.uint16), dev).float()).cpu().numpy(),
                         np_e4m3((allbits << 16).view(np.float32))))
    bits, want = hand_token()
    got = v41_records(to_bf16(bits, dev), inv448).cpu().numpy()[0]
    check("hand-worked V41 record (PyTorch)", np.array_equal(got, want))
    check("hand-worked V41 record (NumPy model)", np.array_equal(np_v41_records(bits)[0], want))
    bits = special_tokens(2048, np.random.default_rng(7))
    got = v41_records(to_bf16(bits, dev), inv448).cpu().numpy()
    check("PyTorch V41 == NumPy model on 2,048 tokens with specials", np.array_equal(got, np_v41_records(bits)))

    g = torch.Generator().manual_seed(3)
    bs, n = 133, 300
    nslots = -(-n // bs) * bs
    slots = torch.randperm(nslots, generator=g)[:n].to(dev)
    cache = torch.full((nslots // bs * v41_block_stride(bs),), SENTINEL, dtype=torch.uint8, device=dev)
    v41_store(cache.view(-1, V41_BPT), slots, to_bf16(bits[:n], dev), bs, inv448)
    ref = np.full(cache.numel(), SENTINEL, np.uint8)
    for i, sl in enumerate(slots.tolist()):
        off = sl // bs * v41_block_stride(bs) + sl % bs * V41_BPT
        ref[off:off + V41_BPT] = np_v41_records(bits[i:i + 1])[0]
    check("V41 store: records at block*block_stride + token*528, rest untouched",
          np.array_equal(cache.cpu().numpy(), ref))

    rows = torch.randn(n, D, generator=g).to(torch.bfloat16).to(dev)
    ref = torch.full((nslots, D), 7.0, dtype=torch.bfloat16, device=dev)
    ref[slots] = rows
    c = torch.full_like(ref, 7.0).index_copy_(0, slots, rows)
    check("index_copy_ == plain indexing", same_bytes(c, ref))
    check("index_select == plain indexing", same_bytes(ref.index_select(0, slots), ref[slots]))
    if triton_store is not None:                   # strided rows, every 5th slot -1
        wide, sm = torch.randn(n, 2 * D, generator=g).to(torch.bfloat16).to(dev), slots.to(torch.int32)
        sm[::5] = -1
        c, want = torch.full_like(ref, 7.0), torch.full_like(ref, 7.0)
        triton_store(wide[:, :D], c, sm)
        want[sm[sm >= 0].long()] = wide[sm >= 0, :D]
        check("Triton store == plain indexing (row stride 1024, -1 rows skipped)", same_bytes(c, want))
    print(f"{sum(results)} passed, {len(results) - sum(results)} failed")
    return len(results) - sum(results)

def same_bytes(a, b):
    return a.shape == b.shape and torch.equal(a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8))

# ----------------------------------------------------------------------- benchmark
try:                                    # --check runs without triton
    import triton
    import triton.language as tl
    import triton.testing
except ImportError:
    triton = None

if triton is not None:
    @triton.jit
    def store_rows_kernel(row_ptr, row_stride, cache_ptr, slot_mapping_ptr, D: tl.constexpr):
        i = tl.program_id(0)                       # one program per token
        slot = tl.load(slot_mapping_ptr + i)
        if slot == -1:                             # padding: write nothing
            return
        offs = tl.arange(0, D)
        row = tl.load(row_ptr + i * row_stride + offs)
        tl.store(cache_ptr + slot.to(tl.int64) * D + offs, row)

def triton_store(rows, cache, slot_mapping):  # rows (n, D) bf16, cache (slots, D), int32 slots
    store_rows_kernel[(rows.shape[0],)](rows, rows.stride(0), cache, slot_mapping, D=D)

def make_graph(fn, launches=200):
    """`launches` back-to-back calls of fn captured in one CUDA graph (compiled and run once first)."""
    fn()                                        # compile outside the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(launches):
            fn()
    graph.replay()                              # warm-up replay
    torch.cuda.synchronize()
    return graph

def time_graph(graph, launches=200, replays=25):
    """Median per-launch time (ms) of a graph made by make_graph, over `replays` replays."""
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(replays)]
    for a, b in ev:
        a.record()
        graph.replay()
        b.record()
    torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) / launches for a, b in ev)

def graph_ms(fn, launches=200):
    """Per-launch time of `launches` back-to-back calls captured in one CUDA graph."""
    return time_graph(make_graph(fn, launches), launches)

def load_shim(path):
    """kvcheck's unchecked BF16(512) store_kv_cache from libkvcheck_bench_store.so
    (bench/store_shim.cpp), called by ctypes on torch's current stream (the capture
    stream inside torch.cuda.graph). Returns store(rows, cache, slot_mapping, bs)."""
    lib = ctypes.CDLL(path)
    f = lib.kvcheck_bench_store_bf16
    v, i64, i32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32
    f.argtypes = [v, i64, i32, i32, v, i64, i64, v, i64, v, ctypes.c_char_p, ctypes.c_size_t]
    f.restype = ctypes.c_int

    def store(rows, cache, slot_mapping, bs):  # cache (slots, D) bf16 = BF16(D) blocks of bs tokens
        err = ctypes.create_string_buffer(512)
        if f(cache.data_ptr(), cache.shape[0] // bs, bs, D, rows.data_ptr(), rows.shape[0], rows.stride(0),
             slot_mapping.data_ptr(), slot_mapping.shape[0], torch.cuda.current_stream().cuda_stream, err, 512):
            sys.exit(f"compare_alternatives: kvcheck store (shim) refused: {err.value.decode()}")
    return store

def need(ok, what):  # a benchmark of a wrong kernel is worthless
    if not ok:
        sys.exit(f"compare_alternatives: check failed after timing: {what}")

def run_bench(args):
    if not torch.cuda.is_available():
        sys.exit("compare_alternatives: CUDA is not available (torch.cuda.is_available() is False);"
                 " run it on the GPU machine, or use --check for the CPU correctness checks")
    if triton is None:
        sys.exit("compare_alternatives: needs triton (import triton failed)")
    dev = torch.device("cuda")
    do_bench = lambda fn: triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")
    store = triton_store
    shim = load_shim(args.shim) if args.shim else None
    out = []

    def add(alt, op, fmt, tokens, bs, ms, nbytes):
        out.append(dict(alternative=alt, op=op, format=fmt, tokens=tokens, block_size=bs,
                        bytes=nbytes, ms=ms, gbps=nbytes / ms / 1e6))

    src = torch.full((int(args.copy_gib * 2**30),), 3, dtype=torch.uint8, device=dev)
    dst = torch.empty_like(src)
    add("copy_ (baseline)", "copy", "-", 0, 0, do_bench(lambda: dst.copy_(src)), 2 * src.numel())
    need(torch.equal(dst, src), "copy_")
    del src, dst
    inv448 = torch.tensor([INV448_BITS], dtype=torch.int32).view(torch.float32).to(dev)
    g = torch.Generator().manual_seed(args.seed)
    n = args.tokens
    for bs in args.block_sizes:
        nslots = -(-n // bs) * bs
        slots = torch.randperm(nslots, generator=g)[:n].to(dev)   # distinct, random order
        slots32 = slots.to(torch.int32)
        rows = torch.randn(n, D, generator=g).to(torch.bfloat16).to(dev)
        ref = torch.full((nslots, D), 7.0, dtype=torch.bfloat16, device=dev)
        ref[slots] = rows                                   # plain indexing assignment
        nb = 2 * n * 2 * D
        cache = torch.full_like(ref, 7.0)
        add("Triton store", "store", "BF16(512)", n, bs, do_bench(lambda: store(rows, cache, slots32)), nb)
        need(same_bytes(cache, ref), f"Triton store bs {bs}")
        for m in args.decode:
            r = torch.randn(m, D, generator=g).to(torch.bfloat16).to(dev)
            sm = slots32[:m].contiguous()
            if shim is None:
                add("Triton store (graph)", "store", "BF16(512)", m, bs, graph_ms(lambda: store(r, cache, sm)),
                    2 * m * 2 * D)
            else:
                # Both stores in the same kind of graph, same rows and slots, each into its own
                # cache, timed alternately --rounds times (the median): one process, one clock.
                ours_cache = torch.full_like(ref, 7.0)
                gt = make_graph(lambda: store(r, cache, sm))
                go = make_graph(lambda: shim(r, ours_cache, sm, bs))
                tt, to = [], []
                for _ in range(args.rounds):
                    tt.append(time_graph(gt))
                    to.append(time_graph(go))
                add("Triton store (graph)", "store", "BF16(512)", m, bs, statistics.median(tt), 2 * m * 2 * D)
                add("kvcheck store (graph, shim)", "store", "BF16(512)", m, bs, statistics.median(to), 2 * m * 2 * D)
                out[-2]["same_process_ms"] = out[-1]["ms"]
                # kvcheck's store checked alone as well: the rows it wrote, and every other row unchanged.
                need(same_bytes(ours_cache[slots[:m]], r), f"kvcheck store (shim) n={m} bs {bs}")
                untouched = torch.ones(ours_cache.shape[0], dtype=torch.bool, device=dev)
                untouched[slots[:m]] = False
                need(bool((ours_cache[untouched] == 7.0).all()), f"kvcheck store (shim) n={m} bs {bs}: other rows")
                del gt, go, ours_cache, untouched
            need(same_bytes(cache[slots[:m]], r), f"Triton store n={m} bs {bs}")
        cache = torch.full_like(ref, 7.0)
        flat = cache.view(-1, D)
        add("index_copy_", "store", "BF16(512)", n, bs, do_bench(lambda: flat.index_copy_(0, slots, rows)), nb)
        need(same_bytes(cache, ref), f"index_copy_ bs {bs}")
        del cache, flat
        add("index_select", "load", "BF16(512)", n, bs, do_bench(lambda: ref.index_select(0, slots)), nb)
        need(same_bytes(ref.index_select(0, slots), ref[slots]) and same_bytes(ref[slots], rows),
             f"index_select bs {bs}")
        del ref, rows
        x = (torch.randn(n, GROUPS, GROUP, generator=g)
             * torch.pow(2.0, torch.randint(-20, 12, (n, GROUPS, 1), generator=g).float()))
        x = x.to(torch.bfloat16).view(n, D).to(dev)
        crows = torch.full((nslots // bs * v41_block_stride(bs) // V41_BPT, V41_BPT), SENTINEL,
                           dtype=torch.uint8, device=dev)         # the cache as 528-byte rows
        add("PyTorch V41", "store", "V41", n, bs, do_bench(lambda: v41_store(crows, slots, x, bs, inv448)),
            n * (2 * D + V41_BPT))
        idx = (slots // bs) * (v41_block_stride(bs) // V41_BPT) + slots % bs
        k = min(args.verify, n)
        bits = x[:k].cpu().view(torch.int16).numpy().view(np.uint16)
        need(np.array_equal(crows[idx[:k]].cpu().numpy(), np_v41_records(bits)),
             f"PyTorch V41 bs {bs}: {k} records vs the NumPy model")
        untouched = torch.ones(crows.shape[0], dtype=torch.bool, device=dev)
        untouched[idx] = False
        need(bool((crows[untouched] == SENTINEL).all()), f"PyTorch V41 bs {bs}: bytes outside records")
        del x, crows, untouched
    torch.cuda.synchronize()
    print(f"correctness checks on {torch.cuda.get_device_name()}:")
    if run_checks(dev, store):
        sys.exit("compare_alternatives: correctness checks failed")
    return out

def read_ours(path):
    """bench_cuda's --json file, refused (before any GPU work) unless it was measured as the
    alternatives here are: scattered slots, plain launches."""
    with open(path) as f:
        ours = json.load(f)
    if ours.get("slots", "scattered") != "scattered":   # bench_cuda --slots blocks: another pattern
        sys.exit(f"compare_alternatives: --ours {path} is a bench_cuda --slots {ours['slots']} run; the"
                 " alternatives here write scattered slots: give a run without --slots")
    if ours.get("launch", "plain") != "plain":  # bench_cuda --pdl: launches the alternatives do not get
        sys.exit(f"compare_alternatives: --ours {path} is a bench_cuda --pdl run; the alternatives here"
                 " launch plainly: give a run without --pdl")
    return ours

def attach_ours(out, ours):
    for r in out:
        if "same_process_ms" in r or "(graph, shim)" in r["alternative"]:
            continue                            # measured beside ours in this process (--shim)
        r["ours_gbps"] = r["ours_over_theirs"] = None
        if r["op"] == "copy":
            r["ours_gbps"] = ours.get("copy_gbps")
        else:
            # A graph-replayed alternative against our rows timed in a CUDA graph, the
            # rest against the rest (bench_cuda's "timing").
            graph = "(graph)" in r["alternative"]
            m = [o for o in ours.get("rows", []) if (o["op"], o["format"], o["tokens"], o["block_size"])
                 == (r["op"], r["format"], r["tokens"], r["block_size"]) and (o.get("timing") == "graph") == graph]
            if not m:
                continue
            r["ours_gbps"] = m[0]["gbps"]
            if m[0].get("bytes") not in (None, r["bytes"]):
                print(f"note: {r['alternative']} {r['format']} n={r['tokens']} bs={r['block_size']}: kvcheck"
                      f" counts {m[0]['bytes']} bytes, this script {r['bytes']}; ratio by time instead")
                r["ours_gbps"] = r["bytes"] / m[0]["ms"] / 1e6
        if r["ours_gbps"]:
            r["ours_over_theirs"] = r["ours_gbps"] / r["gbps"]

def print_table(out):
    copy = out[0]["gbps"]
    head = ["alternative", "op", "format", "tokens", "block_size", "ms", "GB/s", "% of copy",
            "ours GB/s", "ours/theirs"]
    fmt = lambda v, spec: "-" if v is None else format(v, spec)
    body = [[r["alternative"], r["op"], r["format"], str(r["tokens"]), str(r["block_size"]),
             f"{r['ms']:.5f}", f"{r['gbps']:.1f}", f"{100 * r['gbps'] / copy:.1f}",
             fmt(r.get("ours_gbps"), ".1f"), fmt(r.get("ours_over_theirs"), ".2f")] for r in out]
    w = [max(len(x[i]) for x in body + [head]) for i in range(len(head))]
    for line in [head] + body:
        print("  ".join(c.ljust(w[i]) if i < 3 else c.rjust(w[i]) for i, c in enumerate(line)))

def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ints = lambda s: [int(v) for v in s.split(",") if v]
    p.add_argument("--tokens", type=int, default=262144)
    p.add_argument("--block-sizes", type=ints, default=[64, 133])
    p.add_argument("--decode", type=ints, default=[1, 16, 256], help="Triton store decode sizes")
    p.add_argument("--copy-gib", type=float, default=2.0, help="size of each copy_ buffer")
    p.add_argument("--verify", type=int, default=16384, help="V41 records checked against NumPy")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--ours", help="kvcheck's C++ benchmark JSON")
    p.add_argument("--json", help="write the table as JSON here")
    p.add_argument("--check", action="store_true", help="correctness checks only (CPU if no CUDA)")
    p.add_argument("--shim", help="libkvcheck_bench_store.so: time kvcheck's decode store beside Triton's, here")
    p.add_argument("--rounds", type=int, default=5, help="alternating graph timings per decode size (--shim)")
    args = p.parse_args()
    if args.check:
        dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        store = triton_store if triton is not None and dev.type == "cuda" else None
        if store is None:
            print(f"Triton store not checked (needs CUDA and triton; device {dev})")
        return 1 if run_checks(dev, store) else 0
    ours = read_ours(args.ours) if args.ours else None
    out = run_bench(args)
    for r in out:
        if "same_process_ms" in r:              # ours/theirs by time, both measured here
            r["ours_gbps"] = r["bytes"] / r["same_process_ms"] / 1e6
            r["ours_over_theirs"] = r["ms"] / r["same_process_ms"]
    if ours is not None:
        attach_ours(out, ours)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                       "copy_gbps": out[0]["gbps"], "rows": out}, f, indent=1)
    print()
    print_table(out)
    return 0

if __name__ == "__main__":
    sys.exit(main())
