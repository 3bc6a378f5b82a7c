// copy_blocks' device API (impl/cuda/device_api.h) on device memory, not through the
// plugin: more views than one launch takes, the checked entry's refusals with the cpu's
// messages and nothing written, and the unchecked entry captured into a CUDA graph.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "impl/cpu/cpu_backend.h"
#include "reference/copy_blocks.h"
#include "tests/cuda/device_test_util.h"

namespace kvcheck {
namespace {

using cuda_test::ck;
using cuda_test::outcome;

template <class T>
using Dev = cuda_test::DeviceArray<T>;

/// 70 layers' K/V pages interleaved (140 views: three launches of the copy kernel),
/// 13-byte records (the byte path) and a 16-byte stride remainder.
struct Case {
  int64_t views_n = 140, bytes = 13, num_blocks = 9;
  int64_t stride = 140 * 13 + 5;
  int64_t size = (9 - 1) * stride + 140 * 13 + 3;
  std::vector<int64_t> views, mapping{0, 3, 0, 4, 8, 1, -1, 77, 2, 6};
  std::vector<uint8_t> host;
  Case() {
    for (int64_t v = 0; v < views_n; ++v) views.insert(views.end(), {v * bytes, bytes});
    host.resize(static_cast<size_t>(size));
    for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<uint8_t>(i * 131 + 7);
  }
  CopyBlocksArgs args(uint8_t* base, const int64_t* m) const {
    return {base, size, views, num_blocks, stride, {m, mapping.size()}};
  }
  /// What the reference leaves in the allocation.
  std::vector<uint8_t> expected() const {
    std::vector<uint8_t> want = host;
    ref::copy_blocks(args(want.data(), mapping.data()));
    return want;
  }
};

/// A case's allocation and mapping uploaded to the device.
struct OnDevice {
  Dev<uint8_t> base;
  Dev<int64_t> m;
  explicit OnDevice(const Case& c) : base(c.host.size()), m(c.mapping.size()) {
    ck(cudaMemcpy(base.p, c.host.data(), c.host.size(), cudaMemcpyHostToDevice));
    ck(cudaMemcpy(m.p, c.mapping.data(), c.mapping.size() * 8, cudaMemcpyHostToDevice));
  }
  std::vector<uint8_t> bytes(const Case& c) const {
    std::vector<uint8_t> out(c.host.size());
    ck(cudaMemcpy(out.data(), base.p, out.size(), cudaMemcpyDeviceToHost));
    return out;
  }
};

TEST(CopyBlocksDevice, ManyViewsMatchTheReference) {
  KVCHECK_NEED_GPU();
  const Case c;
  const OnDevice d(c);
  cuda::copy_blocks(c.args(d.base.p, d.m.p), {nullptr, true});
  ASSERT_NE(c.expected(), c.host) << "the case copies nothing";
  EXPECT_EQ(d.bytes(c), c.expected());
}

TEST(CopyBlocksDevice, CheckedRefusalsAreTheCpusAndWriteNothing) {
  KVCHECK_NEED_GPU();
  const cpu::CpuBackend cpu;
  for (const std::vector<int64_t>& bad : {std::vector<int64_t>{0, 3, 1, 3}, {0, 3, 3, 5}, {0, 9, 1, 2},
                                          {-2, 1}, {0, 1, 1, 1, 2, 4}}) {
    Case c;
    c.mapping = bad;
    std::vector<uint8_t> cpu_bytes = c.host;
    const std::string want = outcome([&] { cpu.copy_blocks(c.args(cpu_bytes.data(), c.mapping.data())); });
    ASSERT_FALSE(want.empty());
    const OnDevice d(c);
    Dev<cuda::DeviceStatus> status(1);
    Dev<uint8_t> workspace(cuda::copy_blocks_workspace_bytes(c.args(d.base.p, d.m.p)));
    const std::string got = outcome([&] {
      cuda::copy_blocks_checked(c.args(d.base.p, d.m.p), status.p, workspace.p, {nullptr, true}).throw_if_error(nullptr);
    });
    EXPECT_EQ(got, want);
    EXPECT_EQ(d.bytes(c), c.host) << "a refused copy wrote (" << got << ")";
  }
}

TEST(CopyBlocksDevice, UncheckedCopyIsCapturedIntoAGraph) {
  KVCHECK_NEED_GPU();
  const Case c;
  const OnDevice d(c);
  cudaStream_t s = nullptr;
  ck(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaGraph_t graph = nullptr;
  ck(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  cuda::copy_blocks(c.args(d.base.p, d.m.p), {s, true});
  ck(cudaStreamEndCapture(s, &graph));
  cudaGraphExec_t exec = nullptr;
  ck(cudaGraphInstantiate(&exec, graph, 0));
  ck(cudaGraphLaunch(exec, s));
  ck(cudaStreamSynchronize(s));
  EXPECT_EQ(d.bytes(c), c.expected());
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(s);
}

}  // namespace
}  // namespace kvcheck
