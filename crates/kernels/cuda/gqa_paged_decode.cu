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
// Work split (v9, "balanced"). The launch is one grid of CTAs, each owning one work item for one
// (KV head, 16-row query tile); every CTA plans the batch from kv_indptr on the device, the same
// plan in every warp, so nothing is read on the host and a call is one graph-capturable launch.
// The plan: a sequence of n entries (pages) is cut into k = ceil(n / chunk) items of equal
// entries (an empty sequence is one item, which writes zeros and -inf), chunk coming from the host
// (shapes only). Items are numbered largest first, in four size classes (over chunk/2, chunk/4,
// chunk/8, the rest), in sequence order within a class, so that the CTAs the hardware dispatches
// first hold the longest work (longest-processing-time order) whatever the batch's lengths. A
// whole sequence writes its output directly; the k parts of a split one each take a ticket from a
// per-(sequence, head tile) counter; all but the last write an unnormalised partial (O, m, l) and
// publish it (release), and the last keeps its own on chip, waits for the others' (acquire) and
// merges all k with every warp of its CTA (rows split over warps), then resets the counter for the
// next launch. For a batch of very few sequences the host
// may instead launch clusters (`cluster_parts` > 0): CTA (b, head tile, p) takes part p of
// sequence b, whose entries are cut into min(cluster_parts, max(1, floor(n / chunk))) equal parts
// that merge in distributed shared memory.
//
// A kv_indices of at most IDX_CACHE entries is copied whole into shared memory at the start, in
// the same round trip as kv_indptr, so the tiles' page ids need no dependent global load.
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
    float scale_log2;   // sm_scale * log2(e)
    int batch;
    int num_entries;    // length of kv_indices
    int num_pages;
    int chunk;          // balanced: most entries per item; clusters: least entries per part
    int cluster_parts;  // > 0: cluster schedule, grid (batch, HY, cluster_parts); 0: balanced, grid (items * HY)
    int cache_indices;  // 1: kv_indices (num_entries <= IDX_CACHE) is copied to shared memory first
};

// Entries of kv_indices the shared-memory copy holds (the launcher sizes shared memory for it).
#define IDX_CACHE 2048

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

// ---- The device plan (mirrored by `plan_items` in the Rust launcher, which tests it) ----

// Items of a sequence of n entries: one for an empty or short one, else ceil(n / chunk).
static __device__ __forceinline__ int items_of(int n, int chunk) { return n <= chunk ? 1 : (n + chunk - 1) / chunk; }

// Size class of a sequence's items (0 = largest): its entries per item against chunk / 2, / 4, / 8.
static __device__ __forceinline__ int class_of(int n, int k, int chunk) {
    const long long ck = (long long)chunk * k;
    return 2LL * n > ck ? 0 : (4LL * n > ck ? 1 : (8LL * n > ck ? 2 : 3));
}

struct Piece {
    int seq;     // sequence
    int part;    // its part, 0..nparts-1
    int nparts;  // parts of the sequence
    int s;       // first entry of the sequence
    int n;       // entries of the sequence
    int first;   // item number of part 0 (its partial record is first + part)
};

// Item `item` of the balanced plan, computed by one warp (every lane gets the same answer): false
// past the last item. Lane l counts the items of sequences [l * per, (l + 1) * per) per class, a
// warp scan numbers them, and the lane whose range holds the item finds its sequence.
static __device__ bool find_item(const Args& a, int item, int lane, Piece& piece) {
    const int T = a.num_entries, C = a.chunk;
    const int per = (a.batch + 31) / 32;
    const int b0 = min(a.batch, lane * per), b1 = min(a.batch, b0 + per);
    int cnt[4] = {0, 0, 0, 0};
    for (int b = b0; b < b1; ++b) {
        const int s = clamp_int(__ldg(a.kv_indptr + b), 0, T);
        const int n = max(s, clamp_int(__ldg(a.kv_indptr + b + 1), 0, T)) - s;
        const int k = items_of(n, C);
        const int c = class_of(n, k, C);
#pragma unroll
        for (int q = 0; q < 4; ++q) cnt[q] += q == c ? k : 0;
    }
    int excl[4], total[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
        int incl = cnt[q];
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            const int up = __shfl_up_sync(0xffffffffu, incl, o);
            if (lane >= o) incl += up;
        }
        total[q] = __shfl_sync(0xffffffffu, incl, 31);
        excl[q] = incl - cnt[q];
    }
    int klass = 0, rank = item, before = 0;
    while (klass < 4 && rank >= total[klass]) {
        rank -= total[klass];
        before += total[klass];
        ++klass;
    }
    if (klass == 4) return false;
    int mine_excl = 0, mine_cnt = 0;
