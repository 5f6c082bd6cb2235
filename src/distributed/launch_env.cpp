// detect_launch / assign_gpu (launch_env.h): the launchers' variables, checked for what they must
// agree on, and the rank -> GPU rule.
#include "distributed/launch_env.h"

#include <charconv>
#include <cstdlib>
#include <numeric>

#include "core/check.h"

namespace nanogpt {

namespace {

// A whole number >= 0 in `value` (all of it), or nullopt.
std::optional<int> parse_int(const std::string& value) {
  int out = 0;
  const char* end = value.data() + value.size();
  auto [ptr, ec] = std::from_chars(value.data(), end, out);
  if (value.empty() || ec != std::errc() || ptr != end || out < 0) return std::nullopt;
  return out;
}

// One launcher's variables, read with messages that name the variable and the launcher.
class VarReader {
 public:
  VarReader(const EnvLookup& env, std::string launcher, std::string fix)
      : env_(env), launcher_(std::move(launcher)), fix_(std::move(fix)) {}

  bool has(const std::string& name) const { return env_(name).has_value(); }

  // The number in `name`; `expected` says what it should hold.
  std::optional<int> number(const std::string& name, const std::string& expected) const {
    const auto value = env_(name);
    if (!value) return std::nullopt;
    const auto n = parse_int(*value);
    CHECK(n.has_value(), "{}={}: expected {}, a whole number >= 0 (set by {}); fix: {}", name,
          *value, expected, launcher_, fix_);
    return n;
  }

  int required(const std::string& name, const std::string& expected,
               const std::string& because) const {
    const auto n = number(name, expected);
    CHECK(n.has_value(), "{} is not set, but {}: expected {} (set by {}); fix: {}", name, because,
          expected, launcher_, fix_);
    return *n;
  }

  // `rank` < `count`, both read from variables.
  void check_below(const std::string& rank_name, int rank, const std::string& count_name,
                   int count) const {
    CHECK(count >= 1, "{}={}: expected at least 1 rank (set by {}); fix: {}", count_name, count,
          launcher_, fix_);
    CHECK(rank < count, "{}={} is not below {}={}: expected a rank 0..{} (set by {}); fix: {}",
          rank_name, rank, count_name, count, count - 1, launcher_, fix_);
  }

