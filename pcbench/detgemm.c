/* Deterministic fp32 matrix products for the embedded path (pcbench/detmm.py).

   C[b] = A[b] @ B[b] for every batch b, where each element C[i,j] is the chain
       c = fma(A[i,k], B[k,j], c)   for k = 0 .. K-1,
   taken in blocks of KB: the first block's chain starts at 0, each later block's chain starts at 0
   and is then added to C (one rounding per block). Nothing in that order depends on the CPU, the
   shape's other dimensions (M, N, the batch), the tile an element falls in or the thread that
   computes it, and FMA rounds once by IEEE 754, so any x86-64 CPU with AVX2 + FMA computes the same
   floats. MKL does not: its code path depends on the CPU vendor and model (docs/numerics.md).

   Layouts: A(i,k) = A[i*sai + k*sak] (any strides: a transposed operand needs no copy);
            B(k,j) = B[k*ldb + j] (unit column stride: it is loaded 8 lanes at a time);
            C(i,j) = C[i*ldc + j].
   Build: cc -O2 -mavx2 -mfma -ffp-contract=off -fopenmp (pcbench/detmm.py does it once per machine). */
#include <immintrin.h>
#include <stdint.h>
#include <stdlib.h>

#define MR 6    /* rows per register tile */
#define KB 256  /* the reduction block: bounds the chain length (accuracy) at a fixed place */

