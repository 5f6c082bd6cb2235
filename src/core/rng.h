// Random numbers with state that can be saved and restored exactly (for bit-exact resume):
// Rng is a seeded xoshiro256** stream; hash_uniform is a counter-based generator (no state) used
// for dropout masks, so a mask is a pure function of (seed, element index) and can be recomputed in
// backward and on any thread.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <string>

namespace nanogpt {

// Always inlined (as hash_uniform): dropout in the kernels compiled per CPU target uses them.
[[gnu::always_inline]] inline uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Uniform in [0, 1) as a pure function of (seed, index): 24-bit resolution.
[[gnu::always_inline]] inline float hash_uniform(uint64_t seed, uint64_t index) {
  uint64_t h = splitmix64(seed ^ splitmix64(index));
  return static_cast<float>(h >> 40) * (1.0f / 16777216.0f);
}

class Rng {
 public:
  explicit Rng(uint64_t seed = 0) { reseed(seed); }
  void reseed(uint64_t seed) {
    uint64_t x = seed;
    for (auto& s : s_) {
      x = splitmix64(x);
      s = x;
    }
  }
  uint64_t next_u64() {
    uint64_t result = rotl(s_[1] * 5, 7) * 9;
    uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform integer in [0, n), n > 0 (Lemire's multiply-shift; bias < 2^-32 for our n).
  uint64_t uniform_int(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(next_u64()) * n) >> 64);
  }
  // Uniform float in [0, 1).
  float uniform() { return static_cast<float>(next_u64() >> 40) * (1.0f / 16777216.0f); }
  double uniform_double() {
    return static_cast<double>(next_u64() >> 11) * (1.0 / 9007199254740992.0);
  }
  // Standard normal (Box-Muller, one value per call, no cached spare so state stays 4 words).
  float normal() {
    double u1 = uniform_double();
    double u2 = uniform_double();
    if (u1 < 1e-300) u1 = 1e-300;
    return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2));
  }

  std::array<uint64_t, 4> state() const { return s_; }
  void set_state(const std::array<uint64_t, 4>& s) { s_ = s; }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::array<uint64_t, 4> s_{};
};

}  // namespace nanogpt