 private:
  const EnvLookup& env_;
  std::string launcher_, fix_;
};

LaunchInfo from_mpirun(const EnvLookup& env) {
  const VarReader v(env, "mpirun",
                    "start every rank with mpirun (it sets all four OMPI_COMM_WORLD_* variables), "
                    "and do not set them by hand");
  LaunchInfo l;
  l.launcher = Launcher::kMpirun;
  const std::string because = "OMPI_COMM_WORLD_SIZE is set";
  l.world_size = v.required("OMPI_COMM_WORLD_SIZE", "the number of ranks", because);
  l.rank = v.required("OMPI_COMM_WORLD_RANK", "this process's rank", because);
  l.local_rank = v.required("OMPI_COMM_WORLD_LOCAL_RANK", "the rank on this host", because);
  l.local_world_size = v.required("OMPI_COMM_WORLD_LOCAL_SIZE", "the ranks on this host", because);
  v.check_below("OMPI_COMM_WORLD_RANK", l.rank, "OMPI_COMM_WORLD_SIZE", l.world_size);
  v.check_below("OMPI_COMM_WORLD_LOCAL_RANK", l.local_rank, "OMPI_COMM_WORLD_LOCAL_SIZE",
                l.local_world_size);
  return l;
}

LaunchInfo from_torchrun(const EnvLookup& env) {
  const VarReader v(env, "torchrun",
                    "set RANK and WORLD_SIZE together (and LOCAL_RANK with LOCAL_WORLD_SIZE), as "
                    "torchrun does, or unset them all for a single process");
  LaunchInfo l;
  l.launcher = Launcher::kTorchrun;
  l.rank = v.required("RANK", "this process's rank", "WORLD_SIZE is set");
  l.world_size = v.required("WORLD_SIZE", "the number of ranks", "RANK is set");
  v.check_below("RANK", l.rank, "WORLD_SIZE", l.world_size);
  if (v.has("LOCAL_RANK") || v.has("LOCAL_WORLD_SIZE")) {
    l.local_rank = v.required("LOCAL_RANK", "the rank on this host", "LOCAL_WORLD_SIZE is set");
    l.local_world_size =
        v.required("LOCAL_WORLD_SIZE", "the ranks on this host", "LOCAL_RANK is set");
    v.check_below("LOCAL_RANK", l.local_rank, "LOCAL_WORLD_SIZE", l.local_world_size);
    CHECK(l.local_world_size <= l.world_size,
          "LOCAL_WORLD_SIZE={} is more than WORLD_SIZE={}: expected the ranks on this host, at "
          "most all of them (set by torchrun); fix: set LOCAL_WORLD_SIZE to the ranks per host",
          l.local_world_size, l.world_size);
  } else {  // set by hand without the local pair: every rank on this host
    l.local_rank = l.rank;
    l.local_world_size = l.world_size;
  }
  return l;
}

LaunchInfo from_slurm(const EnvLookup& env) {
  const VarReader v(env, "srun",
                    "start the ranks with srun inside the allocation (sbatch alone runs one task; "
                    "srun sets SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID and the tasks per node)");
  LaunchInfo l;
  l.launcher = Launcher::kSlurm;
  const std::string because = "SLURM_PROCID is set";
  l.rank = v.required("SLURM_PROCID", "this task's rank", because);
  const std::string world_var = v.has("SLURM_STEP_NUM_TASKS") ? "SLURM_STEP_NUM_TASKS"
                                                               : "SLURM_NTASKS";
  l.world_size = v.required(world_var, "the number of tasks", because);
  v.check_below("SLURM_PROCID", l.rank, world_var, l.world_size);
  l.local_rank = v.required("SLURM_LOCALID", "the task's rank on this node", because);
  const auto per_node = v.number("SLURM_NTASKS_PER_NODE", "the tasks on each node");
  std::string local_var = "SLURM_NTASKS_PER_NODE";
  if (per_node) {
    l.local_world_size = *per_node;
  } else {
    local_var = v.has("SLURM_STEP_TASKS_PER_NODE") ? "SLURM_STEP_TASKS_PER_NODE"
                                                   : "SLURM_TASKS_PER_NODE";
    const auto value = env(local_var);
    CHECK(value.has_value(),
          "neither SLURM_NTASKS_PER_NODE nor SLURM_TASKS_PER_NODE is set, but SLURM_PROCID is: "
          "expected the tasks on each node (set by srun); fix: start the ranks with srun, or "
          "pass --ntasks-per-node");
    const std::vector<int> counts = parse_slurm_tasks_per_node(*value);
    const int total = std::accumulate(counts.begin(), counts.end(), 0);
    CHECK(total == l.world_size,
          "{}={} adds up to {} tasks, but {}={}: expected the same number of tasks (set by srun); "
          "fix: do not set them by hand",
          local_var, *value, total, world_var, l.world_size);
    const auto node = v.number("SLURM_NODEID", "this node's index in the allocation");
    if (node) {
      CHECK(*node < static_cast<int>(counts.size()),
            "SLURM_NODEID={} is not below the {} nodes of {}={}: expected this node's index (set "
            "by srun); fix: do not set them by hand",
            *node, counts.size(), local_var, *value);
      l.local_world_size = counts[static_cast<size_t>(*node)];
    } else {
      for (int c : counts) {
        CHECK(c == counts[0],
              "{}={} gives nodes different task counts and SLURM_NODEID is not set: expected "
              "SLURM_NODEID to say which node this is (set by srun); fix: start with srun",
              local_var, *value);
      }
      l.local_world_size = counts[0];
    }
  }
  v.check_below("SLURM_LOCALID", l.local_rank, local_var, l.local_world_size);
  return l;
}

}  // namespace

EnvLookup process_env() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (!v) return std::nullopt;
    return std::string(v);
  };
}

