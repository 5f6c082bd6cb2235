// make_communicator: MPI under an MPI launcher, a world of one otherwise.
#include "distributed/communicator.h"

#include <cstdlib>

#include "distributed/mpi_communicator.h"
#include "distributed/single_process_communicator.h"

namespace nanogpt {

bool launched_by_mpi() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMIX_RANK") != nullptr;
}

std::unique_ptr<Communicator> make_communicator(double timeout_s) {
  if (launched_by_mpi()) return std::make_unique<MpiCommunicator>(timeout_s);
  return std::make_unique<SingleProcessCommunicator>();
}

}  // namespace nanogpt