static inline __m256i lanes(int64_t n) { /* a mask of the first n of 8 lanes */
  return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* A tile of 6 rows in named accumulators (an array of vectors spills: 2x slower). A tile of mr < 6
   rows computes its missing rows from row 0's pointer and does not store them, so the loop is the
   same for every tile; every element is the same chain whichever tile it falls in. */
#define ROWS6(X) X(0) X(1) X(2) X(3) X(4) X(5)
#define APTR(r) const float *a##r = A + (r < mr ? r : 0) * sai;

/* 6 x 16: two vectors per row */
static void tile16(int64_t mr, int64_t K, const float *A, int64_t sai, int64_t sak, const float *B, int64_t ldb,
                   float *C, int64_t ldc) {
  ROWS6(APTR)
  __m256 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;
  c00 = c01 = c10 = c11 = c20 = c21 = c30 = c31 = c40 = c41 = c50 = c51 = _mm256_setzero_ps();
  for (int64_t k = 0; k < K; k++) {
    const __m256 b0 = _mm256_loadu_ps(B + k * ldb), b1 = _mm256_loadu_ps(B + k * ldb + 8);
    const int64_t o = k * sak;
#define FMA16(r) { const __m256 x = _mm256_broadcast_ss(a##r + o); \
    c##r##0 = _mm256_fmadd_ps(x, b0, c##r##0); c##r##1 = _mm256_fmadd_ps(x, b1, c##r##1); }
    ROWS6(FMA16)
  }
#define STORE16(r) if (r < mr) { _mm256_storeu_ps(C + r * ldc, c##r##0); _mm256_storeu_ps(C + r * ldc + 8, c##r##1); }
  ROWS6(STORE16)
}

/* 6 x nc, nc <= 8 columns: one masked vector per row */
static void tile8(int64_t mr, int64_t nc, int64_t K, const float *A, int64_t sai, int64_t sak, const float *B,
                  int64_t ldb, float *C, int64_t ldc) {
  ROWS6(APTR)
  const __m256i m = lanes(nc);
  __m256 c0, c1, c2, c3, c4, c5;
  c0 = c1 = c2 = c3 = c4 = c5 = _mm256_setzero_ps();
  for (int64_t k = 0; k < K; k++) {
    const __m256 b = nc == 8 ? _mm256_loadu_ps(B + k * ldb) : _mm256_maskload_ps(B + k * ldb, m);
    const int64_t o = k * sak;
#define FMA8(r) c##r = _mm256_fmadd_ps(_mm256_broadcast_ss(a##r + o), b, c##r);
    ROWS6(FMA8)
  }
#define STORE8(r) if (r < mr) _mm256_maskstore_ps(C + r * ldc, m, c##r);
  ROWS6(STORE8)
}

/* C[M,N] = A @ B over K <= KB */
static void block(int64_t M, int64_t N, int64_t K, const float *A, int64_t sai, int64_t sak, const float *B,
                  int64_t ldb, float *C, int64_t ldc) {
  const int64_t n16 = N - N % 16;
  for (int64_t i = 0; i < M; i += MR) {
    const int64_t mr = M - i < MR ? M - i : MR;
    const float *Ai = A + i * sai;
    float *Ci = C + i * ldc;
    for (int64_t j = 0; j < n16; j += 16) tile16(mr, K, Ai, sai, sak, B + j, ldb, Ci + j, ldc);
    for (int64_t j = n16; j < N; j += 8) tile8(mr, N - j < 8 ? N - j : 8, K, Ai, sai, sak, B + j, ldb, Ci + j, ldc);
  }
}

/* rows [i0, i1) of C (+)= one K block: the first block's chain starts at 0 and is stored, each later
   one starts at 0 in scratch and is then added (one rounding per block, in block order) */
static void rows(int64_t i0, int64_t i1, int64_t N, int64_t k0, int64_t kb, const float *A, int64_t sai,
                 int64_t sak, const float *B, int64_t ldb, float *C, int64_t ldc, float *scratch) {
  const float *Ak = A + i0 * sai + k0 * sak, *Bk = B + k0 * ldb;
  if (k0 == 0) {
    block(i1 - i0, N, kb, Ak, sai, sak, Bk, ldb, C + i0 * ldc, ldc);
    return;
  }
  block(i1 - i0, N, kb, Ak, sai, sak, Bk, ldb, scratch + i0 * N, N);
  for (int64_t i = i0; i < i1; i++)
    for (int64_t j = 0; j < N; j++) C[i * ldc + j] += scratch[i * N + j];
}

/* C[M,N] = A @ B, the K blocks in order, each block's 6-row tiles over `threads` threads (so that
   a block of B, KB x N, is read from cache by every tile, not streamed once per tile) */
static void gemm(int64_t M, int64_t N, int64_t K, const float *A, int64_t sai, int64_t sak, const float *B,
                 int64_t ldb, float *C, int64_t ldc, int threads) {
  if (K == 0) {
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) C[i * ldc + j] = 0.0f;
    return;
  }
  const int64_t tiles = (M + MR - 1) / MR;
  float *scratch = K > KB ? malloc(sizeof(float) * (size_t)(M * N)) : NULL;
  for (int64_t k0 = 0; k0 < K; k0 += KB) {
    const int64_t kb = K - k0 < KB ? K - k0 : KB;
    if (threads > 1) {
#pragma omp parallel for schedule(static) num_threads(threads)
      for (int64_t t = 0; t < tiles; t++)
        rows(t * MR, (t + 1) * MR < M ? (t + 1) * MR : M, N, k0, kb, A, sai, sak, B, ldb, C, ldc, scratch);
    } else { /* no parallel region at all: an if(false) one still costs libgomp a team set-up, which a
                batch of hundreds of tiny products (the attention's) pays once per product */
      for (int64_t t = 0; t < tiles; t++)
        rows(t * MR, (t + 1) * MR < M ? (t + 1) * MR : M, N, k0, kb, A, sai, sak, B, ldb, C, ldc, scratch);
    }
  }
  free(scratch);
}

/* The exported entry: `batch` products with batch strides sab, sbb, scb (0 broadcasts an operand),
   over `threads` OpenMP threads: by batch, or by 6-row tiles when there are fewer batches than
   threads. It is built against the OpenMP runtime torch already loaded (libgomp.so.1), so these
   are torch's own intra-op threads, not a second pool competing with them. Which thread computes an
   element does not change its chain. */
void pcbench_det_gemm(int64_t batch, int64_t M, int64_t N, int64_t K, const float *A, int64_t sab, int64_t sai,
                      int64_t sak, const float *B, int64_t sbb, int64_t ldb, float *C, int64_t scb, int64_t ldc,
                      int threads) {
  if (threads < 1 || batch * M * N * K < (1 << 20)) threads = 1;
  if (batch >= threads && threads > 1) {
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int64_t b = 0; b < batch; b++) gemm(M, N, K, A + b * sab, sai, sak, B + b * sbb, ldb, C + b * scb, ldc, 1);
  } else { /* one thread (gemm then opens no parallel region), or fewer batches than threads */
    for (int64_t b = 0; b < batch; b++) gemm(M, N, K, A + b * sab, sai, sak, B + b * sbb, ldb, C + b * scb, ldc, threads);
  }
}