#pragma unroll
    for (int q = 0; q < 4; ++q) {
        if (q == klass) {
            mine_excl = excl[q];
            mine_cnt = cnt[q];
        }
    }
    const unsigned holder = __ballot_sync(0xffffffffu, mine_excl <= rank && rank < mine_excl + mine_cnt);
    const int src = __ffs(holder) - 1;
    int seq = 0, part = 0, nparts = 1, s0 = 0, n0 = 0, first = 0;
    if (lane == src) {
        int run = mine_excl;
        for (int b = b0; b < b1; ++b) {
            const int s = clamp_int(__ldg(a.kv_indptr + b), 0, T);
            const int n = max(s, clamp_int(__ldg(a.kv_indptr + b + 1), 0, T)) - s;
            const int k = items_of(n, C);
            if (class_of(n, k, C) != klass) continue;
            if (rank < run + k) {
                seq = b;
                part = rank - run;
                nparts = k;
                s0 = s;
                n0 = n;
                first = before + run;
                break;
            }
            run += k;
        }
    }
    piece.seq = __shfl_sync(0xffffffffu, seq, src);
    piece.part = __shfl_sync(0xffffffffu, part, src);
    piece.nparts = __shfl_sync(0xffffffffu, nparts, src);
    piece.s = __shfl_sync(0xffffffffu, s0, src);
    piece.n = __shfl_sync(0xffffffffu, n0, src);
    piece.first = __shfl_sync(0xffffffffu, first, src);
    return true;
}

// Merges the `nparts` partials of sequence b into the output: part `own`'s in this CTA's shared
// memory (`own_rec`, the record layout), the others' in global records (`record(i)`). Every warp of
// the CTA takes rows warp, warp + WARPS, ... so that all rows' loads are in flight at once: one
// round trip for the parts' maxima and sums, one for their rows (up to 32 parts; more loop).
template <typename Record>
static __device__ void merge_parts(const Args& a, int b, int nparts, int own, const float* own_rec, Record record,
                                   int kvh, int mt, int warp, int lane) {
    constexpr int RPW = (16 + WARPS - 1) / WARPS;  // rows per warp
    constexpr int VEC = HEAD_DIM / 32;
    const float NEG_INF = -__int_as_float(0x7f800000);
    const int rows = min(16, GROUP - mt * 16);
    const int head0 = kvh * GROUP + mt * 16;
    auto at = [&](int i, int offset) -> float { return i == own ? own_rec[offset] : __ldcg(record(i) + offset); };
    float M[RPW], L[RPW], acc[RPW][VEC], m_first[RPW], l_first[RPW];
#pragma unroll
    for (int j = 0; j < RPW; ++j) {
        M[j] = NEG_INF;
        L[j] = 0.f;
        m_first[j] = NEG_INF;
        l_first[j] = 0.f;
#pragma unroll
        for (int v = 0; v < VEC; ++v) acc[j][v] = 0.f;
    }
    // Pass 1: the maxima; lane i keeps part i's m and l for pass 2.
    for (int i = lane; i < nparts; i += 32) {
#pragma unroll
        for (int j = 0; j < RPW; ++j) {
            const int r = warp + j * WARPS;
            if (r < rows) {
                const float m = at(i, 16 * HEAD_DIM + r);
                if (i == lane) {
                    m_first[j] = m;
                    l_first[j] = at(i, 16 * HEAD_DIM + 16 + r);
                }
                M[j] = fmaxf(M[j], m);
            }
        }
    }
#pragma unroll
    for (int j = 0; j < RPW; ++j) {
        for (int o = 16; o > 0; o >>= 1) M[j] = fmaxf(M[j], __shfl_xor_sync(0xffffffffu, M[j], o));
        if (M[j] == NEG_INF) M[j] = 0.f;  // every part empty: weights become 0, not NaN
    }
    for (int i0 = 0; i0 < nparts; i0 += 32) {
        const int i = i0 + lane;
        float w[RPW];
#pragma unroll
        for (int j = 0; j < RPW; ++j) {
            const int r = warp + j * WARPS;
            w[j] = 0.f;
            if (i < nparts && r < rows) {
                const float m = i0 == 0 ? m_first[j] : at(i, 16 * HEAD_DIM + r);
                const float l = i0 == 0 ? l_first[j] : at(i, 16 * HEAD_DIM + 16 + r);
                w[j] = fast_exp2(m - M[j]);
                L[j] += w[j] * l;
            }
        }
        const int count = min(32, nparts - i0);
#pragma unroll 4
        for (int q = 0; q < count; ++q) {
            const int part = i0 + q;
            const float* rec = part == own ? own_rec : record(part);
            const bool on_chip = part == own;
#pragma unroll
            for (int j = 0; j < RPW; ++j) {
                const int r = warp + j * WARPS;
                const float wq = __shfl_sync(0xffffffffu, w[j], q);
                if (r < rows) {
#if HEAD_DIM == 128
                    const float4 x = on_chip ? *(const float4*)(rec + r * HEAD_DIM + lane * 4)
                                             : __ldcg((const float4*)(rec + r * HEAD_DIM + lane * 4));
                    acc[j][0] += wq * x.x;
                    acc[j][1] += wq * x.y;
                    acc[j][2] += wq * x.z;
                    acc[j][3] += wq * x.w;
#else
                    const float2 x = on_chip ? *(const float2*)(rec + r * HEAD_DIM + lane * 2)
                                             : __ldcg((const float2*)(rec + r * HEAD_DIM + lane * 2));
                    acc[j][0] += wq * x.x;
                    acc[j][1] += wq * x.y;
#endif
                }
            }
        }
    }
#pragma unroll
    for (int j = 0; j < RPW; ++j) {
        for (int o = 16; o > 0; o >>= 1) L[j] += __shfl_xor_sync(0xffffffffu, L[j], o);
        const int r = warp + j * WARPS;
        if (r < rows) {
            const float inv = L[j] > 0.f ? 1.f / L[j] : 0.f;
            bf16_raw* dst = a.out + ((size_t)b * (NUM_KV_HEADS * GROUP) + head0 + r) * HEAD_DIM + lane * VEC;
#pragma unroll
            for (int v = 0; v < VEC; v += 2) *(u32*)(dst + v) = pack_bf16x2(acc[j][v] * inv, acc[j][v + 1] * inv);
            if (lane == 0) a.lse[(size_t)b * (NUM_KV_HEADS * GROUP) + head0 + r] = L[j] > 0.f ? M[j] + log2f(L[j]) : NEG_INF;
        }
    }
}

