// kvcheck_cuda_tests under `ctest --resource-spec-file`: pinned to the GPU CTest gave
// this test (tests/ctest_gpu.h) before main, so before any CUDA call.
#include "tests/ctest_gpu.h"

namespace {
const std::string kPinnedGpu = kvcheck::test::pin_ctest_gpu();
}  // namespace
