// measure_device_profile_peaks (device_profile_peaks.h): a timed copy through the backend.
#include "train/device_profile_peaks.h"

#include <algorithm>

#include "core/timer.h"

namespace nanogpt {

DeviceProfilePeaks measure_device_profile_peaks(Backend& device, double peak_flops) {
  DeviceProfilePeaks p;
  p.compute.dtype = DType::kF32;  // arithmetic() and matmul() are then fp32_fma's: the peak
  p.compute.fp32_fma.flops_per_s = peak_flops;
  constexpr size_t kBytes = size_t{256} << 20;
  void* a = device.allocate(kBytes);
  void* b = device.allocate(kBytes);
  device.copy_bytes(b, a, kBytes);  // warm-up
  device.synchronize();
  double best = 0;
  for (int i = 0; i < 5; ++i) {
    Timer t;
    device.copy_bytes(b, a, kBytes);
    device.synchronize();
    best = std::max(best, 2.0 * kBytes / std::max(t.seconds(), 1e-9));
  }
  device.release(a);
  device.release(b);
  p.bytes_per_s = best;
  return p;
}

}  // namespace nanogpt
