// What every flash attention kernel shares, whatever its CPU target or dtype (attention.cpp per
// target, attention_bf16.cpp): the block sizes, the dimensions of a call, the dropout mask index,
// the lazy-rescale threshold and the forward's parallel task loop. No vector code.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace nanogpt::cpu::attention_tiles {

constexpr int kBq = 32;  // query rows per block
constexpr int kBk = 64;  // keys per block (the width of the score tile)

struct Dims {
  int B, T, TP, C, NH, HS, HSP;  // TP: T rounded up to kBk; HSP: HS rounded up to 16
  float scale, p, keep_scale;
  uint64_t seed;
};

inline Dims make_dims(int B, int T, int C, int NH, float p, uint64_t seed) {
  const int HS = C / NH;
  return {B,
          T,
          (T + kBk - 1) / kBk * kBk,
          C,
          NH,
          HS,
          (HS + 15) / 16 * 16,
          1.0f / std::sqrt(static_cast<float>(HS)),
          p,
          p > 0 ? 1.0f / (1.0f - p) : 1.0f,
          seed};
}

// Key groups per head in backward: enough tasks for 4 per thread, at most one per key block.
inline int key_groups(int BH, int T, int threads) {
  const int nkb = (T + kBk - 1) / kBk;
  const int want = (4 * threads + BH - 1) / BH;
  return std::clamp(want, 1, nkb);
}

// Whether whole heads are dealt to the threads in order (OpenMP's static schedule: thread i gets
// the heads of a contiguous band of batch rows, the same rows the row-split matmuls, norms and
// residual adds give it), not finer tasks from a shared counter. At small T a head is a few
// microseconds of work, and moving its Q, K, V and gradient lines between cores cost more than the
// products: at W1 (T 64, 48 heads, 2 threads) two threads ran the dynamic tasks only 1.2x faster
// than one. Needs the heads to divide evenly (or enough of them that one more is little).
inline bool static_whole_heads(int BH, int T, int threads) {
  return T <= 2 * kBk && threads > 0 && (BH % threads == 0 || BH >= 8 * threads);
}

// Inside a parallel region: task(i) for i in [0, n), each thread a contiguous band of them when
// `static_bands` (static_whole_heads), else one at a time from a shared counter. The backward
// passes' loop over heads (or head x key-group tasks).
template <class Task>
void for_each_task(int64_t n, bool static_bands, Task&& task) {
  if (static_bands) {
#pragma omp for schedule(static)
    for (int64_t i = 0; i < n; ++i) task(i);
  } else {
#pragma omp for schedule(dynamic, 1)
    for (int64_t i = 0; i < n; ++i) task(i);
  }
}

// A 32-bit element (float or a bf16 pair) that may be read and written through any type: what the
// K^T / V^T packing transposes.
typedef uint32_t Word32 __attribute__((may_alias));

inline uint64_t mask_index(int b, int h, int t, int s, const Dims& d) {
  return ((static_cast<uint64_t>(b) * d.NH + h) * d.T + t) * d.T + s;
}

constexpr float kLog2e = 1.44269504088896341f;

// How far (natural-log units) a row's running max m may lag behind the true max of the scores seen
// (FlashAttention-4's lazy rescale): while no new scaled score exceeds m + kLazyRescale, m is kept,
// so the row's accumulated output and sum need no rescaling. The result is the same softmax (every
// term carries the same factor e^-m, removed by the final 1/l and by lse = m + log l); the
// unnormalized probabilities stay below e^8 ~ 3e3, far from float overflow.
constexpr float kLazyRescale = 8.0f;

// The forward's parallel loop. With static_whole_heads, each thread its heads in order, each
// packed once, then its query blocks. Otherwise task i: head i/nqb, query block nqb-1 - i%nqb: the
// longest rows first, so the short ones fill in at the end; consecutive tasks of a thread mostly
// share the head, whose K and V it packs once: pack(w, b, h) when the thread starts on a head, then
// block(w, b, h, i0) for the query block at row i0. Each thread's scratch w is make(thread).
template <class MakeScratch, class Pack, class Block>
void run_forward_tasks(const Dims& d, MakeScratch make, Pack pack, Block block) {
  const int BH = d.B * d.NH, nqb = (d.T + kBq - 1) / kBq;
  const bool whole_heads = static_whole_heads(BH, d.T, omp_get_max_threads());
#pragma omp parallel
  {
    auto w = make(omp_get_thread_num());
    if (whole_heads) {
#pragma omp for schedule(static)
      for (int bh = 0; bh < BH; ++bh) {
        pack(w, bh / d.NH, bh % d.NH);
        for (int qb = nqb - 1; qb >= 0; --qb) block(w, bh / d.NH, bh % d.NH, qb * kBq);
      }
    } else {
      int packed = -1;  // the head whose K, V are in w
#pragma omp for schedule(dynamic, 1)
      for (int64_t i = 0; i < int64_t{BH} * nqb; ++i) {
        const int bh = static_cast<int>(i / nqb), qb = nqb - 1 - static_cast<int>(i % nqb);
        const int b = bh / d.NH, h = bh % d.NH;
        if (packed != bh) {
          pack(w, b, h);
          packed = bh;
        }
        block(w, b, h, qb * kBq);
      }
    }
  }
}

}  // namespace nanogpt::cpu::attention_tiles