EnvLookup env_from_map(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

std::string launcher_name(Launcher launcher) {
  switch (launcher) {
    case Launcher::kMpirun: return "mpirun env";
    case Launcher::kSlurm: return "Slurm env";
    case Launcher::kTorchrun: return "torchrun env";
    case Launcher::kNone: break;
  }
  return "no launcher";
}

std::vector<int> parse_slurm_tasks_per_node(const std::string& value) {
  auto bad = [&](const std::string& part) {
    fail("SLURM_TASKS_PER_NODE={}: '{}' is not a task count: expected a comma-separated list of "
         "counts, each N or N(xK) for K nodes of N tasks, e.g. 4(x2),3 (set by Slurm); fix: do not "
         "set it by hand",
         value, part);
  };
  std::vector<int> out;
  size_t start = 0;
  while (start <= value.size()) {
    const size_t comma = std::min(value.find(',', start), value.size());
    const std::string part = value.substr(start, comma - start);
    const size_t paren = part.find('(');
    const auto count = parse_int(part.substr(0, paren));
    if (!count || *count < 1) bad(part);
    int repeat = 1;
    if (paren != std::string::npos) {
      if (part.size() < paren + 4 || part[paren + 1] != 'x' || part.back() != ')') bad(part);
      const auto r = parse_int(part.substr(paren + 2, part.size() - paren - 3));
      if (!r || *r < 1) bad(part);
      repeat = *r;
    }
    out.insert(out.end(), static_cast<size_t>(repeat), *count);
    start = comma + 1;
  }
  return out;
}

LaunchInfo detect_launch(const EnvLookup& env) {
  if (env("OMPI_COMM_WORLD_SIZE") || env("OMPI_COMM_WORLD_RANK")) return from_mpirun(env);
  if (env("RANK") || env("WORLD_SIZE")) return from_torchrun(env);
  if (env("SLURM_PROCID")) return from_slurm(env);
  return LaunchInfo{};
}

GpuAssignment assign_gpu(const LaunchInfo& launch, int visible_gpus, const EnvLookup& env,
                         bool allow_sharing) {
  GpuAssignment g;
  g.visible_count = visible_gpus;
  g.visible_list = env("CUDA_VISIBLE_DEVICES").value_or("");
  CHECK(visible_gpus >= 1,
        "rank {}: no GPU is visible to this process{}: expected at least one; fix: check "
        "nvidia-smi and CUDA_VISIBLE_DEVICES, or train with --device=cpu",
        launch.rank,
        g.visible_list.empty() ? "" : fmt::format(" (CUDA_VISIBLE_DEVICES={})", g.visible_list));
  if (launch.local_world_size > visible_gpus) {
    CHECK(allow_sharing,
          "rank {}: {} ranks on this host but {} GPU{} visible{}: expected one GPU per local rank; "
          "fix: start at most {} rank{} per host (e.g. torchrun --nproc_per_node={}), or make more "
          "GPUs visible",
          launch.rank, launch.local_world_size, visible_gpus, visible_gpus == 1 ? "" : "s",
          g.visible_list.empty() ? "" : fmt::format(" (CUDA_VISIBLE_DEVICES={})", g.visible_list),
          visible_gpus, visible_gpus == 1 ? "" : "s", visible_gpus);
    g.shared = true;
  }
  g.device = launch.local_rank % visible_gpus;
  if (!g.visible_list.empty()) {
    std::vector<std::string> ids;
    size_t start = 0;
    while (start <= g.visible_list.size()) {
      const size_t comma = std::min(g.visible_list.find(',', start), g.visible_list.size());
      ids.push_back(g.visible_list.substr(start, comma - start));
      start = comma + 1;
    }
    if (g.device < static_cast<int>(ids.size())) g.physical_id = ids[static_cast<size_t>(g.device)];
  }
  return g;
}

std::string describe_launch(const LaunchInfo& launch, const GpuAssignment& gpu) {
  std::string s = fmt::format("rank {}/{} (local {}/{}, {}) on GPU {}", launch.rank,
                              launch.world_size, launch.local_rank, launch.local_world_size,
                              launcher_name(launch.launcher), gpu.device);
  if (!gpu.visible_list.empty() && !gpu.physical_id.empty()) {
    s += fmt::format(" (CUDA_VISIBLE_DEVICES={} -> physical {})", gpu.visible_list,
                     gpu.physical_id);
  }
  if (gpu.shared) {
    s += fmt::format(", shared by {} local ranks on {} GPU{}", launch.local_world_size,
                     gpu.visible_count, gpu.visible_count == 1 ? "" : "s");
  }
  return s;
}

}  // namespace nanogpt
