"""KernelIndex's native GQA paged-decode kernel (`crates/kernels/cuda/gqa_paged_decode.cu`) called from PyTorch.

The same CUDA source the Rust launcher (`crates/kernels/src/gqa_paged_decode.rs`) compiles, compiled the same
way: by NVRTC at run time (here through CuPy), one build per definition and tuning, with the configuration
as `-D` defines. The tuning and the balanced schedule's chunk come from shapes and the driver's occupancy by
the Rust launcher's rules (`automatic_tuning`, `balanced_chunk_tokens`, `plan_launch`), ported below. One
difference, stated: a batch of very few short sequences, which the Rust launcher runs as thread-block
clusters on sm_90, runs here under the balanced schedule (clusters need `cuLaunchKernelEx`), so such a
call can be slower than the published runs, which are the Rust launcher's. Results are the same kernel's.

    import torch, ki_gqa_paged_decode as ki
    decode = ki.GqaPagedDecode(num_qo_heads=32, num_kv_heads=4, head_dim=128, page_size=1)
    out, lse = decode(q, k_cache, v_cache, kv_indptr, kv_indices, sm_scale=128 ** -0.5)

Layouts (the FlashInfer-Bench definitions'): q `[batch, num_qo_heads, head_dim]` bf16, k_cache and v_cache
`[num_pages, page_size, num_kv_heads, head_dim]` bf16, kv_indptr `[batch + 1]` int32, kv_indices
`[kv_indptr[batch]]` int32 page ids, kv_last_page_len `[batch]` int32 (page_size > 1 only); out as q, lse
`[batch, num_qo_heads]` float32 in base 2. One call is one launch on PyTorch's current stream, with no
host synchronization and nothing read back, so it can be captured in a CUDA graph.

Needs an NVIDIA GPU of compute capability 8.0 or newer, PyTorch with CUDA, and CuPy for the same CUDA
major version (`pip install cupy-cuda12x` or `cupy-cuda13x`); no CUDA toolkit (NVRTC comes with CuPy's
CUDA wheels or the driver's libraries).
"""

import ctypes
import math
import pathlib

SOURCE_PATH = pathlib.Path(__file__).resolve().parent.parent / "cuda" / "gqa_paged_decode.cu"
KERNEL_NAME = "gqa_paged_decode"
MAX_SMEM_PER_CTA = 227 * 1024
IDX_CACHE_ENTRIES = 2048
MAX_PARTS_PER_SEQUENCE = 32_767
SATURATION_TILES = 1600
FILL_PART_TOKENS = 384
MIN_PART_TOKENS_PER_WARP = 80
CLUSTER_PART_TOKENS = 128
MAX_CLUSTER = 8
# (warps per CTA, pipeline stages): the Rust launcher's AUTOMATIC_VARIANTS, in its order.
SMALL, DEEP, FIVE = (4, 2), (8, 3), (5, 2)
CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8


class KernelArgs(ctypes.Structure):
    """`struct Args` of the .cu file, passed by value."""

    _fields_ = [
        (name, ctypes.c_uint64)
        for name in ("q", "k_cache", "v_cache", "kv_indptr", "kv_indices", "kv_last_page_len", "out", "lse", "partial", "counters")
    ] + [
        ("scale_log2", ctypes.c_float),
        ("batch", ctypes.c_int32),
        ("num_entries", ctypes.c_int32),
        ("num_pages", ctypes.c_int32),
        ("chunk", ctypes.c_int32),
        ("cluster_parts", ctypes.c_int32),
        ("cache_indices", ctypes.c_int32),
    ]


