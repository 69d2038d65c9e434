// GQA paged-decode attention for Hopper (sm_90), compiled by NVRTC at run time.
//
// Compile-time configuration (passed as -D by the Rust launcher):
//   HEAD_DIM      64 or 128
//   PAGE_SIZE     tokens per page (1, 16, 64, ...)
//   GROUP         query heads per KV head (any value >= 1)
//   NUM_KV_HEADS  KV heads per token row
//   NSTAGE        cp.async pipeline depth per warp (2..6)
//   WARPS         warps per CTA
//   CLUSTER_MERGE 1: the build for cluster launches (sm_90), whose parts of a sequence merge in
//                 distributed shared memory; 0 (default): no cluster instruction at all, since
//                 a kernel that has them costs ~0.6 µs more per launch even in clusters of one
//                 (bench/gqa-paged-decode/NOTES.md, v8)
//
// Work split. The flat index space of kv_indices (one entry per page) is cut into
// units of `entries_per_unit` consecutive entries; each CTA owns one unit for one
// (KV head, 16-row query tile), and its warps take the unit's 16-token tiles in turn
// (warp w: tiles w, w + WARPS, ...), each with its own cp.async pipeline, combining
// their (O, m, l) in shared memory. A unit is cut by sequence boundaries into pieces. A
// piece that holds a whole sequence writes the output directly; otherwise the CTA
// writes an unnormalised partial (O, m, l) and bumps a per-(sequence, head) counter;
// the CTA that brings the counter to the sequence's piece count merges all pieces
// and resets the counter to 0 for the next launch. Every CTA therefore reads at
// most `entries_per_unit` pages, whatever the batch's length skew, and one launch
// does everything with no host-side planning: the schedule comes from kv_indptr on
// the device. When sequences are short on average (the host knows only batch and
// num_kv_indices), units follow sequences instead (`max_parts` > 0): CTA (b, head tile, p)
// takes part p of sequence b, whose entries are cut into
// min(max_parts, max(1, floor(n / entries_per_unit))) equal parts, each at least
// entries_per_unit long; a sequence of one part writes its output directly (no partials,
// no merge), and rows past a sequence's part count exit at once. Launched in clusters of
// max_parts CTAs (sm_90), the parts of a sequence merge in distributed shared memory
// instead of through global records.
//
// Math per 16-token tile, per warp: S = Q K^T with mma.m16n8k16 (query heads of the
// group as the M dimension, head_dim as K), online softmax in base 2 in fp32, then
// O += P V with P rounded to bf16 (fp32 accumulation).

#ifndef HEAD_DIM
#error "HEAD_DIM must be defined"
#endif

typedef unsigned short bf16_raw;
typedef unsigned int u32;

#define MTILES ((GROUP + 15) / 16)
#define HY (NUM_KV_HEADS * MTILES)
#define ROW_BYTES (HEAD_DIM * 2)
#define CHUNKS (HEAD_DIM / 8)          // 16-byte chunks per row
#define KSTEPS (HEAD_DIM / 16)         // mma k-steps for Q K^T
#define NTILES (HEAD_DIM / 8)          // mma n-tiles for P V
#define TILE_BYTES (16 * ROW_BYTES)    // one 16-row tile of K (or V)
#define IDS_BYTES (NSTAGE * 16 * 4)      // ring of page ids, one slot per stage
#define WARP_SMEM (NSTAGE * 2 * TILE_BYTES + IDS_BYTES)
#define REC_FLOATS (16 * HEAD_DIM + 32)  // partial record: O[16][D], m[16], l[16]
#define TOKEN_STRIDE (NUM_KV_HEADS * HEAD_DIM)  // elements between consecutive tokens

static __device__ __forceinline__ float fast_exp2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

static __device__ __forceinline__ u32 pack_bf16x2(float lo, float hi) {
    u32 r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

static __device__ __forceinline__ u32 smem_addr(const void* p) {
    return (u32)__cvta_generic_to_shared(p);
}

static __device__ __forceinline__ void cp_async16(u32 dst, const void* src, bool valid) {
    // src-size 0 zero-fills the row: rows past a piece's end must read as zeros so
    // that P (= 0 there) times V cannot make NaN from whatever bytes lie in memory.
    int src_bytes = valid ? 16 : 0;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}

static __device__ __forceinline__ void cp_async4(u32 dst, const void* src, bool valid) {
    int src_bytes = valid ? 4 : 0;
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}

static __device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

template <int N>
static __device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

static __device__ __forceinline__ void ldmatrix_x4(u32 addr, u32& r0, u32& r1, u32& r2, u32& r3) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(addr));
}

