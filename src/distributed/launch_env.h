// LaunchEnv: which launcher started this process (mpirun, Slurm's srun, torchrun) and which rank it
// is, read from the environment through an injectable lookup (tests pass a map), plus the rule that
// gives each rank its GPU: the local_rank-th visible device, named by its physical id when
// CUDA_VISIBLE_DEVICES lists them. Plain C++: nothing here touches CUDA or MPI.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace nanogpt {

// The value of an environment variable, or nullopt when it is unset.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

// The process's own environment (getenv).
EnvLookup process_env();
// A fixed environment (tests): the variables of `vars`, nothing else.
EnvLookup env_from_map(std::map<std::string, std::string> vars);

enum class Launcher { kNone, kMpirun, kSlurm, kTorchrun };

// "mpirun env", "Slurm env", "torchrun env", "no launcher".
std::string launcher_name(Launcher launcher);

struct LaunchInfo {
  Launcher launcher = Launcher::kNone;
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;        // rank among the ranks of this host
  int local_world_size = 1;  // ranks on this host
};

// Reads the launcher's variables. Precedence when several are set: mpirun (OMPI_COMM_WORLD_*),
// then torchrun-style (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE; a job script inside a Slurm
// allocation that runs torchrun sees both), then Slurm (SLURM_PROCID, SLURM_NTASKS or
// SLURM_STEP_NUM_TASKS, SLURM_LOCALID, SLURM_NTASKS_PER_NODE or SLURM_TASKS_PER_NODE). None: a
// world of one. Throws nanogpt::Error naming the variable, its value, what was expected and the fix
// on a non-number, a missing partner variable (RANK without WORLD_SIZE) or rank >= world.
LaunchInfo detect_launch(const EnvLookup& env);

// Slurm's compressed task counts per node, "4(x2),3" -> {4, 4, 3}. Throws on a malformed value.
std::vector<int> parse_slurm_tasks_per_node(const std::string& value);

struct GpuAssignment {
  int device = 0;            // index among the visible GPUs (what cudaSetDevice takes)
  int visible_count = 0;     // GPUs this process sees
  std::string physical_id;   // CUDA_VISIBLE_DEVICES's entry for `device`; empty when unset
  std::string visible_list;  // CUDA_VISIBLE_DEVICES as set; empty when unset
  bool shared = false;       // several local ranks on this GPU (allow_sharing)
};

// The GPU of this rank: index local_rank among `visible_gpus` devices. More local ranks than GPUs
// is an error naming both counts, unless `allow_sharing` (testing several ranks on one GPU): then
// local_rank % visible_gpus, marked shared.
GpuAssignment assign_gpu(const LaunchInfo& launch, int visible_gpus, const EnvLookup& env,
                         bool allow_sharing = false);

// One line for the log: "rank 1/4 (local 1/4, torchrun env) on GPU 1 (CUDA_VISIBLE_DEVICES=2,3,4,5
// -> physical 3)". Ranks are printed 0-based.
std::string describe_launch(const LaunchInfo& launch, const GpuAssignment& gpu);

}  // namespace nanogpt
