// swap_blocks' device API (impl/cuda/device_api.h) on real memory spaces, not through
// the plugin: device->device, a cudaHostRegister'ed host pool (not only cudaMallocHost)
// in both directions, more views than one launch takes, the checked entry's refusals
// with the cpu's messages and nothing written, pageable memory or a pool in the wrong
// space refused before anything is enqueued, and the unchecked entry in a CUDA graph.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <vector>

#include "impl/cpu/cpu_backend.h"
#include "reference/swap_blocks.h"
#include "tests/cuda/device_test_util.h"

namespace kvcheck {
namespace {

using cuda_test::ck;
using cuda_test::outcome;

template <class T>
using Dev = cuda_test::DeviceArray<T>;

/// Host bytes registered with CUDA (page-locked in place, as an engine pins its swap
/// space), unregistered on destruction.
struct Registered {
  std::vector<uint8_t> bytes;
  explicit Registered(std::vector<uint8_t> b) : bytes(std::move(b)) {
    ck(cudaHostRegister(bytes.data(), bytes.size(), cudaHostRegisterMapped));
  }
  ~Registered() { cudaHostUnregister(bytes.data()); }
};

/// 70 layers' K and V: page-first in src (interleaved, 13-byte records: the byte path;
/// a stride remainder), layer-first in dst (140 separate tensors): 140 views, three
/// launches of the copy kernel. A second shape of 16-byte multiples takes the vector path.
struct Case {
  int64_t views_n = 140, bytes = 13, src_blocks = 9, dst_blocks = 11;
  std::vector<int64_t> views, mapping{0, 3, 0, 4, 8, 1, -1, 77, 2, 10};
  BlockPool src, dst;
  std::vector<uint8_t> src_host, dst_host;
  explicit Case(int64_t record = 13) : bytes(record) {
    const int64_t src_stride = views_n * bytes + 5;
    src = {(src_blocks - 1) * src_stride + views_n * bytes + 3, src_blocks, src_stride, false};
    dst = {views_n * dst_blocks * bytes + 7, dst_blocks, bytes, false};
    for (int64_t v = 0; v < views_n; ++v) views.insert(views.end(), {v * bytes, v * dst_blocks * bytes, bytes});
    src_host.resize(static_cast<size_t>(src.size_bytes));
    dst_host.resize(static_cast<size_t>(dst.size_bytes));
    for (size_t i = 0; i < src_host.size(); ++i) src_host[i] = static_cast<uint8_t>(i * 131 + 7);
    for (size_t i = 0; i < dst_host.size(); ++i) dst_host[i] = static_cast<uint8_t>(i * 71 + 3);
  }
  SwapBlocksArgs args(const uint8_t* s, uint8_t* d, const int64_t* m, bool src_on_host = false,
                      bool dst_on_host = false) const {
    SwapBlocksArgs a;
    a.src = s;
    a.src_pool = src;
    a.src_pool.host = src_on_host;
    a.dst = d;
    a.dst_pool = dst;
    a.dst_pool.host = dst_on_host;
    a.views = views;
    a.block_mapping = {m, mapping.size()};
    return a;
  }
  /// What the reference leaves in dst.
  std::vector<uint8_t> expected() const {
    std::vector<uint8_t> want = dst_host;
    ref::swap_blocks(args(src_host.data(), want.data(), mapping.data()));
    return want;
  }
};

template <class T>
void upload(const Dev<T>& d, const std::vector<T>& h) {
  ck(cudaMemcpy(d.p, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
}
std::vector<uint8_t> download(const Dev<uint8_t>& d, size_t n) {
  std::vector<uint8_t> out(n);
  ck(cudaMemcpy(out.data(), d.p, n, cudaMemcpyDeviceToHost));
  return out;
}

TEST(SwapBlocksDevice, EveryDirectionMatchesTheReference) {
  KVCHECK_NEED_GPU();
  for (const int64_t record : {13, 64}) {
    const Case c(record);
    ASSERT_NE(c.expected(), c.dst_host) << "the case moves nothing";
    Dev<int64_t> m(c.mapping.size());
    upload(m, c.mapping);
    Dev<uint8_t> d_src(c.src_host.size()), d_dst(c.dst_host.size());
    upload(d_src, c.src_host);
    {  // device -> device
      upload(d_dst, c.dst_host);
      cuda::swap_blocks(c.args(d_src.p, d_dst.p, m.p), {nullptr, true});
      EXPECT_EQ(download(d_dst, c.dst_host.size()), c.expected()) << "device->device, record " << record;
    }
    {  // host -> device (reload): src registered host memory
      const Registered h_src(c.src_host);
      upload(d_dst, c.dst_host);
      cuda::swap_blocks(c.args(h_src.bytes.data(), d_dst.p, m.p, true, false), {nullptr, true});
      EXPECT_EQ(download(d_dst, c.dst_host.size()), c.expected()) << "host->device, record " << record;
      EXPECT_EQ(h_src.bytes, c.src_host) << "src changed";
    }
    {  // device -> host (offload): dst registered host memory
      Registered h_dst(c.dst_host);
      cuda::swap_blocks(c.args(d_src.p, h_dst.bytes.data(), m.p, false, true), {nullptr, true});
      ck(cudaDeviceSynchronize());
      EXPECT_EQ(h_dst.bytes, c.expected()) << "device->host, record " << record;
    }
  }
}

TEST(SwapBlocksDevice, CheckedRefusalsAreTheCpusAndWriteNothing) {
  KVCHECK_NEED_GPU();
  const cpu::CpuBackend cpu;
  for (const std::vector<int64_t>& bad :
       {std::vector<int64_t>{0, 3, 1, 3}, {0, 3, 9, 5}, {0, 11, 1, 2}, {-2, 1}, {0, 1, 1, 1, 2, 4}}) {
    Case c;
    c.mapping = bad;
    std::vector<uint8_t> cpu_dst = c.dst_host;
    const std::string want = outcome([&] { cpu.swap_blocks(c.args(c.src_host.data(), cpu_dst.data(), c.mapping.data())); });
    ASSERT_FALSE(want.empty());
    Dev<int64_t> m(c.mapping.size());
    upload(m, c.mapping);
    Dev<uint8_t> d_src(c.src_host.size());
    upload(d_src, c.src_host);
    Registered h_dst(c.dst_host);  // the refusal must not write host memory either
    Dev<cuda::DeviceStatus> status(1);
    const SwapBlocksArgs a = c.args(d_src.p, h_dst.bytes.data(), m.p, false, true);
    Dev<uint8_t> workspace(cuda::swap_blocks_workspace_bytes(a));
    const std::string got = outcome(
        [&] { cuda::swap_blocks_checked(a, status.p, workspace.p, {nullptr, true}).throw_if_error(nullptr); });
    EXPECT_EQ(got, want);
    EXPECT_EQ(h_dst.bytes, c.dst_host) << "a refused swap wrote (" << got << ")";
  }
}

TEST(SwapBlocksDevice, PoolsOutsideTheirFlaggedSpaceAreRefused) {
  KVCHECK_NEED_GPU();
  const Case c;
  Dev<int64_t> m(c.mapping.size());
  upload(m, c.mapping);
  Dev<uint8_t> d_src(c.src_host.size()), d_dst(c.dst_host.size());
  std::vector<uint8_t> pageable = c.dst_host;
  // Pageable host memory flagged host, or passed as device memory: a kernel touching
  // it would fault the context.
  EXPECT_NE(outcome([&] { cuda::swap_blocks(c.args(d_src.p, pageable.data(), m.p, false, true), {nullptr, true}); })
                .find("not page-locked host memory"),
            std::string::npos);
  EXPECT_NE(outcome([&] { cuda::swap_blocks(c.args(d_src.p, pageable.data(), m.p), {nullptr, true}); })
                .find("dst is not device memory"),
            std::string::npos);
  // Device memory flagged host.
  EXPECT_NE(outcome([&] { cuda::swap_blocks(c.args(d_src.p, d_dst.p, m.p, true, false), {nullptr, true}); })
                .find("src is flagged host"),
            std::string::npos);
  EXPECT_EQ(pageable, c.dst_host);
  ck(cudaDeviceSynchronize());  // nothing was enqueued, nothing faulted
}

TEST(SwapBlocksDevice, UncheckedSwapIsCapturedIntoAGraph) {
  KVCHECK_NEED_GPU();
  const Case c(64);
  Dev<int64_t> m(c.mapping.size());
  upload(m, c.mapping);
  Dev<uint8_t> d_src(c.src_host.size());
  upload(d_src, c.src_host);
  Registered h_dst(c.dst_host);
  cudaStream_t s = nullptr;
  ck(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaGraph_t graph = nullptr;
  ck(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  cuda::swap_blocks(c.args(d_src.p, h_dst.bytes.data(), m.p, false, true), {s, true});
  ck(cudaStreamEndCapture(s, &graph));
  cudaGraphExec_t exec = nullptr;
  ck(cudaGraphInstantiate(&exec, graph, 0));
  ck(cudaGraphLaunch(exec, s));
  ck(cudaStreamSynchronize(s));
  EXPECT_EQ(h_dst.bytes, c.expected());
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(s);
}

}  // namespace
}  // namespace kvcheck