static __device__ __forceinline__ void ldmatrix_x4_trans(u32 addr, u32& r0, u32& r1, u32& r2, u32& r3) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(addr));
}

static __device__ __forceinline__ void mma_bf16(float (&c)[4], const u32 (&a)[4], u32 b0, u32 b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Byte offset of (row, 16-byte chunk) inside a tile: XOR swizzle so that the 8 rows an
// ldmatrix reads at one logical chunk fall in 8 different bank groups.
static __device__ __forceinline__ u32 swz(int row, int chunk) {
    return (u32)(row * ROW_BYTES + ((chunk ^ (row & 7)) << 4));
}

static __device__ __forceinline__ int clamp_int(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

// Thread-block clusters (sm_90): the CTAs that hold the parts of one sequence merge them through
// distributed shared memory, with no global-memory record, fence or atomic. Elsewhere every CTA
// is a cluster of one.
#ifndef CLUSTER_MERGE
#define CLUSTER_MERGE 0
#endif
#define USE_CLUSTERS (CLUSTER_MERGE && __CUDA_ARCH__ >= 900)

static __device__ __forceinline__ u32 cluster_ctas() {
#if USE_CLUSTERS
    u32 n;
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
    return n;
#else
    return 1;
#endif
}

// All threads of every CTA of the cluster; shared-memory writes before it are seen after it.
static __device__ __forceinline__ void cluster_sync() {
#if USE_CLUSTERS
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
#endif
}

// The generic address of `p` in the shared memory of the cluster's CTA `rank`.
static __device__ __forceinline__ const float* cluster_peer(const float* p, u32 rank) {
#if USE_CLUSTERS
    unsigned long long r;
    asm volatile("mapa.u64 %0, %1, %2;" : "=l"(r) : "l"(p), "r"(rank));
    return (const float*)r;
#else
    return p;
#endif
}

// Tokens in the last page, as the reference's slice `page[:last_len]` counts them.
static __device__ __forceinline__ int last_page_tokens(const int* kv_last_page_len, int b) {
#if PAGE_SIZE == 1
    return 1;
#else
    int ll = __ldg(kv_last_page_len + b);
    if (ll < 0) ll = PAGE_SIZE + ll;
    return clamp_int(ll, 0, PAGE_SIZE);
#endif
}

struct Args {
    const bf16_raw* q;
    const bf16_raw* k_cache;
    const bf16_raw* v_cache;
    const int* kv_indptr;
    const int* kv_indices;
    const int* kv_last_page_len;
    bf16_raw* out;
    float* lse;
    float* partial;
    int* counters;
    float scale_log2;  // sm_scale * log2(e)
    int batch;
    int num_entries;   // length of kv_indices
    int num_pages;
    int entries_per_unit;  // fixed units: entries per unit; per sequence: least entries per part
    int num_units;
    int max_parts;     // > 0: per-sequence schedule, grid.x = batch * max_parts; 0: fixed-size units
};

// Writes zeros and -inf for the query rows of one (sequence, head tile): an empty sequence.
static __device__ void write_empty(const Args& a, int b, int kvh, int mt, int lane) {
    const int rows = min(16, GROUP - mt * 16);
    const int head0 = kvh * GROUP + mt * 16;
    for (int i = lane; i < rows * HEAD_DIM / 2; i += 32) {
        int r = i / (HEAD_DIM / 2), c = (i % (HEAD_DIM / 2)) * 2;
        *(u32*)(a.out + ((size_t)b * (NUM_KV_HEADS * GROUP) + head0 + r) * HEAD_DIM + c) = 0u;
    }
    if (lane < rows) a.lse[(size_t)b * (NUM_KV_HEADS * GROUP) + head0 + lane] = -__int_as_float(0x7f800000);
}

// Merges the `npieces` partial records of sequence b (`record(i)` is piece i's) into the final
// output. All rows of a piece are read at once (lanes own columns), so the loop over pieces,
// not rows × pieces, sets the number of dependent L2 round trips. `scratch` is this warp's idle
// shared memory.
template <typename Record>
static __device__ void merge_pieces(const Args& a, int b, int npieces, Record record, int kvh, int mt, int lane, float* scratch) {
    const int rows = min(16, GROUP - mt * 16);
    const int head0 = kvh * GROUP + mt * 16;
    const float NEG_INF = -__int_as_float(0x7f800000);
    constexpr int VEC = HEAD_DIM / 32;
    constexpr int WCAP = WARP_SMEM / (16 * 4);  // pieces whose weights fit in scratch
    // Pass 1: each lane holds its first piece's m and l (one round trip when npieces <= 32).
    float M[16], L[16], m_own[16], l_own[16];
    const float* own = record(lane);
#pragma unroll
    for (int r = 0; r < 16; ++r) {
        m_own[r] = (lane < npieces && r < rows) ? __ldcg(own + 16 * HEAD_DIM + r) : NEG_INF;
        l_own[r] = (lane < npieces && r < rows) ? __ldcg(own + 16 * HEAD_DIM + 16 + r) : 0.f;
        M[r] = m_own[r];
        L[r] = 0.f;
    }
    for (int i = lane + 32; i < npieces; i += 32) {
        const float* rec = record(i);
#pragma unroll
        for (int r = 0; r < 16; ++r)
            if (r < rows) M[r] = fmaxf(M[r], __ldcg(rec + 16 * HEAD_DIM + r));
    }
#pragma unroll
    for (int r = 0; r < 16; ++r) {
        for (int o = 16; o > 0; o >>= 1) M[r] = fmaxf(M[r], __shfl_xor_sync(0xffffffffu, M[r], o));
        if (M[r] == NEG_INF) M[r] = 0.f;  // every piece empty: weights become 0, not NaN
    }
    // Pass 2: piece weights 2^(m_i - M) into scratch, and the rescaled sum L.
    if (lane < npieces) {
#pragma unroll
        for (int r = 0; r < 16; ++r) {
            float w = fast_exp2(m_own[r] - M[r]);
            L[r] += w * l_own[r];
            if (lane < WCAP) scratch[lane * 16 + r] = w;
        }
    }
    for (int i = lane + 32; i < npieces; i += 32) {
        const float* rec = record(i);
#pragma unroll
        for (int r = 0; r < 16; ++r) {
            if (r < rows) {
                float w = fast_exp2(__ldcg(rec + 16 * HEAD_DIM + r) - M[r]);
                L[r] += w * __ldcg(rec + 16 * HEAD_DIM + 16 + r);
                if (i < WCAP) scratch[i * 16 + r] = w;
            }
        }
    }
#pragma unroll
    for (int r = 0; r < 16; ++r)
        for (int o = 16; o > 0; o >>= 1) L[r] += __shfl_xor_sync(0xffffffffu, L[r], o);
    __syncwarp();
    float acc[16][VEC];
#pragma unroll
    for (int r = 0; r < 16; ++r)
#pragma unroll
        for (int v = 0; v < VEC; ++v) acc[r][v] = 0.f;
#pragma unroll 2
    for (int i = 0; i < npieces; ++i) {
        const float* rec = record(i);
#pragma unroll
        for (int r = 0; r < 16; ++r) {
            if (r < rows) {
                float w = i < WCAP ? scratch[i * 16 + r] : fast_exp2(__ldcg(rec + 16 * HEAD_DIM + r) - M[r]);
#if HEAD_DIM == 128
                float4 x = __ldcg((const float4*)(rec + r * HEAD_DIM + lane * 4));
                acc[r][0] += w * x.x;
                acc[r][1] += w * x.y;
                acc[r][2] += w * x.z;
                acc[r][3] += w * x.w;
#else
                float2 x = __ldcg((const float2*)(rec + r * HEAD_DIM + lane * 2));
                acc[r][0] += w * x.x;
                acc[r][1] += w * x.y;
#endif
            }
        }
    }
    __syncwarp();  // scratch is the pipeline's memory again after this
#pragma unroll
    for (int r = 0; r < 16; ++r) {
        if (r < rows) {
            const float inv = L[r] > 0.f ? 1.f / L[r] : 0.f;
            bf16_raw* dst = a.out + ((size_t)b * (NUM_KV_HEADS * GROUP) + head0 + r) * HEAD_DIM + lane * VEC;
#pragma unroll
            for (int v = 0; v < VEC; v += 2) *(u32*)(dst + v) = pack_bf16x2(acc[r][v] * inv, acc[r][v + 1] * inv);
            if (lane == 0) a.lse[(size_t)b * (NUM_KV_HEADS * GROUP) + head0 + r] = L[r] > 0.f ? M[r] + log2f(L[r]) : NEG_INF;
        }
    }
}

// A warp's unnormalised (O, m, l) for 16 query rows, in the mma layout: lane holds O[n][0..1]
// and m0, l0 of row g = lane / 4, O[n][2..3] and m1, l1 of row g + 8 (l is summed over the quad).
struct State {
    float o[NTILES][4];
    float m0, m1, l0, l1;
};

// Layout of a State in shared memory for combining: value k of every lane at k * 32 + lane.
#define STATE_FLOATS ((NTILES * 4 + 4) * 32)

static __device__ __forceinline__ void store_state(float* slot, const State& st, int lane) {
#pragma unroll
    for (int n = 0; n < NTILES; ++n)
#pragma unroll
        for (int c = 0; c < 4; ++c) slot[(n * 4 + c) * 32 + lane] = st.o[n][c];
    slot[(NTILES * 4 + 0) * 32 + lane] = st.m0;
    slot[(NTILES * 4 + 1) * 32 + lane] = st.m1;
    slot[(NTILES * 4 + 2) * 32 + lane] = st.l0;
    slot[(NTILES * 4 + 3) * 32 + lane] = st.l1;
}

// The combination of `count` stored states (`slot(i)` is state i's memory: a warp's region of
// this CTA, or a cluster peer's).
template <typename Slot>
static __device__ __forceinline__ State combine_states(Slot slot, int count, int lane) {
    const float NEG_INF = -__int_as_float(0x7f800000);
    State r;
    float M0 = NEG_INF, M1 = NEG_INF;
    for (int i = 0; i < count; ++i) {
        const float* other = slot(i);
        M0 = fmaxf(M0, other[(NTILES * 4 + 0) * 32 + lane]);
        M1 = fmaxf(M1, other[(NTILES * 4 + 1) * 32 + lane]);
    }
    const float mu0 = M0 == NEG_INF ? 0.f : M0, mu1 = M1 == NEG_INF ? 0.f : M1;
#pragma unroll
    for (int n = 0; n < NTILES; ++n) r.o[n][0] = r.o[n][1] = r.o[n][2] = r.o[n][3] = 0.f;
    r.l0 = r.l1 = 0.f;
    for (int i = 0; i < count; ++i) {
        const float* other = slot(i);
        const float w0 = fast_exp2(other[(NTILES * 4 + 0) * 32 + lane] - mu0);
        const float w1 = fast_exp2(other[(NTILES * 4 + 1) * 32 + lane] - mu1);
        r.l0 += w0 * other[(NTILES * 4 + 2) * 32 + lane];
        r.l1 += w1 * other[(NTILES * 4 + 3) * 32 + lane];
#pragma unroll
        for (int n = 0; n < NTILES; ++n) {
            r.o[n][0] += w0 * other[(n * 4 + 0) * 32 + lane];
            r.o[n][1] += w0 * other[(n * 4 + 1) * 32 + lane];
            r.o[n][2] += w1 * other[(n * 4 + 2) * 32 + lane];
            r.o[n][3] += w1 * other[(n * 4 + 3) * 32 + lane];
        }
    }
    r.m0 = M0;
    r.m1 = M1;
    return r;
}

// Normalises a whole sequence's state and writes its output rows and lse.
static __device__ __forceinline__ void write_output(const Args& a, int b, int head0, int rows_here, int lane, const State& st) {
    const float NEG_INF = -__int_as_float(0x7f800000);
    const int g = lane >> 2, t4 = lane & 3;
    const size_t qrow0 = (size_t)b * (NUM_KV_HEADS * GROUP) + head0;
    const float inv0 = st.l0 > 0.f ? 1.f / st.l0 : 0.f, inv1 = st.l1 > 0.f ? 1.f / st.l1 : 0.f;
#pragma unroll
    for (int n = 0; n < NTILES; ++n) {
        int c = n * 8 + t4 * 2;
        if (g < rows_here) *(u32*)(a.out + (qrow0 + g) * HEAD_DIM + c) = pack_bf16x2(st.o[n][0] * inv0, st.o[n][1] * inv0);
        if (g + 8 < rows_here) *(u32*)(a.out + (qrow0 + g + 8) * HEAD_DIM + c) = pack_bf16x2(st.o[n][2] * inv1, st.o[n][3] * inv1);
    }
    if (t4 == 0) {
        if (g < rows_here) a.lse[qrow0 + g] = st.l0 > 0.f ? st.m0 + log2f(st.l0) : NEG_INF;
        if (g + 8 < rows_here) a.lse[qrow0 + g + 8] = st.l1 > 0.f ? st.m1 + log2f(st.l1) : NEG_INF;
    }
}

extern "C" __global__ void __launch_bounds__(WARPS * 32)
gqa_paged_decode(const Args a) {
    extern __shared__ __align__(128) unsigned char smem_raw[];
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    // All warps of the CTA work on one unit: warp w takes its pieces' tiles w, w + WARPS, ...
    // so a unit's serial instruction path is WARPS times shorter than with one warp per unit
    // (bench/gqa-paged-decode/NOTES.md, v5), and the warps combine in shared memory.
    const int unit = blockIdx.x;
    const int wfirst = warp, wstride = WARPS;
    const int hy = blockIdx.y;
    const int kvh = hy / MTILES;
    const int mt = hy % MTILES;
    const int C = a.entries_per_unit;
    const int T = a.num_entries;
    // Per-sequence schedule: the unit is one part of sequence `seq`'s entry range, at the price
    // of one kv_indptr load before the page ids; a sequence of one part writes its output
    // directly. The host chooses it for short average sequences.
    const bool per_sequence = a.max_parts > 0;
    // Launched in clusters of max_parts CTAs along z (the host's choice): rank p is part p.
    const bool in_cluster = per_sequence && cluster_ctas() > 1;
    int e0, e1, seq = 0, part = 0, nparts = 1;
    if (per_sequence) {
        // Parts are the grid's slowest dimension, so that every sequence's first part is
        // dispatched before any other part (on a uniform batch most of those exit at once).
        seq = unit;
        part = blockIdx.z;
        const int s = clamp_int(__ldg(a.kv_indptr + seq), 0, T);
        const int n = max(s, clamp_int(__ldg(a.kv_indptr + seq + 1), 0, T)) - s;
        nparts = clamp_int(n / C, 1, a.max_parts);  // every part at least C entries
        // In a cluster, a CTA without a part still joins the cluster's barriers when there is
        // a merge; otherwise it leaves before any barrier.
        if (part >= nparts && !(in_cluster && nparts > 1)) return;
        e0 = part < nparts ? s + (int)((long long)n * part / nparts) : s + n;
        e1 = part < nparts ? s + (int)((long long)n * (part + 1) / nparts) : s + n;
    } else {
        e0 = unit * C;
        e1 = min(e0 + C, T);
    }
    const bool last_unit = unit == a.num_units - 1;
    const float NEG_INF = -__int_as_float(0x7f800000);

    unsigned char* ks = smem_raw + warp * WARP_SMEM;
    unsigned char* vs = ks + NSTAGE * TILE_BYTES;
    const u32 ks_addr = smem_addr(ks);
    const u32 vs_addr = smem_addr(vs);
    const int* ids = (const int*)(vs + NSTAGE * TILE_BYTES);
    const u32 ids_addr = smem_addr(ids);

    // Warm L2 with this unit's page ids while kv_indptr is being searched.
    for (int i = lane * 32; i < e1 - e0; i += 32 * 32)
        asm volatile("prefetch.global.L2 [%0];" ::"l"(a.kv_indices + e0 + i));

    // The unit's first 32 page ids, loaded alongside kv_indptr (they do not depend on it), so
    // that the first tiles' copies need no further round trip.
    const int unit_page = e0 + lane < e1 ? __ldg(a.kv_indices + e0 + lane) : 0;

    // Which sequences does this unit touch? Count, over kv_indptr, the entries below e0,
    // at most e0, and below e1 (kv_indptr is non-decreasing).
    int below_e0 = 0, upto_e0 = 0, below_e1 = 0;
    for (int j = per_sequence ? a.batch + 1 : lane; j <= a.batch; j += 32) {
        int v = clamp_int(__ldg(a.kv_indptr + j), 0, T);
        below_e0 += v < e0;
        upto_e0 += v <= e0;
        below_e1 += (j < a.batch) && (v < e1);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        below_e0 += __shfl_xor_sync(0xffffffffu, below_e0, o);
        upto_e0 += __shfl_xor_sync(0xffffffffu, upto_e0, o);
        below_e1 += __shfl_xor_sync(0xffffffffu, below_e1, o);
    }
    // A sequence lies before this unit when it starts below e0 and ends at or below e0;
    // an empty sequence belongs to the unit its position falls in (the last unit takes
    // the ones at the very end).
    const int b_start = per_sequence ? seq : max(0, min(below_e0, upto_e0 - 1));
    const int b_end = per_sequence ? seq + 1 : (last_unit ? a.batch : below_e1);

    const int g = lane >> 2;  // mma row group
    const int t4 = lane & 3;  // mma thread in group
    const int head0 = kvh * GROUP + mt * 16;
    const int rows_here = min(16, GROUP - mt * 16);

    for (int b = b_start; b < b_end; ++b) {
        const int s = clamp_int(__ldg(a.kv_indptr + b), 0, T);
        const int e = max(s, clamp_int(__ldg(a.kv_indptr + b + 1), 0, T));
        if (s == e) {
            if (warp == 0) write_empty(a, b, kvh, mt, lane);
            continue;
        }
        const int pa = max(s, e0), pz = min(e, e1);
        if (pa >= pz) continue;
        const int seq_tokens = (e - s - 1) * PAGE_SIZE + last_page_tokens(a.kv_last_page_len, b);
        const int t0 = (pa - s) * PAGE_SIZE;
        const int t1 = min((pz - s) * PAGE_SIZE, seq_tokens);
        const int ntok = max(0, t1 - t0);
        const int ntiles = (ntok + 15) >> 4;
        // This warp's tiles of the piece: local t is the piece's tile wfirst + t * wstride.
        const int ntl = ntiles > wfirst ? (ntiles - wfirst + wstride - 1) / wstride : 0;
        auto gtile = [&](int t) -> int { return wfirst + t * wstride; };

        __syncwarp();
        // Page ids of the next tile to issue are loaded one tile ahead, so that their
        // latency overlaps a tile's math instead of stalling the issue.
        constexpr int LPR = CHUNKS;          // lanes per row
        constexpr int RPP = 32 / LPR;        // rows per pass
        constexpr int PASSES = 16 / RPP;
        const int chunk = lane % LPR;
        auto page_of = [&](int tile, int p) -> int {
            int tok = t0 + tile * 16 + lane / LPR + p * RPP;
            int entry = s + tok / PAGE_SIZE;
            int rel = entry - e0;
            int cached = __shfl_sync(0xffffffffu, unit_page, rel & 31);
            int page = (rel >= 0 && rel < 32) ? cached : (tok < t1 ? __ldg(a.kv_indices + entry) : 0);
            return tok < t1 ? clamp_int(page, 0, a.num_pages - 1) : 0;
        };
        // Issue one 16-token tile of K and V rows (pages in pg) into a pipeline slot.
        auto issue = [&](int tile, int slot, const int (&pg)[PASSES]) {
#pragma unroll
            for (int p = 0; p < PASSES; ++p) {
                int row = lane / LPR + p * RPP;
                int tok = t0 + tile * 16 + row;
                size_t off = ((size_t)pg[p] * PAGE_SIZE + tok % PAGE_SIZE) * TOKEN_STRIDE +
                             (size_t)kvh * HEAD_DIM + chunk * 8;
                u32 so = slot * TILE_BYTES + swz(row, chunk);
                cp_async16(ks_addr + so, a.k_cache + off, tok < t1);
                cp_async16(vs_addr + so, a.v_cache + off, tok < t1);
            }
        };
        // Page ids travel NSTAGE-1 tiles ahead of the rows they locate, in the same cp.async
        // groups, so no iteration waits on a plain load of kv_indices.
        auto issue_ids = [&](int t) {
            if (lane < 16) {
                int tok = t0 + gtile(t) * 16 + lane;
                bool valid = tok < t1;
                cp_async4(ids_addr + ((t % NSTAGE) * 16 + lane) * 4, a.kv_indices + (valid ? s + tok / PAGE_SIZE : 0), valid);
            }
        };

        {
            // All prologue tiles' page ids in one round of loads, then their copies.
            int pro[NSTAGE - 1][PASSES];
#pragma unroll
            for (int st = 0; st < NSTAGE - 1; ++st)
#pragma unroll
                for (int p = 0; p < PASSES; ++p) pro[st][p] = page_of(gtile(st), p);
#pragma unroll
            for (int st = 0; st < NSTAGE - 1; ++st) {
                if (st < ntl) issue(gtile(st), st, pro[st]);
                if (st + NSTAGE - 1 < ntl) issue_ids(st + NSTAGE - 1);
                cp_async_commit();
            }
        }

        // Q as the A operand: rows = query heads of this tile (zero past the group).
        u32 qa[KSTEPS][4];
        {
            const bf16_raw* qb = a.q + ((size_t)b * (NUM_KV_HEADS * GROUP) + head0) * HEAD_DIM;
            const bool r0 = g < rows_here, r1 = g + 8 < rows_here;
#pragma unroll
            for (int k = 0; k < KSTEPS; ++k) {
                int c = k * 16 + t4 * 2;
                qa[k][0] = r0 ? __ldg((const u32*)(qb + g * HEAD_DIM + c)) : 0u;
                qa[k][1] = r1 ? __ldg((const u32*)(qb + (g + 8) * HEAD_DIM + c)) : 0u;
                qa[k][2] = r0 ? __ldg((const u32*)(qb + g * HEAD_DIM + c + 8)) : 0u;
                qa[k][3] = r1 ? __ldg((const u32*)(qb + (g + 8) * HEAD_DIM + c + 8)) : 0u;
            }
        }

        float o[NTILES][4];
#pragma unroll
        for (int n = 0; n < NTILES; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
        float m0 = NEG_INF, m1 = NEG_INF, l0 = 0.f, l1 = 0.f;

        for (int t = 0; t < ntl; ++t) {
            cp_async_wait<NSTAGE - 2>();
            __syncwarp();
            {
                int tn = t + NSTAGE - 1;
                if (tn < ntl) {
                    int pg[PASSES];
#pragma unroll
                    for (int p = 0; p < PASSES; ++p)
                        pg[p] = clamp_int(ids[(tn % NSTAGE) * 16 + lane / LPR + p * RPP], 0, a.num_pages - 1);
                    issue(gtile(tn), tn % NSTAGE, pg);
                }
                if (tn + NSTAGE - 1 < ntl) issue_ids(tn + NSTAGE - 1);
                cp_async_commit();
            }
            const int slot = t % NSTAGE;
            const u32 kt = ks_addr + slot * TILE_BYTES;
            const u32 vt = vs_addr + slot * TILE_BYTES;
            const int nvalid = min(16, ntok - gtile(t) * 16);

            float sc[2][4];
#pragma unroll
            for (int n = 0; n < 2; ++n) sc[n][0] = sc[n][1] = sc[n][2] = sc[n][3] = 0.f;
            {
                const int mi = lane >> 3, r8 = lane & 7;
                const int row = (mi >> 1) * 8 + r8;
#pragma unroll
                for (int k = 0; k < KSTEPS; ++k) {
                    u32 b0, b1, b2, b3;
                    ldmatrix_x4(kt + swz(row, 2 * k + (mi & 1)), b0, b1, b2, b3);
                    mma_bf16(sc[0], qa[k], b0, b1);
                    mma_bf16(sc[1], qa[k], b2, b3);
                }
            }
            // Scale into base 2 and mask tokens past the piece.
            float mx0 = NEG_INF, mx1 = NEG_INF;
#pragma unroll
            for (int n = 0; n < 2; ++n) {
#pragma unroll
                for (int c = 0; c < 4; ++c) {
                    int tok = n * 8 + t4 * 2 + (c & 1);
                    float x = tok < nvalid ? sc[n][c] * a.scale_log2 : NEG_INF;
                    sc[n][c] = x;
                }
                mx0 = fmaxf(mx0, fmaxf(sc[n][0], sc[n][1]));
                mx1 = fmaxf(mx1, fmaxf(sc[n][2], sc[n][3]));
            }
            mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
            mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
            mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
            mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
            const float mn0 = fmaxf(m0, mx0), mn1 = fmaxf(m1, mx1);
            const float mu0 = mn0 == NEG_INF ? 0.f : mn0, mu1 = mn1 == NEG_INF ? 0.f : mn1;
            const float al0 = fast_exp2(m0 - mu0), al1 = fast_exp2(m1 - mu1);
            m0 = mn0;
            m1 = mn1;
            float ps0 = 0.f, ps1 = 0.f;
#pragma unroll
            for (int n = 0; n < 2; ++n) {
                sc[n][0] = fast_exp2(sc[n][0] - mu0);
                sc[n][1] = fast_exp2(sc[n][1] - mu0);
                sc[n][2] = fast_exp2(sc[n][2] - mu1);
                sc[n][3] = fast_exp2(sc[n][3] - mu1);
                ps0 += sc[n][0] + sc[n][1];
                ps1 += sc[n][2] + sc[n][3];
            }
            // Each lane keeps the sum over its own columns; the quad adds up at the end.
            l0 = l0 * al0 + ps0;
            l1 = l1 * al1 + ps1;
#pragma unroll
            for (int n = 0; n < NTILES; ++n) {
                o[n][0] *= al0;
                o[n][1] *= al0;
                o[n][2] *= al1;
                o[n][3] *= al1;
            }
            u32 pa4[4];
            pa4[0] = pack_bf16x2(sc[0][0], sc[0][1]);
            pa4[1] = pack_bf16x2(sc[0][2], sc[0][3]);
            pa4[2] = pack_bf16x2(sc[1][0], sc[1][1]);
            pa4[3] = pack_bf16x2(sc[1][2], sc[1][3]);
            {
                const int mi = lane >> 3, r8 = lane & 7;
                const int row = (mi & 1) * 8 + r8;
#pragma unroll
                for (int dp = 0; dp < NTILES / 2; ++dp) {
                    u32 b0, b1, b2, b3;
                    ldmatrix_x4_trans(vt + swz(row, 2 * dp + (mi >> 1)), b0, b1, b2, b3);
                    mma_bf16(o[2 * dp], pa4, b0, b1);
                    mma_bf16(o[2 * dp + 1], pa4, b2, b3);
                }
            }
        }

        l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
        l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
        l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
        l1 += __shfl_xor_sync(0xffffffffu, l1, 2);

        State st;
#pragma unroll
        for (int n = 0; n < NTILES; ++n)
#pragma unroll
            for (int c = 0; c < 4; ++c) st.o[n][c] = o[n][c];
        st.m0 = m0;
        st.m1 = m1;
        st.l0 = l0;
        st.l1 = l1;
        // Combine the warps' states in shared memory; warp 0 goes on with the result. Each warp
        // writes into its own pipeline region, free now that its tiles are consumed.
        __syncthreads();
        store_state((float*)(smem_raw + warp * WARP_SMEM), st, lane);
        __syncthreads();
        if (warp == 0) st = combine_states([&](int i) { return (const float*)(smem_raw + i * WARP_SMEM); }, WARPS, lane);
        __syncthreads();  // warp 0 has read every region; the next piece may overwrite them
        if (warp != 0) continue;

        const bool whole = s >= e0 && e <= e1;
        if (whole) {
            write_output(a, b, head0, rows_here, lane, st);
        } else if (in_cluster) {
            // Region 0 is free after the warps' combine; the cluster merges after the loop.
            store_state((float*)smem_raw, st, lane);
        } else {
            // Per sequence: one record per part. Fixed units: slot 0 holds the sequence that
            // began before this unit, slot 1 the one that begins here and runs past it (at
            // most one of each per unit).
            auto record = [&](int i) -> float* {
                if (per_sequence) return a.partial + ((size_t)(b * a.max_parts + i) * HY + hy) * REC_FLOATS;
                const int u = s / C + i;
                return a.partial + ((size_t)(u * 2 + (u == s / C ? 1 : 0)) * HY + hy) * REC_FLOATS;
            };
            float* rec = record(per_sequence ? part : unit - s / C);
#pragma unroll
            for (int n = 0; n < NTILES; ++n) {
                int c = n * 8 + t4 * 2;
                if (g < rows_here) __stcg((float2*)(rec + g * HEAD_DIM + c), make_float2(st.o[n][0], st.o[n][1]));
                if (g + 8 < rows_here) __stcg((float2*)(rec + (g + 8) * HEAD_DIM + c), make_float2(st.o[n][2], st.o[n][3]));
            }
            if (t4 == 0) {
                __stcg(rec + 16 * HEAD_DIM + g, st.m0);
                __stcg(rec + 16 * HEAD_DIM + g + 8, st.m1);
                __stcg(rec + 16 * HEAD_DIM + 16 + g, st.l0);
                __stcg(rec + 16 * HEAD_DIM + 16 + g + 8, st.l1);
            }
            __threadfence();
            __syncwarp();
            int arrived = 0;
            int* counter = a.counters + (size_t)b * HY + hy;
            if (lane == 0) arrived = atomicAdd(counter, 1);
            arrived = __shfl_sync(0xffffffffu, arrived, 0);
            const int npieces = per_sequence ? nparts : (e - 1) / C - s / C + 1;
            if (arrived == npieces - 1) {
                __threadfence();
                merge_pieces(a, b, npieces, record, kvh, mt, lane, (float*)ks);
                if (lane == 0) *counter = 0;  // ready for the next launch
            }
        }
    }
    // The parts of a sequence in one cluster: rank 0 merges the others' states from their
    // shared memory, which must outlive the reads, hence the second barrier.
    if (in_cluster && nparts > 1) {
        cluster_sync();
        if (part == 0 && warp == 0) {
            const float* mine = (const float*)smem_raw;
            const State st = combine_states([&](int i) { return cluster_peer(mine, (u32)i); }, nparts, lane);
            write_output(a, seq, kvh * GROUP + mt * 16, min(16, GROUP - mt * 16), lane, st);
        }
        cluster_sync();
    }
}
