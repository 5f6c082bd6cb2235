// The oneDNN attention (attention_onednn.h): block products as oneDNN matmul primitives on strided
// views of qkv, dout and the row buffers; the rows between them in attention_onednn_rows.cpp.
#include "kernels/cpu/attention_onednn.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <dnnl.hpp>
#include <vector>

#include "kernels/cpu/attention_onednn_rows.h"
#include "kernels/cpu/context_impl.h"
#include "kernels/cpu/convert.h"

namespace nanogpt::cpu {

namespace {

constexpr int kBlockRows = 64;  // query rows per block

using dnnl::memory;

// The block products, each batched over HB heads of one sequence (heads_per_call; head h's rows
// start h*HS into each row of qkv, dout and out). With nq query rows seeing kend keys, head size
// HS, model width C, per head:
enum Product : int {
  kScores,    // S (nq, kend) f32 = Q (nq, HS; rows 3C apart) . K^T (HS, kend)
  kOutput,    // O (nq, HS) f32 = P (nq, kend) . V (kend, HS; rows 3C apart)
  kDProbs,    // dP (nq, kend) f32 = dO (nq, HS; rows C apart) . V^T (HS, kend)
  kDValues,   // dV (kend, HS) f32 += P^T (kend, nq) . dO (nq, HS)   (dV: T x HS per head)
  kDKeys,     // dK (kend, HS) f32 += dS^T (kend, nq) . Q (nq, HS)   (dK: T x HS per head)
  kDQueries,  // dQ (nq, HS) f32 = dS (nq, kend) . K (kend, HS)
};

// A batch of nh (rows, cols) matrices with the given strides (heads, rows, columns).
memory::desc heads(memory::dim nh, memory::dim rows, memory::dim cols, memory::data_type dt,
                   memory::dim hs, memory::dim rs, memory::dim cs) {
  return memory::desc({nh, rows, cols}, dt, {hs, rs, cs});
}

AttentionMatmul make_product(const dnnl::engine& engine, const AttentionMatmulKey& k) {
  const memory::dim nq = k.nq, kend = k.kend, hs = k.hs, nh = k.nh, c = k.c,
                    c3 = 3 * memory::dim{k.c}, t = k.t;
  const auto bf = memory::data_type::bf16, f32 = memory::data_type::f32;
  const memory::dim tile = nq * kend;  // a head's score tile (nq, kend), dense
  memory::desc src, wei, dst;
  bool accumulate = false;
  switch (k.product) {
    case kScores:
      src = heads(nh, nq, hs, bf, hs, c3, 1);
      wei = heads(nh, hs, kend, bf, hs, 1, c3);
      dst = heads(nh, nq, kend, f32, tile, kend, 1);
      break;
    case kOutput:
      src = heads(nh, nq, kend, bf, tile, kend, 1);
      wei = heads(nh, kend, hs, bf, hs, c3, 1);
      dst = heads(nh, nq, hs, f32, nq * hs, hs, 1);
      break;
    case kDProbs:
      src = heads(nh, nq, hs, bf, hs, c, 1);
      wei = heads(nh, hs, kend, bf, hs, 1, c3);
      dst = heads(nh, nq, kend, f32, tile, kend, 1);
      break;
    case kDValues:
      src = heads(nh, kend, nq, bf, tile, 1, kend);
      wei = heads(nh, nq, hs, bf, hs, c, 1);
      dst = heads(nh, kend, hs, f32, t * hs, hs, 1);
      accumulate = true;
      break;
    case kDKeys:
      src = heads(nh, kend, nq, bf, tile, 1, kend);
      wei = heads(nh, nq, hs, bf, hs, c3, 1);
      dst = heads(nh, kend, hs, f32, t * hs, hs, 1);
      accumulate = true;
      break;
    case kDQueries:
      src = heads(nh, nq, kend, bf, tile, kend, 1);
      wei = heads(nh, kend, hs, bf, hs, c3, 1);
      dst = heads(nh, nq, hs, f32, nq * hs, hs, 1);
      break;
    default:
      fail("attention (onednn): unknown block product {}", k.product);
  }
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // one scratchpad per thread
  if (accumulate) {
    dnnl::post_ops po;
    po.append_sum(1.0f);
    attr.set_post_ops(po);
  }
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, wei, dst), attr, engine);
  return {pd, dnnl::matmul(pd), pd.scratchpad_desc().get_size()};
}

