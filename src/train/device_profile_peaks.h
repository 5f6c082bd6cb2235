// The peaks a --profile table on a device backend (a GPU) is read against: the device's FLOP peak
// (TrainOptions::device_peak_flops: the datasheet's, or measured) for every op class, and its
// memory bandwidth, measured now through the seam (copy_bytes of a 256 MiB buffer, best of 5).
// The CPU's table keeps the CPU's measured peaks (kernels/compute_peaks.h).
#pragma once

#include "kernels/backend.h"
#include "kernels/compute_peaks.h"

namespace nanogpt {

struct DeviceProfilePeaks {
  ComputePeaks compute;    // every unit at the device's peak (fp32_fma carries it)
  double bytes_per_s = 0;  // read + write bytes of a device-to-device copy, per second
};

DeviceProfilePeaks measure_device_profile_peaks(Backend& device, double peak_flops);

}  // namespace nanogpt
