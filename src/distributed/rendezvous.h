// Rendezvous: how ranks that no MPI launcher connected hand each other a small blob that rank 0
// made (NCCL's 128-byte unique id), either through a file on a shared file system or through a TCP
// connection to rank 0 (torchrun's MASTER_ADDR:MASTER_PORT). Both are barriers: they return once
// every rank has arrived, or throw nanogpt::Error naming the ranks that did not within the timeout,
// a duplicate rank, or a world size that differs between ranks. POSIX files and sockets only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "distributed/launch_env.h"

namespace nanogpt {

using Blob = std::vector<uint8_t>;

struct RendezvousSpec {
  int rank = 0;
  int world_size = 1;
  // Names this run, so that what an earlier run left behind (a file, a late peer) is not taken
  // for it: SLURM_JOB_ID, TORCHELASTIC_RUN_ID or a key (default_run_id).
  std::string run_id = "default";
  double timeout_s = 300;
};

// The run id from the launcher: TORCHELASTIC_RUN_ID, else SLURM_JOB_ID (with SLURM_STEP_ID when
// set), else "default".
std::string default_run_id(const EnvLookup& env);

// Through a directory that every rank sees (a shared file system). Rank 0 writes
// <dir>/nanogpt-rendezvous-<run_id>.bin atomically (temporary file + rename) holding `blob`, the
// run id and the world size; every other rank polls until it appears, checks the world size, and
// answers with a file of its own (created with link(), so a second process with the same rank is
// refused); rank 0 waits for all the answers and then removes the files. Returns the blob on every
// rank (rank 0's `blob`; the others pass an empty one).
Blob file_rendezvous(const std::string& dir, const RendezvousSpec& spec, const Blob& blob);

struct TcpAddress {
  std::string host = "127.0.0.1";
  int port = 29500;
};

// MASTER_ADDR and MASTER_PORT (torchrun's names; defaults 127.0.0.1 and 29500), or "host:port" in
// `override_address` when it is not empty. Throws on a port that is not 1..65535.
TcpAddress tcp_address_from_env(const EnvLookup& env, const std::string& override_address = "");

// Through TCP: rank 0 listens on address.port (all interfaces); every other rank connects to
// address.host:port (retrying until rank 0 is up), sends its rank, world size and run id, and
// receives the blob once all world_size - 1 ranks have connected. Rank 0 refuses a duplicate rank,
// a rank outside the world or a different world size (and tells every connected rank why); a peer
// with another run id is turned away and does not count. Returns the blob on every rank.
Blob tcp_rendezvous(const TcpAddress& address, const RendezvousSpec& spec, const Blob& blob);

// How ranks that no MPI launcher connected meet (the train key `rendezvous`): "" -> TCP at
// MASTER_ADDR:MASTER_PORT (torchrun's variables; 127.0.0.1:29500 without them), "tcp:HOST:PORT",
// or "file:DIR" (a directory every rank sees). Throws nanogpt::Error naming the value, what was
// expected and an example on anything else.
struct RendezvousChoice {
  bool file = false;  // true: file_rendezvous(dir); false: tcp_rendezvous(tcp)
  std::string dir;
  TcpAddress tcp;
  std::string describe() const;  // "TCP 10.0.0.1:29500" / "file /shared/rdzv"
};
RendezvousChoice parse_rendezvous(const std::string& value, const EnvLookup& env);

// The blob of rank 0 on every rank, by `choice`.
Blob rendezvous(const RendezvousChoice& choice, const RendezvousSpec& spec, const Blob& blob);

}  // namespace nanogpt