// The products of every query block (index i0 / kBlockRows), made now (outside the parallel
// regions) or found in the context's cache; and the largest scratchpad among them.
struct BlockProducts {
  std::vector<std::vector<const AttentionMatmul*>> by_block;  // [block][product]
  size_t scratchpad_bytes = 0;
};

BlockProducts block_products(CpuBackend::Impl& impl, std::initializer_list<Product> products,
                             int T, int C, int NH, int HB) {
  BlockProducts out;
  for (int i0 = 0; i0 < T; i0 += kBlockRows) {
    const int nq = std::min(kBlockRows, T - i0), kend = i0 + nq;
    std::vector<const AttentionMatmul*> row(kDQueries + 1, nullptr);
    for (Product p : products) {
      const AttentionMatmulKey key{p, nq, kend, C / NH, HB, C, T};
      auto it = impl.attention_matmuls.find(key);
      if (it == impl.attention_matmuls.end()) {
        it = impl.attention_matmuls.emplace(key, make_product(impl.engine, key)).first;
      }
      row[p] = &it->second;
      out.scratchpad_bytes = std::max(out.scratchpad_bytes, it->second.scratchpad_bytes);
    }
    out.by_block.push_back(std::move(row));
  }
  return out;
}

// One thread's oneDNN stream and scratchpad, and its way to run a product on raw pointers.
struct ThreadRunner {
  const dnnl::engine& engine;
  dnnl::stream stream;
  memory scratchpad;
  ThreadRunner(const dnnl::engine& e, void* scratch, size_t bytes)
      : engine(e),
        stream(e),
        scratchpad(memory::desc({static_cast<memory::dim>(std::max<size_t>(bytes, 1))},
                                memory::data_type::u8, memory::format_tag::a),
                   e, scratch) {}
  void run(const AttentionMatmul& mm, const void* src, const void* wei, void* dst) {
    memory ms(mm.pd.src_desc(), engine, const_cast<void*>(src));
    memory mw(mm.pd.weights_desc(), engine, const_cast<void*>(wei));
    memory md(mm.pd.dst_desc(), engine, dst);
    mm.prim.execute(stream, {{DNNL_ARG_SRC, ms},
                             {DNNL_ARG_WEIGHTS, mw},
                             {DNNL_ARG_DST, md},
                             {DNNL_ARG_SCRATCHPAD, scratchpad}});
  }
};

AttentionRowParams row_params(int b, int h, int T, int NH, int HS, float p, uint64_t seed) {
  AttentionRowParams a;
  a.b = b;
  a.h = h;
  a.NH = NH;
  a.T = T;
  a.scale = 1.0f / std::sqrt(static_cast<float>(HS));
  a.p = p;
  a.keep_scale = p > 0 ? 1.0f / (1.0f - p) : 1.0f;
  a.seed = seed;
  return a;
}

// Heads per oneDNN call: the largest divisor of NH whose score tiles of a query block (HB x 64 x T
// floats) stay within ~512 KiB, in L2 with the block's other rows (all NH at once spilled to L3 at
// T 1024: 3 MiB a tile set).
int heads_per_call(int NH, int T) {
  const int most = std::max(1, (128 * 1024) / (kBlockRows * std::max(T, 1)));
  int hb = 1;
  for (int d = 1; d <= NH; ++d) {
    if (NH % d == 0 && d <= most) hb = d;
  }
  return hb;
}

