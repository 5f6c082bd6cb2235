// make_communicator: MPI under an MPI launcher, a world of one otherwise (a build without MPI,
// NANOGPT_MPI=OFF, refuses to run under a launcher rather than train N unrelated copies).
#include "distributed/communicator.h"

#include <cstdlib>

#include "core/check.h"
#include "distributed/single_process_communicator.h"
#if NANOGPT_WITH_MPI
#include "distributed/mpi_communicator.h"
#endif

namespace nanogpt {

bool launched_by_mpi() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMIX_RANK") != nullptr;
}

std::unique_ptr<Communicator> make_communicator(double timeout_s) {
#if NANOGPT_WITH_MPI
  if (launched_by_mpi()) return std::make_unique<MpiCommunicator>(timeout_s);
#else
  (void)timeout_s;
  CHECK(!launched_by_mpi(),
        "this nanogpt was built without MPI (cmake -DNANOGPT_MPI=OFF), but it was started by an "
        "MPI launcher (OMPI_COMM_WORLD_SIZE or PMIX_RANK is set): rebuild with -DNANOGPT_MPI=ON "
        "(needs libopenmpi-dev) for data-parallel training, or run it without mpirun");
#endif
  return std::make_unique<SingleProcessCommunicator>();
}

}  // namespace nanogpt
