// tests/ctest_gpus_test.sh's stand-in for a CUDA test: pins itself like the CUDA test
// programs (tests/ctest_gpu.h), then writes "<CUDA_VISIBLE_DEVICES> <start_ns> <end_ns>"
// to the file argv[1], holding its GPU for argv[2] milliseconds.
#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "tests/ctest_gpu.h"

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  const std::string id = kvcheck::test::pin_ctest_gpu();
  const auto now = [] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
  const auto start = now();
  std::this_thread::sleep_for(std::chrono::milliseconds(std::stoi(argv[2])));
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  std::ofstream(argv[1]) << (visible ? visible : "-") << " " << start << " " << now() << "\n";
  return id.empty() ? 3 : 0;
}