// Per-thread buffers for HB heads of a sequence, cut from the thread's workspace block (floats;
// bf16 tiles in float storage).
struct Scratch {
  float *s, *dp, *o, *m, *l, *dq, *dk, *dv, *delta;
  uint16_t *p, *ds;
  unsigned char* pad;
  size_t floats;
  Scratch(int T, int HS, int HB, size_t pad_bytes, bool backward, float* block) {
    Carver c(block);
    const size_t tiles = static_cast<size_t>(HB) * kBlockRows * T;  // HB score tiles, widest
    const size_t rows = static_cast<size_t>(HB) * kBlockRows;
    const size_t head_rows = static_cast<size_t>(HB) * T * HS;  // a gradient per head
    s = c.take(tiles);
    p = reinterpret_cast<uint16_t*>(c.take(tiles / 2 + 1));
    o = c.take(rows * HS);
    m = c.take(rows);
    l = c.take(rows);
    dp = backward ? c.take(tiles) : nullptr;
    ds = backward ? reinterpret_cast<uint16_t*>(c.take(tiles / 2 + 1)) : nullptr;
    dq = backward ? c.take(rows * HS) : nullptr;
    dk = backward ? c.take(head_rows) : nullptr;
    dv = backward ? c.take(head_rows) : nullptr;
    delta = backward ? c.take(static_cast<size_t>(HB) * T) : nullptr;
    pad = reinterpret_cast<unsigned char*>(c.take(pad_bytes / sizeof(float) + 1));
    floats = c.used();
  }
};

}  // namespace

void attention_forward_onednn(CpuBackend& ctx, uint16_t* out, float* lse, const uint16_t* qkv,
                              int B, int T, int C, int NH, float dropout_p, uint64_t seed) {
  auto& impl = ctx.impl();
  const int HS = C / NH, HB = heads_per_call(NH, T), groups = NH / HB;
  const int64_t ld = 3 * static_cast<int64_t>(C);
  const BlockProducts prods = block_products(impl, {kScores, kOutput}, T, C, NH, HB);
  const size_t pad = prods.scratchpad_bytes;
  impl.attention.reserve(omp_get_max_threads(), Scratch(T, HS, HB, pad, false, nullptr).floats);
  const int nblocks = (T + kBlockRows - 1) / kBlockRows;
#pragma omp parallel
  {
    Scratch w(T, HS, HB, pad, false, impl.attention.thread_block(omp_get_thread_num()));
    ThreadRunner runner(impl.engine, w.pad, pad);
    // Task: (sequence b, head group, query block), the longest blocks first.
#pragma omp for schedule(dynamic, 1)
    for (int task = 0; task < B * groups * nblocks; ++task) {
      const int bg = task / nblocks, blk = nblocks - 1 - task % nblocks;
      const int b = bg / groups, h0 = bg % groups * HB;
      const int i0 = blk * kBlockRows, nq = std::min(kBlockRows, T - i0), kend = i0 + nq;
      // Row t of head h: t*ld + h*HS (Q), + C (K), + 2C (V).
      const uint16_t* seq = qkv + static_cast<int64_t>(b) * T * ld + h0 * HS;
      const auto& pr = prods.by_block[blk];
      runner.run(*pr[kScores], seq + i0 * ld, seq + C, w.s);
      const int64_t tile = static_cast<int64_t>(nq) * kend;
      for (int hh = 0; hh < HB; ++hh) {
        const AttentionRowParams a = row_params(b, h0 + hh, T, NH, HS, dropout_p, seed);
        onednn_softmax_rows(w.s + hh * tile, w.p + hh * tile, kend, w.m + hh * kBlockRows,
                            w.l + hh * kBlockRows, nq, kend, i0, a);
      }
      runner.run(*pr[kOutput], w.p, seq + 2 * C, w.o);
      for (int hh = 0; hh < HB; ++hh) {
        const int h = h0 + hh;
        for (int r = 0; r < nq; ++r) {
          const int t = i0 + r;
          float* orow = w.o + (static_cast<int64_t>(hh) * nq + r) * HS;
          const float l = w.l[hh * kBlockRows + r];
          const float inv = 1.0f / l;
          for (int x = 0; x < HS; ++x) orow[x] *= inv;
          narrow(TypedPtr(out + (static_cast<int64_t>(b) * T + t) * C + h * HS, DType::kBF16), orow,
                 HS);
          lse[(static_cast<int64_t>(b) * NH + h) * T + t] = w.m[hh * kBlockRows + r] + std::log(l);
        }
      }
    }
  }
}

