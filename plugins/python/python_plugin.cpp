// libkvcheck_python.so: a Python object as a backend (docs/python.md). The
// harness loads this library like any plugin; its entry starts an embedded
// interpreter, imports the backend named by $KVCHECK_PYTHON_BACKEND
// ("path/to/file.py:attr" or "package.module:attr"; `kvcheck run --plugin
// python:SPEC` sets it) and fills the table from the object's functions. Every entry:
//   1. runs kvcheck's own validator of the operation (impl/validate_*.h: SPEC order, codes and messages), so a kernel
//      that assumes valid metadata — as engine kernels do — is handed only valid
//      calls and refusals carry the reference's code;
//   2. hands the ABI struct's fields (addresses as integers) to kvcheck._bridge,
//      which wraps the buffers as numpy views (a host backend) or torch CUDA tensors
//      (device="cuda": zero-copy through __cuda_array_interface__, the function run
//      on the harness's stream) with exactly the harness's strides, offsets and bases,
//      calls the Python function and turns its outcome into a status
//      (kvcheck.Refusal -> its code; any other exception -> INTERNAL with the
//      traceback, also printed to stderr in full).
// A device backend's metadata (slot_mapping, block_table, ..., scales) is device
// memory: the validator reads host copies of it (copied on the harness's stream).
// The interpreter is the one $KVCHECK_PYTHON names (a venv's python: its
// site-packages), else the one this library was built against; $KVCHECK_PYTHONPATH
// (os.pathsep-separated) is put in front of sys.path. The GIL stays with the thread
// that loaded the library: the harness calls plugins on that thread.
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "impl/plugin/abi_convert.h"
#include "impl/validate_kv.h"
#include "impl/validate_store_load.h"
#include "impl/validate_swap_blocks.h"
#include "include/kvcheck/backend_abi.h"
#include "plugins/guard.h"
#ifdef KVCHECK_PYTHON_CUDA
#include "include/kvcheck/cuda_probe.h"
#endif

#ifndef KVCHECK_PYTHON_SOURCE_DIR
#error "KVCHECK_PYTHON_SOURCE_DIR (the python/ folder holding the kvcheck package) must be defined"
#endif
#ifndef KVCHECK_PYTHON_LIBRARY
#error "KVCHECK_PYTHON_LIBRARY (the libpython this library links) must be defined"
#endif

namespace {

using namespace kvcheck;
using plugin::ints;

struct State {
  PyObject* bridge = nullptr;   // the kvcheck._bridge module
  PyObject* backend = nullptr;  // the user's kvcheck.Backend
  std::string name;
  bool device = false;  // memory_space CUDA_DEVICE
  kvcheck_backend_v1_t table{};
  kvcheck_contract contract{};  // the Backend's recipe and head_dims
};
State g;

// Host copies of a device backend's metadata arrays, for the validator; a host
// backend's pointers as they are. Copies live as long as this object.
class HostMetadata {
 public:
  explicit HostMetadata(void* stream) : stream_(stream) {}
  template <typename T>
  const T* operator()(const T* p, int64_t n) {
    if (!g.device || p == nullptr || n <= 0) return p;
#ifdef KVCHECK_PYTHON_CUDA
    copies_.emplace_back(static_cast<size_t>(n) * sizeof(T));
    const auto s = static_cast<cudaStream_t>(stream_);
    cudaError_t e = cudaMemcpyAsync(copies_.back().data(), p, copies_.back().size(), cudaMemcpyDeviceToHost, s);
    if (e == cudaSuccess) e = cudaStreamSynchronize(s);
    if (e != cudaSuccess)
      throw std::runtime_error(std::string("copying metadata to the host for validation: ") + cudaGetErrorString(e));
    return reinterpret_cast<const T*>(copies_.back().data());
#else
    throw std::runtime_error("a device backend in a bridge built without CUDA");
#endif
  }

