// CTest's GPU resources (docs/nightly.md, tools/ctest_gpus.sh): a test given a GPU by
// `ctest --resource-spec-file` (RESOURCE_GROUPS "gpus:1") runs on that GPU alone.
// CTest says which in CTEST_RESOURCE_GROUP_0_GPUS ("id:3,slots:1"); the test process
// turns it into CUDA_VISIBLE_DEVICES before anything initialises CUDA, so every
// process it starts (property rows run in children) sees the one device.
#pragma once

#include <cstdlib>
#include <cstring>
#include <string>

namespace kvcheck::test {

/// The device id of a CTest allocation "id:<id>,slots:<n>", or "" when malformed.
inline std::string ctest_gpu_id(const char* allocation) {
  if (allocation == nullptr || std::strncmp(allocation, "id:", 3) != 0) return "";
  const std::string s(allocation + 3);
  const std::string id = s.substr(0, s.find(','));
  return id.empty() || id.find_first_of(" ;") != std::string::npos ? "" : id;
}

/// Sets CUDA_VISIBLE_DEVICES from CTest's GPU allocation when there is one; returns
/// the device id ("" when CTest gave none: the environment is left as it is).
inline std::string pin_ctest_gpu() {
  const char* type = std::getenv("CTEST_RESOURCE_GROUP_0");
  if (type == nullptr || std::strcmp(type, "gpus") != 0) return "";
  const std::string id = ctest_gpu_id(std::getenv("CTEST_RESOURCE_GROUP_0_GPUS"));
  if (!id.empty()) setenv("CUDA_VISIBLE_DEVICES", id.c_str(), 1);
  return id;
}

}  // namespace kvcheck::test