void attention_backward_onednn(CpuBackend& ctx, uint16_t* dqkv, const uint16_t* dout,
                               const uint16_t* out, const float* lse, const uint16_t* qkv, int B,
                               int T, int C, int NH, float dropout_p, uint64_t seed) {
  auto& impl = ctx.impl();
  const int HS = C / NH, HB = heads_per_call(NH, T), groups = NH / HB;
  const int64_t ld = 3 * static_cast<int64_t>(C);
  const BlockProducts prods =
      block_products(impl, {kScores, kDProbs, kDValues, kDKeys, kDQueries}, T, C, NH, HB);
  const size_t pad = prods.scratchpad_bytes;
  impl.attention.reserve(omp_get_max_threads(), Scratch(T, HS, HB, pad, true, nullptr).floats);
  const int64_t head_rows = static_cast<int64_t>(T) * HS;
#pragma omp parallel
  {
    Scratch w(T, HS, HB, pad, true, impl.attention.thread_block(omp_get_thread_num()));
    ThreadRunner runner(impl.engine, w.pad, pad);
    // Task: (sequence b, head group), its query blocks in order (dK, dV accumulate over them).
#pragma omp for schedule(dynamic, 1)
    for (int bg = 0; bg < B * groups; ++bg) {
      const int b = bg / groups, h0 = bg % groups * HB;
      const uint16_t* seq = qkv + static_cast<int64_t>(b) * T * ld + h0 * HS;
      const uint16_t* doseq = dout + static_cast<int64_t>(b) * T * C + h0 * HS;
      const uint16_t* oseq = out + static_cast<int64_t>(b) * T * C + h0 * HS;
      uint16_t* dseq = dqkv + static_cast<int64_t>(b) * T * ld + h0 * HS;
      // D_t = dout_t . out_t per head, in float32.
      for (int hh = 0; hh < HB; ++hh) {
        for (int t = 0; t < T; ++t) {
          const uint16_t* dr = doseq + static_cast<int64_t>(t) * C + hh * HS;
          const uint16_t* orow = oseq + static_cast<int64_t>(t) * C + hh * HS;
          float acc = 0.0f;
          for (int x = 0; x < HS; ++x) {
            acc += bf16_bits_to_float(dr[x]) * bf16_bits_to_float(orow[x]);
          }
          w.delta[static_cast<int64_t>(hh) * T + t] = acc;
        }
      }
      std::fill(w.dk, w.dk + HB * head_rows, 0.0f);
      std::fill(w.dv, w.dv + HB * head_rows, 0.0f);
      for (int i0 = 0, blk = 0; i0 < T; i0 += kBlockRows, ++blk) {
        const int nq = std::min(kBlockRows, T - i0), kend = i0 + nq;
        const int64_t tile = static_cast<int64_t>(nq) * kend;
        const auto& pr = prods.by_block[blk];
        const uint16_t* q = seq + i0 * ld;
        const uint16_t* dob = doseq + static_cast<int64_t>(i0) * C;
        runner.run(*pr[kScores], q, seq + C, w.s);
        runner.run(*pr[kDProbs], dob, seq + 2 * C, w.dp);
        for (int hh = 0; hh < HB; ++hh) {
          const int h = h0 + hh;
          const AttentionRowParams a = row_params(b, h, T, NH, HS, dropout_p, seed);
          onednn_backward_rows(w.s + hh * tile, w.dp + hh * tile, kend, w.p + hh * tile,
                               w.ds + hh * tile, lse + (static_cast<int64_t>(b) * NH + h) * T,
                               w.delta + static_cast<int64_t>(hh) * T, nq, kend, i0, a);
        }
        runner.run(*pr[kDValues], w.p, dob, w.dv);
        runner.run(*pr[kDKeys], w.ds, q, w.dk);
        runner.run(*pr[kDQueries], w.ds, seq + C, w.dq);
        for (int hh = 0; hh < HB; ++hh) {
          for (int r = 0; r < nq; ++r) {
            narrow_add(TypedPtr(dseq + (i0 + r) * ld + hh * HS, DType::kBF16),
                       w.dq + (static_cast<int64_t>(hh) * nq + r) * HS, HS);
          }
        }
      }
      for (int hh = 0; hh < HB; ++hh) {
        for (int t = 0; t < T; ++t) {
          const int64_t acc = hh * head_rows + static_cast<int64_t>(t) * HS;
          narrow_add(TypedPtr(dseq + t * ld + C + hh * HS, DType::kBF16), w.dk + acc, HS);
          narrow_add(TypedPtr(dseq + t * ld + 2 * C + hh * HS, DType::kBF16), w.dv + acc, HS);
        }
      }
    }
  }
}

}  // namespace nanogpt::cpu
