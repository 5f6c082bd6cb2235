// Data-parallel training across two separate network hosts: two network namespaces joined by a
// veth pair, each with its own address. mpirun runs in host A and starts the rank of host B through
// OpenMPI's launcher agent (tests/mpi/netns_agent.sh enters B's namespace), ranks talk TCP over the
// veth link only. Training across them equals the one-process run; cutting the link mid-run ends
// the job with a clear error. Skipped, with the reason, where namespaces cannot be made (no root,
// containers without CAP_SYS_ADMIN, no iproute2).
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "mpi_util.h"

namespace nanogpt::mpi_test {
namespace {

const std::string kScripts = std::string(NANOGPT_SOURCE_DIR) + "/tests/mpi/";

// Two namespace hosts for one test, removed (with what still runs in them) at the end.
class NamespaceHosts : public testing::Test {
 protected:
  void SetUp() override {
    const std::string id = std::to_string(getpid() % 100000);
    a_ = "ngA" + id;
    b_ = "ngB" + id;
    RunResult up = e2e::run_command("/", "sh '" + kScripts + "netns_hosts.sh' up " + a_ + " " + b_);
    if (up.exit_code != 0) {
      e2e::run_command("/", "sh '" + kScripts + "netns_hosts.sh' down " + a_ + " " + b_);
      GTEST_SKIP() << "network namespaces are not available here (`ip netns add` needs root and "
                      "CAP_SYS_ADMIN, and iproute2): "
                   << up.output;
    }
    made_ = true;
  }
  void TearDown() override {
    if (made_) e2e::run_command("/", "sh '" + kScripts + "netns_hosts.sh' down " + a_ + " " + b_);
  }

  // `mpirun` inside host A, one rank in each host, TCP restricted to the veth link.
  std::string mpirun_across_hosts() const {
    return "env NANOGPT_NETNS_A=" + a_ + " NANOGPT_NETNS_B=" + b_ + " OMP_NUM_THREADS=1 ip netns exec " +
           a_ +
           " mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 "
           "--host 10.231.0.1,10.231.0.2 --mca plm_rsh_agent '" +
           kScripts +
           "netns_agent.sh' --mca btl tcp,self --mca btl_tcp_if_include 10.231.0.0/24 "
           "--mca oob_tcp_if_include 10.231.0.0/24 --mca oob_tcp_keepalive_time 2 "
           "--mca oob_tcp_keepalive_intvl 1 --mca oob_tcp_keepalive_probes 2 " +
           binary();
  }

  int64_t veth_tx_bytes() const {
    RunResult r = e2e::run_command(
        "/", "ip netns exec " + a_ + " cat /sys/class/net/" + a_ + "v/statistics/tx_bytes");
    return r.exit_code == 0 ? std::stoll(r.output) : -1;
  }

  std::string a_, b_;
  bool made_ = false;
};

TEST_F(NamespaceHosts, TrainingAcrossTwoHostsEqualsOneProcess) {
  std::string dir = prepared_dir("netns_equal");
  RunResult one = run_single(dir, "train " + tiny_keys("one") + " --max_iters=6 --threads=1");
  ASSERT_EQ(one.exit_code, 0) << one.output;
  const int64_t tx_before = veth_tx_bytes();
  RunResult two = e2e::run_command(
      dir, mpirun_across_hosts() + " train " + tiny_keys("two") + " --max_iters=6 --threads=1");
  ASSERT_EQ(two.exit_code, 0) << two.output;
  EXPECT_NE(two.output.find("2 ranks, 1 on this host"), std::string::npos) << two.output;
  expect_same_losses(losses(dir + "/one/metrics.jsonl"), losses(dir + "/two/metrics.jsonl"),
                     "1 process vs 2 namespace hosts");
  // The gradients crossed the veth link: 6 steps x ~130 kB of gradients each way at least.
  EXPECT_GT(veth_tx_bytes() - tx_before, 6 * 100'000) << "host A sent too little over the link";
}

TEST_F(NamespaceHosts, CuttingTheLinkEndsTheJobWithAClearError) {
  std::string dir = prepared_dir("netns_cut");
  const std::string keys =
      "--dataset=sc --batch_size=2 --gradient_accumulation_steps=4 --block_size=32 --n_layer=2 "
      "--n_head=2 --n_embd=32 --eval_interval=5 --eval_iters=1 --log_interval=1000 "
      "--max_iters=1000000 --threads=1 --comm_timeout=3 --out_dir=run";
  const std::string script =
      "(timeout --kill-after=5 120 " + mpirun_across_hosts() + " train " + keys +
      " > job.log 2>&1; echo \"mpirun exit $?\" >> job.log) & job=$!\n"
      "for i in $(seq 1200); do [ -f run/ckpt/state.json ] && break; kill -0 $job || break; "
      "sleep 0.1; done\n"
      "ip -n " + a_ + " link set " + a_ + "v down\n"
      "wait $job; cat job.log\n";
  std::ofstream(dir + "/cut_link.sh") << script;
  RunResult r = e2e::run_command(dir, "bash cut_link.sh");
  EXPECT_EQ(r.output.find("mpirun exit 124"), std::string::npos) << "the job hung:\n" << r.output;
  EXPECT_EQ(r.output.find("mpirun exit 0"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("waited 3 s for the other ranks"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("the network between the hosts is down"), std::string::npos) << r.output;
  // The last checkpoint still loads.
  RunResult ok = run_single(dir,
                            "train --dataset=sc --out_dir=run --init_from=resume --eval_only=True "
                            "--eval_iters=1 --batch_size=2");
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
}

}  // namespace
}  // namespace nanogpt::mpi_test