def div_ceil(a, b):
    return -(-a // b)


def warp_shared_bytes(head_dim, stages):
    return stages * 2 * 16 * head_dim * 2 + stages * 16 * 4


def balanced_chunk_tokens(total_tokens, batch, warps, stages, head_tiles, wave_rows):
    """`balanced_chunk_tokens` of gqa_paged_decode.rs: the most tokens of one item of the balanced plan."""
    batch, total, wave_rows = max(batch, 1), max(total_tokens, 1), max(wave_rows, 1)
    skew = max(div_ceil(total, batch), MIN_PART_TOKENS_PER_WARP * warps)
    target_rows = min(max(SATURATION_TILES // (warps * (stages - 1) * head_tiles), 1), wave_rows)
    if batch < target_rows:
        fill = div_ceil(total, target_rows - batch)
        chunk = min(fill, skew) if fill >= FILL_PART_TOKENS else skew
    else:
        chunk = max(skew, div_ceil(total, wave_rows))
    return min(chunk, 2**32 - 1)


class GqaPagedDecode:
    """The kernel compiled for one definition (`gqa_paged_decode_h<Q>_kv<K>_d<D>_ps<P>`) on the current device."""

    def __init__(self, num_qo_heads, num_kv_heads, head_dim, page_size, device=None):
        import cupy
        import torch

        if num_qo_heads <= 0 or num_kv_heads <= 0 or num_qo_heads % num_kv_heads:
            raise ValueError(f"num_qo_heads {num_qo_heads} must be a positive multiple of num_kv_heads {num_kv_heads}")
        if head_dim not in (64, 128):
            raise ValueError(f"head_dim {head_dim} is not 64 or 128")
        if not 1 <= page_size <= 1 << 16:
            raise ValueError(f"page_size {page_size} is outside 1..=65536")
        self.torch, self.cupy = torch, cupy
        self.device = torch.device(device if device is not None else torch.cuda.current_device())
        major, _ = torch.cuda.get_device_capability(self.device)
        if major < 8:
            raise RuntimeError("the kernel needs compute capability 8.0 or newer (mma.sync bf16, ldmatrix, cp.async)")
        self.num_qo_heads, self.num_kv_heads, self.head_dim, self.page_size = num_qo_heads, num_kv_heads, head_dim, page_size
        self.group = num_qo_heads // num_kv_heads
        self.head_tiles = num_kv_heads * div_ceil(self.group, 16)
        self.sm_count = torch.cuda.get_device_properties(self.device).multi_processor_count
        self.max_cluster = MAX_CLUSTER if major >= 9 else 1
        source = SOURCE_PATH.read_text()
        self.variants = {}
        with cupy.cuda.Device(self.device.index):
            for warps, stages in (SMALL, DEEP, FIVE):
                options = (
                    "-std=c++17",
                    f"-DHEAD_DIM={head_dim}",
                    f"-DPAGE_SIZE={page_size}",
                    f"-DGROUP={self.group}",
                    f"-DNUM_KV_HEADS={num_kv_heads}",
                    f"-DNSTAGE={stages}",
                    f"-DWARPS={warps}",
                    "-DCLUSTER_MERGE=0",
                )
                kernel = cupy.RawModule(code=source, options=options, backend="nvrtc").get_function(KERNEL_NAME)
                # get_function gives a RawKernel; the driver calls take its CUfunction (a
                # cupy.cuda.Function's `ptr`), and the module must outlive it (kept in variants).
                function = kernel.kernel
                shared = warp_shared_bytes(head_dim, stages) * warps
                cupy.cuda.driver.funcSetAttribute(
                    function.ptr, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, min(shared + IDX_CACHE_ENTRIES * 4, MAX_SMEM_PER_CTA)
                )
                ctas = cupy.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(function.ptr, 32 * warps, shared)
                self.variants[(warps, stages)] = (function, max(ctas, 1), kernel)
        self.workspaces = {}

    def tuning(self, batch, num_kv_indices):
        """`automatic_tuning` of gqa_paged_decode.rs, less its cluster case (which takes the small tuning too)."""
        rows = batch * self.head_tiles
        average = div_ceil(num_kv_indices * self.page_size, max(batch, 1))
        if self.cluster_parts(batch, average) is not None:
            return SMALL
        if 2 * rows <= self.sm_count and 384 <= average <= 2048:
            return DEEP
        if (
            average > 256 * SMALL[0]
            and average > 256 * FIVE[0]
            and self.last_wave_fill(FIVE, batch, num_kv_indices) > self.last_wave_fill(SMALL, batch, num_kv_indices) + 0.1
        ):
            return FIVE
        return SMALL

    def cluster_parts(self, batch, average):
        """`cluster_parts` of gqa_paged_decode.rs: where the Rust launcher would use clusters (this one runs them balanced)."""
        room = (self.sm_count // 4) // (max(batch, 1) * self.head_tiles)
        parts = min(room, average // CLUSTER_PART_TOKENS, self.max_cluster)
        return parts if parts >= 2 and average <= 2048 else None

    def last_wave_fill(self, tuning, batch, num_kv_indices):
        slots = self.variants[tuning][1] * self.sm_count
        wave_rows = max(slots // self.head_tiles, 1)
        chunk = balanced_chunk_tokens(num_kv_indices * self.page_size, batch, *tuning, self.head_tiles, wave_rows)
        average = div_ceil(num_kv_indices * self.page_size, max(batch, 1))
        items = max(batch, 1) * (1 if average <= chunk else div_ceil(average, chunk))
        ctas = items * self.head_tiles
        return ctas / (div_ceil(ctas, slots) * slots)

    def plan(self, batch, num_kv_indices):
        """`plan_launch` of gqa_paged_decode.rs under the balanced schedule: (tuning, chunk entries, grid, shared bytes, cache, partial floats, counters)."""
        if num_kv_indices * self.page_size > 2**31 - 1:
            raise ValueError(f"num_kv_indices {num_kv_indices} x page_size {self.page_size} exceeds int32 token positions")
        warps, stages = tuning = self.tuning(batch, num_kv_indices)
        cache = num_kv_indices <= IDX_CACHE_ENTRIES
        shared = warp_shared_bytes(self.head_dim, stages) * warps + (div_ceil(num_kv_indices * 4, 16) * 16 if cache else 0)
        wave_rows = max(self.variants[tuning][1] * self.sm_count // self.head_tiles, 1)
        chunk_tokens = balanced_chunk_tokens(num_kv_indices * self.page_size, batch, warps, stages, self.head_tiles, wave_rows)
        chunk = min(max(div_ceil(chunk_tokens, self.page_size), div_ceil(num_kv_indices, MAX_PARTS_PER_SEQUENCE), 1), 2**31 - 1)
        items = max(batch + num_kv_indices // chunk, 1)
        records = items if num_kv_indices > chunk else 0
        partial = records * self.head_tiles * (16 * self.head_dim + 32)
        return tuning, chunk, items * self.head_tiles, shared, cache, partial, max(batch * self.head_tiles, 1)

    def workspace(self, partial, counters):
        """Partial records and arrival counters, grown as needed; every launch leaves the counters at zero."""
        torch = self.torch
        stream = torch.cuda.current_stream(self.device).cuda_stream
        have = self.workspaces.get(stream)
        if have is None or have[0].numel() < partial or have[1].numel() < counters:
            have = (
                torch.empty(max(partial, 1), dtype=torch.float32, device=self.device),
                torch.zeros(max(counters, 1), dtype=torch.int32, device=self.device),
            )
            self.workspaces[stream] = have
        return have

    def __call__(self, q, k_cache, v_cache, kv_indptr, kv_indices, sm_scale, kv_last_page_len=None, out=None, lse=None):
        torch = self.torch
        batch = q.shape[0]
        expect = [
            (q, torch.bfloat16, (batch, self.num_qo_heads, self.head_dim)),
            (k_cache, torch.bfloat16, (k_cache.shape[0], self.page_size, self.num_kv_heads, self.head_dim)),
            (v_cache, torch.bfloat16, tuple(k_cache.shape)),
            (kv_indptr, torch.int32, (batch + 1,)),
            (kv_indices, torch.int32, (kv_indices.shape[0],)),
        ]
        if self.page_size > 1:
            if kv_last_page_len is None:
                raise ValueError("page_size > 1 needs kv_last_page_len")
            expect.append((kv_last_page_len, torch.int32, (batch,)))
        for tensor, dtype, shape in expect:
            if tensor.dtype != dtype or tuple(tensor.shape) != shape or not tensor.is_contiguous() or tensor.device != self.device:
                raise ValueError(f"expected a contiguous {dtype} tensor of shape {shape} on {self.device}, got {tensor.dtype} {tuple(tensor.shape)}")
        if not math.isfinite(sm_scale):
            raise ValueError(f"sm_scale {sm_scale} is not finite")
        out = torch.empty_like(q) if out is None else out
        lse = torch.empty((batch, self.num_qo_heads), dtype=torch.float32, device=self.device) if lse is None else lse
        if batch == 0:
            return out, lse
        num_kv_indices, num_pages = kv_indices.shape[0], k_cache.shape[0]
        tuning, chunk, ctas, shared, cache, partial, counters = self.plan(batch, num_kv_indices)
        partial_buffer, counter_buffer = self.workspace(partial, counters)
        args = KernelArgs(
            q.data_ptr(),
            k_cache.data_ptr(),
            v_cache.data_ptr(),
            kv_indptr.data_ptr(),
            kv_indices.data_ptr(),
            kv_last_page_len.data_ptr() if kv_last_page_len is not None else 0,
            out.data_ptr(),
            lse.data_ptr(),
            partial_buffer.data_ptr(),
            counter_buffer.data_ptr(),
            sm_scale * math.log2(math.e),
            batch,
            num_kv_indices,
            num_pages,
            chunk,
            0,
            int(cache and kv_indices.data_ptr() % 16 == 0),
        )
        params = (ctypes.c_void_p * 1)(ctypes.addressof(args))
        function, _, _ = self.variants[tuning]
        stream = torch.cuda.current_stream(self.device).cuda_stream
        with self.cupy.cuda.Device(self.device.index):
            self.cupy.cuda.driver.launchKernel(function.ptr, ctas, 1, 1, 32 * tuning[0], 1, 1, shared, stream, ctypes.addressof(params), 0)
        return out, lse
