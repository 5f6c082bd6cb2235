// detect_launch and assign_gpu from fixed environments: each launcher's variables, their
// precedence, the errors that name the variable, the value and the fix, and the rank -> GPU rule.
#include "distributed/launch_env.h"

#include <gtest/gtest.h>

#include "core/check.h"

namespace nanogpt {
namespace {

LaunchInfo launch(std::map<std::string, std::string> vars) {
  return detect_launch(env_from_map(std::move(vars)));
}

// The message of the nanogpt::Error `f` throws ("" when it throws none).
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string launch_error(std::map<std::string, std::string> vars) {
  return error_of([&] { launch(std::move(vars)); });
}

void expect_contains(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "'" << part << "' not in: " << text;
}

TEST(LaunchEnv, NoLauncherIsAWorldOfOne) {
  const LaunchInfo l = launch({{"HOME", "/root"}});
  EXPECT_EQ(l.launcher, Launcher::kNone);
  EXPECT_EQ(l.rank, 0);
  EXPECT_EQ(l.world_size, 1);
  EXPECT_EQ(l.local_world_size, 1);
}

TEST(LaunchEnv, Mpirun) {
  const LaunchInfo l = launch({{"OMPI_COMM_WORLD_RANK", "5"},
                               {"OMPI_COMM_WORLD_SIZE", "8"},
                               {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                               {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}});
  EXPECT_EQ(l.launcher, Launcher::kMpirun);
  EXPECT_EQ(l.rank, 5);
  EXPECT_EQ(l.world_size, 8);
  EXPECT_EQ(l.local_rank, 1);
  EXPECT_EQ(l.local_world_size, 4);
}

TEST(LaunchEnv, MpirunWithoutTheLocalVariablesNamesThem) {
  const std::string e =
      launch_error({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}});
  expect_contains(e, "OMPI_COMM_WORLD_LOCAL_RANK is not set");
  expect_contains(e, "mpirun");
}

TEST(LaunchEnv, Torchrun) {
  const LaunchInfo l = launch({{"RANK", "3"},
                               {"WORLD_SIZE", "4"},
                               {"LOCAL_RANK", "1"},
                               {"LOCAL_WORLD_SIZE", "2"},
                               {"MASTER_ADDR", "node0"}});
  EXPECT_EQ(l.launcher, Launcher::kTorchrun);
  EXPECT_EQ(l.rank, 3);
  EXPECT_EQ(l.world_size, 4);
  EXPECT_EQ(l.local_rank, 1);
  EXPECT_EQ(l.local_world_size, 2);
}

TEST(LaunchEnv, TorchrunStyleWithoutLocalVariablesIsOneHost) {
  const LaunchInfo l = launch({{"RANK", "2"}, {"WORLD_SIZE", "3"}});
  EXPECT_EQ(l.local_rank, 2);
  EXPECT_EQ(l.local_world_size, 3);
}

TEST(LaunchEnv, TorchrunErrorsNameTheVariableTheValueAndTheFix) {
  std::string e = launch_error({{"RANK", "1"}});
  expect_contains(e, "WORLD_SIZE is not set, but RANK is set");
  expect_contains(e, "fix: set RANK and WORLD_SIZE together");
  e = launch_error({{"WORLD_SIZE", "2"}});
  expect_contains(e, "RANK is not set, but WORLD_SIZE is set");
  e = launch_error({{"RANK", "abc"}, {"WORLD_SIZE", "2"}});
  expect_contains(e, "RANK=abc: expected this process's rank, a whole number >= 0");
  e = launch_error({{"RANK", "1"}, {"WORLD_SIZE", "2x"}});
  expect_contains(e, "WORLD_SIZE=2x");
  e = launch_error({{"RANK", "-1"}, {"WORLD_SIZE", "2"}});
  expect_contains(e, "RANK=-1");
  e = launch_error({{"RANK", "4"}, {"WORLD_SIZE", "4"}});
  expect_contains(e, "RANK=4 is not below WORLD_SIZE=4: expected a rank 0..3");
  e = launch_error({{"RANK", "0"}, {"WORLD_SIZE", "0"}});
  expect_contains(e, "WORLD_SIZE=0: expected at least 1 rank");
  e = launch_error({{"RANK", "0"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "0"}});
  expect_contains(e, "LOCAL_WORLD_SIZE is not set, but LOCAL_RANK is set");
  e = launch_error(
      {{"RANK", "0"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "2"}, {"LOCAL_WORLD_SIZE", "2"}});
  expect_contains(e, "LOCAL_RANK=2 is not below LOCAL_WORLD_SIZE=2");
  e = launch_error(
      {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "4"}});
  expect_contains(e, "LOCAL_WORLD_SIZE=4 is more than WORLD_SIZE=2");
}

TEST(LaunchEnv, SlurmWithTasksPerNodeAsANumber) {
  const LaunchInfo l = launch({{"SLURM_PROCID", "6"},
                               {"SLURM_NTASKS", "8"},
                               {"SLURM_LOCALID", "2"},
                               {"SLURM_NTASKS_PER_NODE", "4"},
                               {"SLURM_JOB_ID", "1234"}});
  EXPECT_EQ(l.launcher, Launcher::kSlurm);
  EXPECT_EQ(l.rank, 6);
  EXPECT_EQ(l.world_size, 8);
  EXPECT_EQ(l.local_rank, 2);
  EXPECT_EQ(l.local_world_size, 4);
}

TEST(LaunchEnv, SlurmCompressedTasksPerNode) {
  EXPECT_EQ(parse_slurm_tasks_per_node("4(x2),3"), (std::vector<int>{4, 4, 3}));
  EXPECT_EQ(parse_slurm_tasks_per_node("8"), (std::vector<int>{8}));
  EXPECT_EQ(parse_slurm_tasks_per_node("2,1(x3)"), (std::vector<int>{2, 1, 1, 1}));
  for (const char* bad : {"", "4(x2", "4(2)", "x", "4,,3", "0", "4(x0)", "4(x2),"}) {
    expect_contains(error_of([&] { parse_slurm_tasks_per_node(bad); }), "is not a task count");
  }
  // The node's own count, picked by SLURM_NODEID.
  LaunchInfo l = launch({{"SLURM_PROCID", "8"},
                         {"SLURM_NTASKS", "11"},
                         {"SLURM_LOCALID", "0"},
                         {"SLURM_NODEID", "2"},
                         {"SLURM_TASKS_PER_NODE", "4(x2),3"}});
  EXPECT_EQ(l.local_world_size, 3);
  // Equal counts need no node id; srun's step variables win over the allocation's.
  l = launch({{"SLURM_PROCID", "1"},
              {"SLURM_NTASKS", "16"},
              {"SLURM_STEP_NUM_TASKS", "4"},
              {"SLURM_LOCALID", "1"},
              {"SLURM_TASKS_PER_NODE", "8(x2)"},
              {"SLURM_STEP_TASKS_PER_NODE", "2(x2)"}});
  EXPECT_EQ(l.world_size, 4);
  EXPECT_EQ(l.local_world_size, 2);
}

TEST(LaunchEnv, SlurmErrors) {
  std::string e = launch_error({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"},
                                {"SLURM_LOCALID", "0"}, {"SLURM_TASKS_PER_NODE", "4(x2)"}});
  expect_contains(e, "SLURM_TASKS_PER_NODE=4(x2) adds up to 8 tasks, but SLURM_NTASKS=2");
  e = launch_error({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "7"}, {"SLURM_LOCALID", "0"},
                    {"SLURM_TASKS_PER_NODE", "4,3"}});
  expect_contains(e, "SLURM_NODEID");
  e = launch_error({{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "2"}});
  expect_contains(e, "SLURM_PROCID=3 is not below SLURM_NTASKS=2");
  e = launch_error({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}});
  expect_contains(e, "SLURM_LOCALID is not set");
  expect_contains(e, "srun");
}

