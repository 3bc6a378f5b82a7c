/* A device plugin's probe (backend_abi.h `probe`), ready made: kvcheck_probe_cuda_device
 * says whether the CUDA runtime finds a usable device and, when not, why in words a
 * user can act on. Header only (C99 or C++), needs the CUDA runtime headers and cudart;
 * the one place kvcheck's own cuda backend, its test plugins and examples/plugin word
 * the reason.
 *
 * "CUDA driver version is insufficient for CUDA runtime version" is what cudart says
 * both when the driver is too old and when there is NO driver at all (a build machine
 * with nvcc but no GPU); the probe tells them apart by trying to load libcuda.so.1. */
#ifndef KVCHECK_CUDA_PROBE_H
#define KVCHECK_CUDA_PROBE_H

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdio.h>

#include "backend_abi.h"

/* KVCHECK_STATUS_OK when cudaGetDeviceCount finds at least one device; else
 * KVCHECK_STATUS_UNSUPPORTED with "no usable CUDA device: <reason>" in msg, the reason
 * one of "no CUDA driver on this machine (libcuda.so.1 does not load)", "the CUDA
 * driver supports CUDA <x.y>, this runtime needs <x.y>", "no CUDA device" or
 * cudaGetErrorString's text. Initialises CUDA: call it only where the harness allows
 * (the probe runs in a child process). */
static inline int kvcheck_probe_cuda_device(char* msg, size_t msg_size) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e == cudaSuccess && n > 0) return KVCHECK_STATUS_OK;
  if (e == cudaErrorInsufficientDriver) {
    void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (driver == NULL) {
      snprintf(msg, msg_size, "no usable CUDA device: no CUDA driver on this machine (libcuda.so.1 does not load)");
    } else {
      int have = 0, need = 0;
      dlclose(driver);
      cudaDriverGetVersion(&have);
      cudaRuntimeGetVersion(&need);
      snprintf(msg, msg_size, "no usable CUDA device: the CUDA driver supports CUDA %d.%d, this runtime needs %d.%d",
               have / 1000, have % 1000 / 10, need / 1000, need % 1000 / 10);
    }
  } else if (e == cudaSuccess || e == cudaErrorNoDevice) {
    snprintf(msg, msg_size, "no usable CUDA device: no CUDA device");
  } else {
    snprintf(msg, msg_size, "no usable CUDA device: %s", cudaGetErrorString(e));
  }
  return KVCHECK_STATUS_UNSUPPORTED;
}

#endif /* KVCHECK_CUDA_PROBE_H */
