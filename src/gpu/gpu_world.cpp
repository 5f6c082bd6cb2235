// make_gpu_world (gpu/gpu_world.h): the launcher's ranks, this rank's GPU, NCCL's id, NCCL.
#include "gpu/gpu_world.h"

#include <fmt/format.h>

#include "core/check.h"
#include "distributed/launch_env.h"
#include "distributed/rendezvous.h"
#include "kernels/cuda/cuda_context.h"
#if NANOGPT_WITH_NCCL
#include "distributed/nccl_communicator.h"
#endif

namespace nanogpt {

GpuWorld make_gpu_world(Communicator& host, const TrainConfig& config) {
  const EnvLookup env = process_env();
  LaunchInfo launch = detect_launch(env);
  GpuWorld world;
  if (launch.world_size == 1) return world;
  CHECK(host.size() == 1 || host.size() == launch.world_size,
        "--device=cuda: the launcher says {} ranks but MPI has {}; start every rank with the same "
        "launcher",
        launch.world_size, host.size());
  const bool share = env("NANOGPT_SHARE_GPU").value_or("") == "1";
  const GpuAssignment gpu = assign_gpu(launch, cuda::visible_device_count(), env, share);
  world.device = gpu.device;
  world.description = describe_launch(launch, gpu) + ": " + cuda::device_name(gpu.device);
#if NANOGPT_WITH_NCCL
  Blob id;
  if (launch.rank == 0) id = NcclCommunicator::make_unique_id();
  std::string how;
  if (host.size() > 1) {  // mpirun: MPI carries the id
    id.resize(NcclCommunicator::unique_id_bytes());
    host.broadcast(id.data(), static_cast<int64_t>(id.size()), 0);
    how = "MPI";
  } else {
    const RendezvousChoice choice = parse_rendezvous(config.rendezvous, env);
    RendezvousSpec spec;
    spec.rank = launch.rank;
    spec.world_size = launch.world_size;
    spec.run_id = default_run_id(env);
    spec.timeout_s = config.comm_timeout;
    id = rendezvous(choice, spec, id);
    how = choice.describe();
  }
  NcclOptions o;
  o.rank = launch.rank;
  o.world_size = launch.world_size;
  o.local_world_size = launch.local_world_size;
  o.device = gpu.device;
  o.timeout_s = config.comm_timeout;
  world.nccl = std::make_unique<NcclCommunicator>(id, o);
  world.description +=
      fmt::format(" (NCCL {}, ranks met through {})", NcclCommunicator::library_version(), how);
  return world;
#else
  (void)config;
  fail(
      "--device=cuda with {} ranks ({}) needs the NCCL communicator, which this nanogpt was "
      "built without (nccl.h or libnccl was not found): install NCCL (libnccl-dev) and rebuild, "
      "or train on one GPU in one process",
      launch.world_size, launcher_name(launch.launcher));
#endif
}

}  // namespace nanogpt
