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
   Build: cc -O2 -mavx2 -mfma -ffp-contract=off (pcbench/detmm.py does it once per machine). */
#include <immintrin.h>
#include <stdint.h>

#define MR 6    /* rows per register tile */
#define KB 256  /* the reduction block: bounds the chain length (accuracy) at a fixed place */

static inline __m256i lanes(int64_t n) { /* a mask of the first n of 8 lanes */
  return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* 6 rows x 16 columns in 12 named accumulators (an array of vectors spills: 2x slower): the fast
   path, the same chain per element as edge() */
#define ROW(r) const __m256 a##r = _mm256_broadcast_ss(a + r * sai); \
  c##r##0 = _mm256_fmadd_ps(a##r, b0, c##r##0); c##r##1 = _mm256_fmadd_ps(a##r, b1, c##r##1);
#define STORE(r) _mm256_storeu_ps(C + r * ldc, c##r##0); _mm256_storeu_ps(C + r * ldc + 8, c##r##1);
static void tile6x16(int64_t K, const float *A, int64_t sai, int64_t sak, const float *B, int64_t ldb,
                     float *C, int64_t ldc) {
  __m256 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;
  c00 = c01 = c10 = c11 = c20 = c21 = c30 = c31 = c40 = c41 = c50 = c51 = _mm256_setzero_ps();
  for (int64_t k = 0; k < K; k++) {
    const __m256 b0 = _mm256_loadu_ps(B + k * ldb), b1 = _mm256_loadu_ps(B + k * ldb + 8);
    const float *a = A + k * sak;
    ROW(0) ROW(1) ROW(2) ROW(3) ROW(4) ROW(5)
  }
  STORE(0) STORE(1) STORE(2) STORE(3) STORE(4) STORE(5)
}

/* any tile of mr <= 6 rows and nc <= 8 columns (masked lanes) */
static void edge(int64_t mr, int64_t nc, int64_t K, const float *A, int64_t sai, int64_t sak, const float *B,
                 int64_t ldb, float *C, int64_t ldc) {
  const __m256i m = lanes(nc);
  __m256 c[MR];
  for (int r = 0; r < mr; r++) c[r] = _mm256_setzero_ps();
  for (int64_t k = 0; k < K; k++) {
    const __m256 b = _mm256_maskload_ps(B + k * ldb, m);
    for (int r = 0; r < mr; r++) c[r] = _mm256_fmadd_ps(_mm256_broadcast_ss(A + r * sai + k * sak), b, c[r]);
  }
  for (int r = 0; r < mr; r++) _mm256_maskstore_ps(C + r * ldc, m, c[r]);
}

/* C[M,N] = A @ B over K <= KB */
static void block(int64_t M, int64_t N, int64_t K, const float *A, int64_t sai, int64_t sak, const float *B,
                  int64_t ldb, float *C, int64_t ldc) {
  const int64_t n16 = N - N % 16;
  for (int64_t i = 0; i < M; i += MR) {
    const int64_t mr = M - i < MR ? M - i : MR;
    const float *Ai = A + i * sai;
    float *Ci = C + i * ldc;
    for (int64_t j = 0; j < n16; j += 16) {
      if (mr == MR) {
        tile6x16(K, Ai, sai, sak, B + j, ldb, Ci + j, ldc);
      } else {
        edge(mr, 8, K, Ai, sai, sak, B + j, ldb, Ci + j, ldc);
        edge(mr, 8, K, Ai, sai, sak, B + j + 8, ldb, Ci + j + 8, ldc);
      }
    }
    for (int64_t j = n16; j < N; j += 8) edge(mr, N - j < 8 ? N - j : 8, K, Ai, sai, sak, B + j, ldb, Ci + j, ldc);
  }
}

/* scratch: M*N floats, used when K > KB */
static void gemm(int64_t M, int64_t N, int64_t K, const float *A, int64_t sai, int64_t sak, const float *B,
                 int64_t ldb, float *C, int64_t ldc, float *scratch) {
  if (K == 0) {
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) C[i * ldc + j] = 0.0f;
    return;
  }
  block(M, N, K < KB ? K : KB, A, sai, sak, B, ldb, C, ldc);
  for (int64_t k = KB; k < K; k += KB) {
    block(M, N, K - k < KB ? K - k : KB, A + k * sak, sai, sak, B + k * ldb, ldb, scratch, N);
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) C[i * ldc + j] += scratch[i * N + j];
  }
}

/* the exported entry: `batch` products with batch strides sab, sbb, scb (0 broadcasts an operand) */
void pcbench_det_gemm(int64_t batch, int64_t M, int64_t N, int64_t K, const float *A, int64_t sab, int64_t sai,
                      int64_t sak, const float *B, int64_t sbb, int64_t ldb, float *C, int64_t scb, int64_t ldc,
                      float *scratch) {
  for (int64_t b = 0; b < batch; b++) gemm(M, N, K, A + b * sab, sai, sak, B + b * sbb, ldb, C + b * scb, ldc, scratch);
}

/* 1 when this build's instructions run here (the caller checks before any product) */
int pcbench_det_gemm_abi(void) { return 1; }
