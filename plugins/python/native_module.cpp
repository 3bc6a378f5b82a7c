// kvcheck._native: Python -> kvcheck's scalar reference (docs/python.md,
// `kvcheck.reference`). An ordinary extension module (not linked against libpython):
// python/kvcheck/reference.py loads it from the build tree. Each function takes the
// same field dicts the Python bridge receives (plugins/python/python_plugin.cpp:
// include/kvcheck/backend_abi.h's field names, buffers as integer addresses) and
// returns (status, message): 0 and "" when the reference ran, else the refusal's ABI
// status and kvcheck's message (nothing written).
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdexcept>
#include <cstdint>
#include <span>
#include <string>

#include "impl/error.h"
#include "impl/plugin/abi_convert.h"
#include "include/kvcheck/backend_abi.h"
#include "reference/gather_kv.h"
#include "reference/store_kv.h"

namespace {

using namespace kvcheck;

// A missing or non-integer field is the caller's bug: a Python exception.
struct BadField : std::runtime_error {
  using std::runtime_error::runtime_error;
};

long long integer(PyObject* d, const char* key) {
  PyObject* v = PyDict_GetItemString(d, key);  // borrowed
  if (v == nullptr) throw BadField(std::string("missing field '") + key + "'");
  const long long x = PyLong_AsLongLong(v);
  if (x == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    throw BadField(std::string("field '") + key + "' is not an integer");
  }
  return x;
}

template <typename T>
T* pointer(PyObject* d, const char* key) {
  return reinterpret_cast<T*>(static_cast<uintptr_t>(integer(d, key)));
}

PyObject* dict(PyObject* d, const char* key) {
  PyObject* v = PyDict_GetItemString(d, key);
  if (v == nullptr || !PyDict_Check(v)) throw BadField(std::string("field '") + key + "' is not a dict");
  return v;
}

kvcheck_kv_cache kv_cache(PyObject* d) {
  kvcheck_kv_cache c{};
  c.k = pointer<uint8_t>(d, "k");
  c.k_capacity = integer(d, "k_capacity");
  c.v = pointer<uint8_t>(d, "v");
  c.v_capacity = integer(d, "v_capacity");
  c.dtype = static_cast<int32_t>(integer(d, "dtype"));
  c.block_size = static_cast<int32_t>(integer(d, "block_size"));
  c.num_kv_heads = static_cast<int32_t>(integer(d, "num_kv_heads"));
  c.head_dim = static_cast<int32_t>(integer(d, "head_dim"));
  c.num_blocks = integer(d, "num_blocks");
  c.stride_page = integer(d, "stride_page");
  c.stride_token = integer(d, "stride_token");
  c.stride_head = integer(d, "stride_head");
  c.scale_kind = static_cast<int32_t>(integer(d, "scale_kind"));
  c.num_scales = static_cast<int32_t>(integer(d, "num_scales"));
  c.k_scale = pointer<const float>(d, "k_scale");
  c.v_scale = pointer<const float>(d, "v_scale");
  c.num_v_scales = static_cast<int32_t>(integer(d, "num_v_scales"));
  c.recipe = static_cast<int32_t>(integer(d, "recipe"));
  return c;
}

kvcheck_kv_tokens kv_tokens(PyObject* d) {
  kvcheck_kv_tokens t{};
  t.data = pointer<uint8_t>(d, "data");
  t.dtype = static_cast<int32_t>(integer(d, "dtype"));
  t.rows = integer(d, "rows");
  t.token_stride = integer(d, "token_stride");
  t.head_stride = integer(d, "head_stride");
  return t;
}

// Runs f; (0, "") or (status, message); a bad field raises TypeError.
template <typename F>
PyObject* run(F&& f) {
  try {
    f();
    return Py_BuildValue("(is)", KVCHECK_STATUS_OK, "");
  } catch (const Error& e) {
    return Py_BuildValue("(is)", plugin::to_status(e.code()), e.what());
  } catch (const BadField& e) {
    PyErr_SetString(PyExc_TypeError, e.what());
    return nullptr;
  } catch (const std::exception& e) {
    return Py_BuildValue("(is)", KVCHECK_STATUS_INTERNAL, e.what());
  }
}

PyObject* store_kv(PyObject*, PyObject* f) {
  if (!PyDict_Check(f)) return PyErr_Format(PyExc_TypeError, "store_kv takes a dict of fields");
  return run([&] {
    kvcheck_store_kv_args a{};
    a.key = kv_tokens(dict(f, "key"));
    a.value = kv_tokens(dict(f, "value"));
    a.slot_mapping = pointer<const int32_t>(f, "slot_mapping");
    a.num_tokens = integer(f, "num_tokens");
    a.cache = kv_cache(dict(f, "cache"));
    ref::store_kv(KvTokensIn(plugin::from_abi(a.key)), KvTokensIn(plugin::from_abi(a.value)),
                  plugin::ints(a.slot_mapping, a.num_tokens), plugin::from_abi(a.cache));
  });
}

PyObject* gather_kv(PyObject*, PyObject* f) {
  if (!PyDict_Check(f)) return PyErr_Format(PyExc_TypeError, "gather_kv takes a dict of fields");
  return run([&] {
    kvcheck_gather_kv_args a{};
    a.cache = kv_cache(dict(f, "cache"));
    a.block_table = pointer<const int32_t>(f, "block_table");
    a.block_table_entries = integer(f, "block_table_entries");
    a.max_blocks = static_cast<int32_t>(integer(f, "max_blocks"));
    a.seq_starts_unit = static_cast<int32_t>(integer(f, "seq_starts_unit"));
    a.cu_seqlens_k = pointer<const int32_t>(f, "cu_seqlens_k");
    a.cu_seqlens_entries = integer(f, "cu_seqlens_entries");
    a.out_k = kv_tokens(dict(f, "out_k"));
    a.out_v = kv_tokens(dict(f, "out_v"));
    a.seq_starts = pointer<const int32_t>(f, "seq_starts");
    a.seq_starts_entries = integer(f, "seq_starts_entries");
    ref::gather_kv(plugin::from_abi(a));
  });
}

PyMethodDef methods[] = {
    {"store_kv", store_kv, METH_O, "reference store_kv (SPEC §7.4) on a dict of ABI fields -> (status, message)"},
    {"gather_kv", gather_kv, METH_O, "reference gather_kv (SPEC §7.5) on a dict of ABI fields -> (status, message)"},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "kvcheck._native", "kvcheck's scalar reference, for kvcheck.reference",
                      -1, methods, nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__native() { return PyModule_Create(&module); }
