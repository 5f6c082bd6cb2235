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

// The forward's parallel loop. Task i: head i/nqb, query block nqb-1 - i%nqb: the longest rows
// first, so the short ones fill in at the end; consecutive tasks of a thread mostly share the head,
// whose K and V it packs once: pack(w, b, h) when the thread starts on a head, then
// block(w, b, h, i0) for the query block at row i0. Each thread's scratch w is make(thread).
template <class MakeScratch, class Pack, class Block>
void run_forward_tasks(const Dims& d, MakeScratch make, Pack pack, Block block) {
  const int BH = d.B * d.NH, nqb = (d.T + kBq - 1) / kBq;
#pragma omp parallel
  {
    auto w = make(omp_get_thread_num());
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

}  // namespace nanogpt::cpu::attention_tiles