 private:
  void* stream_;
  std::vector<std::vector<uint8_t>> copies_;
};

// The pending Python exception as text (type, message and traceback); clears it.
std::string take_python_error() {
  PyObject *type = nullptr, *value = nullptr, *tb = nullptr;
  PyErr_Fetch(&type, &value, &tb);
  if (type == nullptr) return "(no Python exception set)";
  PyErr_NormalizeException(&type, &value, &tb);
  std::string text = "Python error";
  if (PyObject* mod = PyImport_ImportModule("traceback")) {
    if (PyObject* lines = PyObject_CallMethod(mod, "format_exception", "OOO", type, value ? value : Py_None,
                                              tb ? tb : Py_None)) {
      PyObject* empty = PyUnicode_FromString("");
      if (PyObject* joined = PyUnicode_Join(empty, lines)) {
        if (const char* s = PyUnicode_AsUTF8(joined)) text = s;
        Py_DECREF(joined);
      }
      Py_XDECREF(empty);
      Py_DECREF(lines);
    }
    Py_DECREF(mod);
  }
  PyErr_Clear();
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(tb);
  return text;
}

int refuse(char* msg, size_t size, int status, const std::string& text) {
  plugin::write_message(text, msg, size);
  return status;
}

// kvcheck._bridge.call(backend, op, fields): (status, message).
int call_bridge(const char* op, PyObject* fields, void* stream, char* msg, size_t size) {
  if (fields == nullptr) return refuse(msg, size, KVCHECK_STATUS_INTERNAL, "kvcheck python plugin: " + take_python_error());
  PyObject* r = PyObject_CallMethod(g.bridge, "call", "OsON", g.backend, op, fields, PyLong_FromVoidPtr(stream));
  Py_DECREF(fields);
  if (r == nullptr) return refuse(msg, size, KVCHECK_STATUS_INTERNAL, "kvcheck._bridge.call failed: " + take_python_error());
  int status = KVCHECK_STATUS_INTERNAL;
  const char* text = nullptr;
  if (!PyArg_ParseTuple(r, "is", &status, &text)) {
    Py_DECREF(r);
    return refuse(msg, size, KVCHECK_STATUS_INTERNAL, "kvcheck._bridge.call returned no (status, message): " +
                                                          take_python_error());
  }
  if (status != KVCHECK_STATUS_OK) plugin::write_message(text, msg, size);
  Py_DECREF(r);
  return status;
}

PyObject* addr(const void* p) { return PyLong_FromVoidPtr(const_cast<void*>(p)); }

// The ABI structs' fields, by their ABI names (include/kvcheck/backend_abi.h).
PyObject* kv_cache_fields(const kvcheck_kv_cache& c) {
  return Py_BuildValue("{s:N,s:L,s:N,s:L,s:i,s:i,s:i,s:i,s:L,s:L,s:L,s:L,s:i,s:i,s:N,s:N,s:i}", "k", addr(c.k),
                       "k_capacity", (long long)c.k_capacity, "v", addr(c.v), "v_capacity", (long long)c.v_capacity,
                       "dtype", c.dtype, "block_size", c.block_size, "num_kv_heads", c.num_kv_heads, "head_dim",
                       c.head_dim, "num_blocks", (long long)c.num_blocks, "stride_page", (long long)c.stride_page,
                       "stride_token", (long long)c.stride_token, "stride_head", (long long)c.stride_head,
                       "scale_kind", c.scale_kind, "num_scales", c.num_scales, "k_scale", addr(c.k_scale), "v_scale",
                       addr(c.v_scale), "num_v_scales", c.num_v_scales);
}

// An e2m1 cache's scale caches (docs/spec.md §7.9); read only for dtype e2m1 (the table
// declares KVCHECK_OP_KV_NVFP4 only when the backend names e2m1).
PyObject* block_scales_fields(const kvcheck_kv_block_scales& b) {
  return Py_BuildValue("{s:N,s:L,s:N,s:L,s:L,s:L,s:L,s:i}", "k_sf", addr(b.k_sf), "k_sf_capacity",
                       (long long)b.k_sf_capacity, "v_sf", addr(b.v_sf), "v_sf_capacity", (long long)b.v_sf_capacity,
                       "sf_stride_page", (long long)b.sf_stride_page, "sf_stride_token", (long long)b.sf_stride_token,
                       "sf_stride_head", (long long)b.sf_stride_head, "sf_layout", b.sf_layout);
}

PyObject* kv_tokens_fields(const kvcheck_kv_tokens& t) {
  return Py_BuildValue("{s:N,s:i,s:L,s:L,s:L}", "data", addr(t.data), "dtype", t.dtype, "rows", (long long)t.rows,
                       "token_stride", (long long)t.token_stride, "head_stride", (long long)t.head_stride);
}

PyObject* paged_cache_fields(const kvcheck_paged_cache& c) {
  return Py_BuildValue(
      "{s:N,s:L,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:L,s:L,s:L,s:i,s:L,s:L,s:L,s:L}", "base", addr(c.base), "size_bytes",
      (long long)c.size_bytes, "format", c.format, "elements", c.elements, "quantized_dtype", c.quantized_dtype,
      "sf_format", c.sf_format, "elements_per_sf", c.elements_per_sf, "do_cast", c.do_cast, "token_interleaved",
      c.token_interleaved, "bf16_tail_elements", c.bf16_tail_elements, "record_flags", c.record_flags, "quantized_bytes", (long long)c.quantized_bytes, "sf_bytes", (long long)c.sf_bytes,
      "num_blocks", (long long)c.num_blocks, "block_size", c.block_size, "block_stride", (long long)c.block_stride,
      "data_token_stride", (long long)c.data_token_stride, "scale_region", (long long)c.scale_region,
      "scale_token_stride", (long long)c.scale_token_stride);
}

// kvcheck's validator of an op, as a status (OK when it accepts).
template <typename F>
int validated(char* msg, size_t size, F&& check) {
  return plugin::guarded(msg, size, check);
}

// The cache with host copies of its scales.
kvcheck_kv_cache host_scales(kvcheck_kv_cache c, HostMetadata& host) {
  c.k_scale = host(c.k_scale, c.num_scales);
  c.v_scale = host(c.v_scale, c.num_v_scales);
  return c;
}

// The view kvcheck's validators read: the cache with host scales, and its scale caches.
KvCacheView validated_view(const kvcheck_kv_cache& c, const kvcheck_kv_block_scales& b, HostMetadata& host) {
  KvCacheView v = plugin::from_abi(host_scales(c, host));
  plugin::block_scales_from_abi(b, v);
  return v;
}

// A fused RoPE (docs/spec.md §8.4) as the bridge's dict (has_rope 0: only that is read).
PyObject* rope_fields(int32_t has_rope, const kvcheck_rope& r) {
  return Py_BuildValue("{s:i,s:i,s:i,s:i,s:N,s:L,s:N,s:L}", "has_rope", has_rope, "is_neox", r.is_neox, "rot_dim",
                       r.rot_dim, "rope_offset", r.rope_offset, "cos_sin_cache", addr(r.cos_sin_cache),
                       "max_position", (long long)r.max_position, "positions", addr(r.positions), "positions_rows",
                       (long long)r.positions_rows);
}

int store_kv(void*, const kvcheck_store_kv_args* a, void* stream, char* msg, size_t size) {
  if (int s = validated(msg, size, [&] {
        HostMetadata host(stream);
        // has_rope is read only when this table declares KVCHECK_OP_STORE_KV_ROPE (rope=True).
        RopeArgs rope = plugin::from_abi(a->rope);
        if (a->has_rope) rope.positions = host(rope.positions, std::min(a->num_tokens, rope.positions_rows));
        validate_store_kv(KvTokensIn(plugin::from_abi(a->key)), KvTokensIn(plugin::from_abi(a->value)),
                          ints(host(a->slot_mapping, a->num_tokens), a->num_tokens),
                          validated_view(a->cache, a->block_scales, host), a->has_rope ? &rope : nullptr);
      }))
    return s;
  return call_bridge("store_kv",
                     Py_BuildValue("{s:N,s:N,s:N,s:L,s:N,s:N,s:N}", "key", kv_tokens_fields(a->key), "value",
                                   kv_tokens_fields(a->value), "slot_mapping", addr(a->slot_mapping), "num_tokens",
                                   (long long)a->num_tokens, "cache", kv_cache_fields(a->cache), "rope",
                                   rope_fields(a->has_rope, a->rope), "block_scales",
                                   block_scales_fields(a->block_scales)),
                     stream, msg, size);
}

int gather_kv(void*, const kvcheck_gather_kv_args* a, void* stream, char* msg, size_t size) {
  if (int s = validated(msg, size, [&] {
        HostMetadata host(stream);
        kvcheck_gather_kv_args h = *a;
        h.cache = host_scales(a->cache, host);
        h.block_table = host(a->block_table, a->block_table_entries);
        h.cu_seqlens_k = host(a->cu_seqlens_k, a->cu_seqlens_entries);
        if (a->seq_starts_unit != 0) h.seq_starts = host(a->seq_starts, a->seq_starts_entries);
        GatherKvArgs g = plugin::from_abi(h);  // (block_scales_from_abi: the scale caches too)
        validate_gather_kv(g);
      }))
    return s;
  const bool starts = a->seq_starts_unit != 0;
  return call_bridge(
      "gather_kv",
      Py_BuildValue("{s:N,s:N,s:L,s:i,s:i,s:N,s:L,s:N,s:N,s:N,s:L,s:N}", "cache", kv_cache_fields(a->cache), "block_table",
                    addr(a->block_table), "block_table_entries", (long long)a->block_table_entries, "max_blocks",
                    a->max_blocks, "seq_starts_unit", a->seq_starts_unit, "cu_seqlens_k", addr(a->cu_seqlens_k),
                    "cu_seqlens_entries", (long long)a->cu_seqlens_entries, "out_k", kv_tokens_fields(a->out_k),
                    "out_v", kv_tokens_fields(a->out_v), "seq_starts", addr(starts ? a->seq_starts : nullptr),
                    "seq_starts_entries", (long long)(starts ? a->seq_starts_entries : 0), "block_scales",
                    block_scales_fields(a->block_scales)),
      stream, msg, size);
}

int store_kv_cache(void*, const kvcheck_store_args* a, void* stream, char* msg, size_t size) {
  if (int s = validated(msg, size, [&] {
        HostMetadata host(stream);
        validate_store({a->kv, a->kv_rows, a->kv_row_stride}, ints(host(a->slot_mapping, a->num_tokens), a->num_tokens),
                       {a->cache.base, plugin::from_abi(a->cache), a->cache.size_bytes});
      }))
    return s;
  return call_bridge("store_kv_cache",
                     Py_BuildValue("{s:N,s:L,s:L,s:N,s:L,s:N}", "kv", addr(a->kv), "kv_rows", (long long)a->kv_rows,
                                   "kv_row_stride", (long long)a->kv_row_stride, "slot_mapping", addr(a->slot_mapping),
                                   "num_tokens", (long long)a->num_tokens, "cache", paged_cache_fields(a->cache)),
                     stream, msg, size);
}

int concat_and_cache_mla(void*, const kvcheck_concat_and_cache_mla_args* a, void* stream, char* msg, size_t size) {
  if (int s = validated(msg, size, [&] {
        HostMetadata host(stream);
        kvcheck_concat_and_cache_mla_args h = *a;
        h.slot_mapping = host(a->slot_mapping, a->num_tokens);
        if (h.has_rope) h.rope.positions = host(a->rope.positions, std::min(a->num_tokens, a->rope.positions_rows));
        validate_concat_mla(plugin::from_abi(h));
      }))
    return s;
  // has_pe_cache / has_rope are read: this table declares KVCHECK_OP_CONCAT_MLA_PE_CACHE /
  // KVCHECK_OP_CONCAT_MLA_ROPE exactly when the Python backend says split_caches=True /
  // rope=True, and only then is either ever 1.
  PyObject* rope = rope_fields(a->has_rope, a->rope);
  return call_bridge("concat_and_cache_mla",
                     Py_BuildValue("{s:N,s:L,s:L,s:N,s:L,s:L,s:i,s:i,s:N,s:L,s:N,s:i,s:N,s:N}", "kv_c", addr(a->kv_c),
                                   "kv_c_rows", (long long)a->kv_c_rows, "kv_c_row_stride",
                                   (long long)a->kv_c_row_stride, "k_pe", addr(a->k_pe), "k_pe_rows",
                                   (long long)a->k_pe_rows, "k_pe_row_stride", (long long)a->k_pe_row_stride,
                                   "kv_lora_rank", a->kv_lora_rank, "rope_dim", a->rope_dim, "slot_mapping",
                                   addr(a->slot_mapping), "num_tokens", (long long)a->num_tokens, "cache",
                                   paged_cache_fields(a->cache), "has_pe_cache", a->has_pe_cache, "pe_cache",
                                   paged_cache_fields(a->pe_cache), "rope", rope),
                     stream, msg, size);
}

int swap_blocks(void*, const kvcheck_swap_blocks_args* a, void* stream, char* msg, size_t size) {
  if (int s = validated(msg, size, [&] {
        HostMetadata host(stream);
        kvcheck_swap_blocks_args h = *a;
        h.block_mapping = host(a->block_mapping, a->block_mapping_entries);
        validate_swap_blocks(plugin::from_abi(h));
      }))
    return s;
  const auto pool = [](const void* base, int64_t size_bytes, int64_t num_blocks, int64_t block_stride, int32_t host) {
    return Py_BuildValue("{s:N,s:L,s:L,s:L,s:i}", "base", addr(base), "size_bytes", (long long)size_bytes, "num_blocks",
                         (long long)num_blocks, "block_stride", (long long)block_stride, "host", host);
  };
  return call_bridge(
      "swap_blocks",
      Py_BuildValue("{s:N,s:N,s:N,s:L,s:N,s:L}", "src",
                    pool(a->src, a->src_size_bytes, a->src_num_blocks, a->src_block_stride, a->src_host), "dst",
                    pool(a->dst, a->dst_size_bytes, a->dst_num_blocks, a->dst_block_stride, a->dst_host), "views",
                    addr(a->views), "views_entries", (long long)a->views_entries, "block_mapping",
                    addr(a->block_mapping), "block_mapping_entries", (long long)a->block_mapping_entries),
      stream, msg, size);
}

int load_paged_kv_cache(void*, const kvcheck_load_args* a, void* stream, char* msg, size_t size) {
  if (int s = validated(msg, size, [&] {
        HostMetadata host(stream);
        validate_load({a->cache.base, plugin::from_abi(a->cache), a->cache.size_bytes},
                      ints(host(a->load_segments, a->num_segment_ints), a->num_segment_ints), a->total_k,
                      {a->out_data, a->out_data_stride, a->out_scales, a->out_scale_stride, a->out_rows});
      }))
    return s;
  return call_bridge(
      "load_paged_kv_cache",
      Py_BuildValue("{s:N,s:N,s:L,s:i,s:N,s:L,s:N,s:L,s:L}", "cache", paged_cache_fields(a->cache), "load_segments",
                    addr(a->load_segments), "num_segment_ints", (long long)a->num_segment_ints, "total_k", a->total_k,
                    "out_data", addr(a->out_data), "out_data_stride", (long long)a->out_data_stride, "out_scales",
                    addr(a->out_scales), "out_scale_stride", (long long)a->out_scale_stride, "out_rows",
                    (long long)a->out_rows),
      stream, msg, size);
}

// Starts the interpreter (once) as $KVCHECK_PYTHON would run, with $KVCHECK_PYTHONPATH
// and the kvcheck package's folder in front of sys.path. "" or why not.
std::string start_python() {
  if (Py_IsInitialized()) return "";
  // Extension modules (numpy's) resolve the C API from the global namespace; the
  // harness dlopens plugins RTLD_LOCAL, so promote libpython to global first.
  if (dlopen(KVCHECK_PYTHON_LIBRARY, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD) == nullptr)
    return std::string("cannot make ") + KVCHECK_PYTHON_LIBRARY + "'s symbols global: " + dlerror();
  // numpy's BLAS threads would survive in no child the harness forks: one thread.
  setenv("OPENBLAS_NUM_THREADS", "1", 0);
  PyConfig config;
  PyConfig_InitPythonConfig(&config);
  config.install_signal_handlers = 0;  // the harness owns SIGINT/SIGALRM
  config.parse_argv = 0;
  PyStatus st = PyStatus_Ok();
  if (const char* exe = std::getenv("KVCHECK_PYTHON"); exe && *exe)
    st = PyConfig_SetBytesString(&config, &config.executable, exe);
  if (!PyStatus_Exception(st)) st = Py_InitializeFromConfig(&config);
  PyConfig_Clear(&config);
  if (PyStatus_Exception(st))
    return std::string("cannot start Python") + (st.err_msg ? std::string(": ") + st.err_msg : std::string());
  PyObject* sys_path = PySys_GetObject("path");  // borrowed
  std::string front = KVCHECK_PYTHON_SOURCE_DIR;
  if (const char* extra = std::getenv("KVCHECK_PYTHONPATH"); extra && *extra) front = std::string(extra) + ":" + front;
  for (size_t begin = 0; begin <= front.size();) {
    size_t end = front.find(':', begin);
    if (end == std::string::npos) end = front.size();
    if (end > begin) {
      PyObject* item = PyUnicode_FromStringAndSize(front.data() + begin, static_cast<Py_ssize_t>(end - begin));
      if (item) PyList_Insert(sys_path, 0, item);
      Py_XDECREF(item);
    }
    begin = end + 1;
  }
  return "";
}

// Which interpreter ran, and how to name another: said after an import that failed
// (the README's venv has numpy; the interpreter kvcheck was built against may not).
std::string interpreter_hint() {
  const char* exe = std::getenv("KVCHECK_PYTHON");
  return exe && *exe ? std::string("\n(the interpreter: KVCHECK_PYTHON=") + exe +
                           "; it needs numpy and the kvcheck package: docs/python.md)"
                     : std::string("\n(the interpreter: the one kvcheck was built against, ") + KVCHECK_PYTHON_LIBRARY +
                           "; to use a venv's, which has numpy and the kvcheck package: "
                           "KVCHECK_PYTHON=$PWD/.venv/bin/python ./kvcheck run --plugin python:...; docs/python.md)";
}

// The table from the backend's functions; "" or why not.
std::string make_table(const char* spec) {
  // A backend file that is not there is the first thing to say: importing the bridge
  // first would report a missing numpy for a mistyped path.
  const std::string s = spec, where = s.substr(0, s.rfind(':') == std::string::npos ? 0 : s.rfind(':'));
  struct stat file_stat {};
  if ((where.ends_with(".py") || where.find('/') != std::string::npos) &&
      (stat(where.c_str(), &file_stat) != 0 || !S_ISREG(file_stat.st_mode)))
    return "cannot load the Python backend " + s + ": no such file: " + where;
  g.bridge = PyImport_ImportModule("kvcheck._bridge");
  if (g.bridge == nullptr) return "cannot import kvcheck._bridge: " + take_python_error() + interpreter_hint();
  PyObject* info = PyObject_CallMethod(g.bridge, "load", "s", spec);
  if (info == nullptr) {
    const std::string why = take_python_error();
    return "cannot load the Python backend " + std::string(spec) + ":\n" + why +
           (why.find("ModuleNotFoundError") != std::string::npos ? interpreter_hint() : std::string());
  }
  // (backend, name, memory_space, ops, formats, kv_dtypes, block_size_multiple, max_block_size,
  //  recipe bits, head_dims, min/max heads x head_dim, kv_alignment, kv_dtype_pairs): the
  //  last six become the table's contract.
  PyObject* backend = nullptr;
  PyObject* head_dims = nullptr;
  const char* name = nullptr;
  unsigned int ops = 0, formats = 0, kv_dtypes = 0, recipes = 0, pairs = 0;
  int memory_space = KVCHECK_MEMORY_HOST, multiple = 0, max_bs = 0, min_row = 0, max_row = 0, alignment = 0;
  if (!PyArg_ParseTuple(info, "OsiIIIiiIOiiiI", &backend, &name, &memory_space, &ops, &formats, &kv_dtypes, &multiple,
                        &max_bs, &recipes, &head_dims, &min_row, &max_row, &alignment, &pairs)) {
    Py_DECREF(info);
    return "kvcheck._bridge.load returned no table description: " + take_python_error();
  }
  // The contract, read while `info` (which owns head_dims) lives.
  g.contract = {sizeof(kvcheck_contract), recipes, 0, {}, min_row, max_row, alignment, pairs};
  const Py_ssize_t n = PySequence_Size(head_dims);
  for (Py_ssize_t i = 0; i < n && i < KVCHECK_MAX_DECLARED_HEAD_DIMS; ++i) {
    PyObject* d = PySequence_GetItem(head_dims, i);
    g.contract.head_dims[g.contract.num_head_dims++] = static_cast<int32_t>(PyLong_AsLong(d));
    Py_XDECREF(d);
  }
  Py_INCREF(backend);
  g.backend = backend;
  g.name = name;
  g.device = memory_space == KVCHECK_MEMORY_CUDA_DEVICE;
  Py_DECREF(info);
#ifndef KVCHECK_PYTHON_CUDA
  if (g.device) return "backend '" + g.name + "' is device=\"cuda\", but this bridge was built without CUDA";
#endif
  kvcheck_backend_v1_t& t = g.table;
  t.abi_version = KVCHECK_ABI_VERSION;
  t.struct_size = sizeof t;
  t.name = g.name.c_str();
  t.memory_space = g.device ? KVCHECK_MEMORY_CUDA_DEVICE : KVCHECK_MEMORY_HOST;
#ifdef KVCHECK_PYTHON_CUDA
  if (g.device) t.probe = [](void*, char* msg, size_t size) { return kvcheck_probe_cuda_device(msg, size); };
#endif
  t.capabilities = {ops, formats, kv_dtypes, multiple, max_bs};
  t.contract = &g.contract;
  if (ops & KVCHECK_OP_STORE_KV) t.store_kv = store_kv;
  if (ops & KVCHECK_OP_GATHER_KV) t.gather_kv = gather_kv;
  if (ops & KVCHECK_OP_STORE_KV_CACHE) t.store_kv_cache = store_kv_cache;
  if (ops & KVCHECK_OP_LOAD_PAGED_KV_CACHE) t.load_paged_kv_cache = load_paged_kv_cache;
  if (ops & KVCHECK_OP_CONCAT_AND_CACHE_MLA) t.concat_and_cache_mla = concat_and_cache_mla;
  if (ops & KVCHECK_OP_SWAP_BLOCKS) t.swap_blocks = swap_blocks;
  return "";
}

}  // namespace

extern "C" KVCHECK_PLUGIN_EXPORT int kvcheck_backend_v1(uint32_t, const kvcheck_backend_v1_t** out, char* msg,
                                                        size_t size) {
  if (g.backend != nullptr) {
    *out = &g.table;
    return KVCHECK_STATUS_OK;
  }
  const char* spec = std::getenv("KVCHECK_PYTHON_BACKEND");
  if (spec == nullptr || *spec == '\0')
    return refuse(msg, size, KVCHECK_STATUS_UNSUPPORTED,
                  "no Python backend named: set KVCHECK_PYTHON_BACKEND=path/to/file.py:attr (or package.module:attr), "
                  "or pass --plugin python:SPEC");
  std::string why = start_python();
  if (why.empty()) why = make_table(spec);
  if (!why.empty()) {
    // The harness prints msg; a traceback longer than its buffer is printed whole here.
    if (why.size() >= size) std::fprintf(stderr, "kvcheck python plugin: %s\n", why.c_str());
    return refuse(msg, size, KVCHECK_STATUS_INTERNAL, why);
  }
  *out = &g.table;
  return KVCHECK_STATUS_OK;
}