// The arrival counter of a split sequence's head tile: the low 16 bits count the parts that took a
// ticket, the high bits those whose record is published (the launcher keeps a sequence to at most
// 32,767 parts, so the count stays positive).
#define PUBLISHED (1 << 16)

static __device__ __forceinline__ int atomic_ticket(int* counter) {
    int old;
    asm volatile("atom.relaxed.gpu.global.add.s32 %0, [%1], 1;" : "=r"(old) : "l"(counter) : "memory");
    return old;
}

// Releases this thread's (and, after a barrier, its warp's) earlier writes, then counts a record.
static __device__ __forceinline__ void publish(int* counter) {
    asm volatile("red.release.gpu.global.add.s32 [%0], %1;" ::"l"(counter), "r"(PUBLISHED) : "memory");
}

static __device__ __forceinline__ int load_acquire(const int* counter) {
    int v;
    asm volatile("ld.acquire.gpu.global.s32 %0, [%1];" : "=r"(v) : "l"(counter) : "memory");
    return v;
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

// Writes a warp's combined state in the record layout (O[16][D], m[16], l[16]) to `rec`, global
// (streaming past L1) or shared.
template <bool GLOBAL>
static __device__ __forceinline__ void write_record(float* rec, const State& st, int rows_here, int lane) {
    const int g = lane >> 2, t4 = lane & 3;
#pragma unroll
    for (int n = 0; n < NTILES; ++n) {
        const int c = n * 8 + t4 * 2;
        const float2 lo = make_float2(st.o[n][0], st.o[n][1]), hi = make_float2(st.o[n][2], st.o[n][3]);
        if (GLOBAL) {
            if (g < rows_here) __stcg((float2*)(rec + g * HEAD_DIM + c), lo);
            if (g + 8 < rows_here) __stcg((float2*)(rec + (g + 8) * HEAD_DIM + c), hi);
        } else {
            if (g < rows_here) *(float2*)(rec + g * HEAD_DIM + c) = lo;
            if (g + 8 < rows_here) *(float2*)(rec + (g + 8) * HEAD_DIM + c) = hi;
        }
    }
    if (t4 == 0) {
        const float v[4] = {st.m0, st.m1, st.l0, st.l1};
        const int at[4] = {16 * HEAD_DIM + g, 16 * HEAD_DIM + g + 8, 16 * HEAD_DIM + 16 + g, 16 * HEAD_DIM + 16 + g + 8};
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            if (GLOBAL) __stcg(rec + at[k], v[k]);
            else rec[at[k]] = v[k];
        }
    }
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
    __shared__ int merge_here;
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    // All warps of the CTA work on one piece: warp w takes its tiles w, w + WARPS, ... so a
    // piece's serial instruction path is WARPS times shorter than with one warp per piece
    // (bench/gqa-paged-decode/NOTES.md, v5), and the warps combine in shared memory.
    const int wfirst = warp, wstride = WARPS;
    const int T = a.num_entries;
    const bool cached = a.cache_indices != 0;
    int* idx_cache = (int*)(smem_raw + WARPS * WARP_SMEM);
    if (cached) {
        // The whole of kv_indices, in the same round trip as kv_indptr below.
        const int words = T & ~3;
        for (int i = threadIdx.x * 4; i < words; i += WARPS * 32 * 4) cp_async16(smem_addr(idx_cache + i), a.kv_indices + i, true);
        for (int i = words + threadIdx.x; i < T; i += WARPS * 32) cp_async4(smem_addr(idx_cache + i), a.kv_indices + i, true);
        cp_async_commit();
    }

    // Which piece: one item of the balanced plan, or one part of a cluster's sequence.
    Piece piece;
    int hy;
    const bool cluster_schedule = a.cluster_parts > 0;
    // Launched in clusters of cluster_parts CTAs along z (the host's choice): rank p is part p.
    const bool in_cluster = cluster_schedule && cluster_ctas() > 1;
    int item = 0;
    if (cluster_schedule) {
        hy = blockIdx.y;
        piece.seq = blockIdx.x;
        piece.part = blockIdx.z;
        piece.s = clamp_int(__ldg(a.kv_indptr + piece.seq), 0, T);
        piece.n = max(piece.s, clamp_int(__ldg(a.kv_indptr + piece.seq + 1), 0, T)) - piece.s;
        piece.nparts = clamp_int(piece.n / a.chunk, 1, a.cluster_parts);  // every part at least chunk entries
        piece.first = 0;
        // In a cluster, a CTA without a part still joins the cluster's barriers when there is a
        // merge; otherwise it leaves before any barrier.
        if (piece.part >= piece.nparts && !(in_cluster && piece.nparts > 1)) {
            cp_async_wait<0>();
            return;
        }
    } else {
        item = blockIdx.x / HY;
        hy = blockIdx.x % HY;
        if (!find_item(a, item, lane, piece)) {  // the same answer in every warp: the CTA leaves
            cp_async_wait<0>();
            return;
        }
    }
    const int kvh = hy / MTILES;
    const int mt = hy % MTILES;
    const int b = piece.seq, s = piece.s, part = piece.part, nparts = piece.nparts;
    const bool has_part = part < nparts;
    const int e0 = has_part ? s + (int)((long long)piece.n * part / nparts) : s + piece.n;
    const int e1 = has_part ? s + (int)((long long)piece.n * (part + 1) / nparts) : s + piece.n;
    const bool whole = nparts == 1;
    int* counter = a.counters + (size_t)b * HY + hy;
    // The counter's line is evicted by whatever ran before (the L2 flush): fetch it while the
    // part streams, so that the arrival below finds it in L2.
    if (!whole && !in_cluster && threadIdx.x == 0) asm volatile("prefetch.global.L2 [%0];" ::"l"(counter));
    const float NEG_INF = -__int_as_float(0x7f800000);

    unsigned char* ks = smem_raw + warp * WARP_SMEM;
    unsigned char* vs = ks + NSTAGE * TILE_BYTES;
    const u32 ks_addr = smem_addr(ks);
    const u32 vs_addr = smem_addr(vs);
    const int* ids = (const int*)(vs + NSTAGE * TILE_BYTES);
    const u32 ids_addr = smem_addr(ids);

    const int g = lane >> 2;  // mma row group
    const int t4 = lane & 3;  // mma thread in group
    const int head0 = kvh * GROUP + mt * 16;
    const int rows_here = min(16, GROUP - mt * 16);

    if (piece.n == 0) {  // an empty sequence: one item, nothing to read
        if (warp == 0) write_empty(a, b, kvh, mt, lane);
        cp_async_wait<0>();
        return;
    }
    if (cached) {
        cp_async_wait<0>();
        __syncthreads();
    }
    const int seq_tokens = (piece.n - 1) * PAGE_SIZE + last_page_tokens(a.kv_last_page_len, b);
    const int t0 = (e0 - s) * PAGE_SIZE;
    const int t1 = min((e1 - s) * PAGE_SIZE, seq_tokens);
    const int ntok = max(0, t1 - t0);
    const int ntiles = (ntok + 15) >> 4;
    // This warp's tiles of the piece: local t is the piece's tile wfirst + t * wstride.
    const int ntl = ntiles > wfirst ? (ntiles - wfirst + wstride - 1) / wstride : 0;
    auto gtile = [&](int t) -> int { return wfirst + t * wstride; };

    constexpr int LPR = CHUNKS;          // lanes per row
    constexpr int RPP = 32 / LPR;        // rows per pass
    constexpr int PASSES = 16 / RPP;
    const int chunk = lane % LPR;
    // The page id of this lane's row `p` of a tile: from the shared copy of kv_indices, else a load.
    auto page_of = [&](int tile, int p) -> int {
        int tok = t0 + tile * 16 + lane / LPR + p * RPP;
        int entry = s + tok / PAGE_SIZE;
        if (tok >= t1) return 0;
        int page = cached ? idx_cache[entry] : __ldg(a.kv_indices + entry);
        return clamp_int(page, 0, a.num_pages - 1);
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
    // Without the shared copy, page ids travel NSTAGE-1 tiles ahead of the rows they locate, in
    // the same cp.async groups, so no iteration waits on a plain load of kv_indices.
    auto issue_ids = [&](int t) {
        if (!cached && lane < 16) {
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
                    pg[p] = cached ? page_of(gtile(tn), p)
                                   : clamp_int(ids[(tn % NSTAGE) * 16 + lane / LPR + p * RPP], 0, a.num_pages - 1);
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

    if (in_cluster) {
        // The parts of a sequence in one cluster: rank 0 merges the others' states from their
        // shared memory, which must outlive the reads, hence the second barrier.
        __syncthreads();  // warp 0 has read every region; region 0 takes the combined state
        if (warp == 0 && has_part) store_state((float*)smem_raw, st, lane);
        if (nparts > 1) {
            cluster_sync();
            if (part == 0 && warp == 0) {
                const float* mine = (const float*)smem_raw;
                const State all = combine_states([&](int i) { return cluster_peer(mine, (u32)i); }, nparts, lane);
                write_output(a, b, head0, rows_here, lane, all);
            }
            cluster_sync();
        } else if (warp == 0) {
            write_output(a, b, head0, rows_here, lane, st);
        }
        return;
    }
    if (whole) {
        if (warp == 0) write_output(a, b, head0, rows_here, lane, st);
        return;
    }
    // A part: a ticket first. Every part but the last writes its record and publishes it; the last
    // keeps its state on chip, waits until the others are published (they hold their tickets, so
    // they are running and wait for nothing) and merges them all, without a record or a release of
    // its own on the path.
    auto record = [&](int i) -> float* { return a.partial + ((size_t)(piece.first + i) * HY + hy) * REC_FLOATS; };
    float* own_rec = (float*)smem_raw;  // warp 0's region, free after the combine
    if (warp == 0) {
        int ticket = 0;
        if (lane == 0) ticket = atomic_ticket(counter) & (PUBLISHED - 1);
        const bool last = __shfl_sync(0xffffffffu, ticket, 0) == nparts - 1;
        if (!last) {
            write_record<true>(record(part), st, rows_here, lane);
            __syncwarp();
            if (lane == 0) publish(counter);
        } else {
            write_record<false>(own_rec, st, rows_here, lane);
            if (lane == 0) {
                while ((load_acquire(counter) >> 16) < nparts - 1) {
                }
                *counter = 0;  // every part has arrived and published: ready for the next launch
            }
        }
        if (lane == 0) merge_here = last;
    }
    __syncthreads();
    if (merge_here) merge_parts(a, b, nparts, part, own_rec, record, kvh, mt, warp, lane);
}