TEST(LaunchEnv, MpirunWinsOverSlurmAndTorchrunOverSlurm) {
  const std::map<std::string, std::string> slurm = {{"SLURM_PROCID", "0"},
                                                    {"SLURM_NTASKS", "1"},
                                                    {"SLURM_LOCALID", "0"},
                                                    {"SLURM_NTASKS_PER_NODE", "1"}};
  auto with = [&](std::map<std::string, std::string> extra) {
    extra.insert(slurm.begin(), slurm.end());
    return launch(extra);
  };
  EXPECT_EQ(with({{"RANK", "1"}, {"WORLD_SIZE", "2"}}).launcher, Launcher::kTorchrun);
  EXPECT_EQ(with({{"OMPI_COMM_WORLD_RANK", "1"},
                  {"OMPI_COMM_WORLD_SIZE", "2"},
                  {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                  {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}})
                .launcher,
            Launcher::kMpirun);
  EXPECT_EQ(with({}).launcher, Launcher::kSlurm);
}

TEST(GpuAssignment, LocalRankPicksTheVisibleGpuAndNamesThePhysicalOne) {
  LaunchInfo l{Launcher::kTorchrun, 1, 4, 1, 4};
  const GpuAssignment g = assign_gpu(l, 4, env_from_map({{"CUDA_VISIBLE_DEVICES", "2,3,4,5"}}));
  EXPECT_EQ(g.device, 1);
  EXPECT_EQ(g.physical_id, "3");
  EXPECT_FALSE(g.shared);
  EXPECT_EQ(describe_launch(l, g),
            "rank 1/4 (local 1/4, torchrun env) on GPU 1 (CUDA_VISIBLE_DEVICES=2,3,4,5 -> "
            "physical 3)");
  const GpuAssignment plain = assign_gpu(l, 8, env_from_map({}));
  EXPECT_EQ(plain.device, 1);
  EXPECT_EQ(plain.physical_id, "");
  EXPECT_EQ(describe_launch(l, plain), "rank 1/4 (local 1/4, torchrun env) on GPU 1");
}

TEST(GpuAssignment, MoreLocalRanksThanGpusIsAnErrorUnlessSharingIsAllowed) {
  LaunchInfo l{Launcher::kSlurm, 3, 4, 3, 4};
  const auto env = env_from_map({{"CUDA_VISIBLE_DEVICES", "0,1"}});
  const std::string e = error_of([&] { assign_gpu(l, 2, env); });
  expect_contains(e, "rank 3: 4 ranks on this host but 2 GPUs visible (CUDA_VISIBLE_DEVICES=0,1)");
  expect_contains(e, "--nproc_per_node=2");
  const GpuAssignment g = assign_gpu(l, 2, env, /*allow_sharing=*/true);
  EXPECT_EQ(g.device, 1);
  EXPECT_TRUE(g.shared);
  EXPECT_EQ(describe_launch(l, g),
            "rank 3/4 (local 3/4, Slurm env) on GPU 1 (CUDA_VISIBLE_DEVICES=0,1 -> physical 1), "
            "shared by 4 local ranks on 2 GPUs");
  expect_contains(error_of([&] { assign_gpu(l, 0, env, true); }), "no GPU is visible");
}

}  // namespace
}  // namespace nanogpt
