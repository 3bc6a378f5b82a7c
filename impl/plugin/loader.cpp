#include "impl/plugin/loader.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <regex>

#include "impl/capabilities.h"
#include "impl/error.h"
#include "impl/format.h"
#include "impl/kv_format.h"
#include "impl/plugin/plugin_backend.h"
#include "impl/plugin/watchdog.h"

#ifndef KVCHECK_PLUGIN_BUILD_DIR
#define KVCHECK_PLUGIN_BUILD_DIR ""
#endif

namespace kvcheck::plugin {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what,
                       ErrorCode code = ErrorCode::kInvalidArgument) {
  throw Error(code, "plugin " + path + ": " + what);
}

// What a forked child did (run_in_child): its report (the byte 'R', then text) if it
// wrote one, whether it ran past the limit (then it was killed), how it ended.
struct ChildEnd {
  bool reported = false;
  std::string text;  // after the 'R'
  bool timed_out = false;
  bool interrupted = false;  // the stop check said stop: killed before it ended
  int status = 0;             // waitpid's, when known
  bool status_known = false;  // false: reaped elsewhere (SIGCHLD ignored)
};

// "exited with status 0", "was killed by signal 11 (Segmentation fault)".
std::string how_it_ended(const ChildEnd& e) {
  if (!e.status_known) return "ended (its exit status is unknown: SIGCHLD is ignored)";
  if (WIFEXITED(e.status)) return "exited with status " + std::to_string(WEXITSTATUS(e.status));
  if (WIFSIGNALED(e.status))
    return "was killed by signal " + std::to_string(WTERMSIG(e.status)) + " (" + strsignal(WTERMSIG(e.status)) + ")";
  return "ended";
}

std::string seconds_text(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", s);
  return b;
}

// Runs body() in a forked child, which reports through a pipe once body returned: 'R'
// and body's text; the child then _exit(0)s. A child that ends without that report (exit()
// or _exit() inside body, any status, or a signal) is reported = false. After
// `limit` seconds (0 = none) the child is killed and timed_out set. Only the child's
// own end counts: a grandchild holding the pipe open does not keep the parent waiting.
bool (*g_stop_requested)() = nullptr;

template <class Body>
ChildEnd run_in_child(Body body, double limit, std::string& error) {
  ChildEnd end;
  int fds[2];
  if (pipe(fds) != 0) {
    error = std::string("cannot create a pipe: ") + std::strerror(errno);
    return end;
  }
  std::fflush(nullptr);  // an exit() in the child flushes what it inherited
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    error = std::string("cannot fork: ") + std::strerror(errno);
    close(fds[0]);
    close(fds[1]);
    return end;
  }
  if (pid == 0) {
    close(fds[0]);
    // Dies with kvcheck: a hung constructor or probe outlived a killed kvcheck, holding
    // its output pipe open (a caller reading it to the end then waited forever).
    die_with_parent(parent, 1);
    // A tool's stop handlers are not this child's: Ctrl-C on the terminal ends it.
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    // An exit() inside body ends this child at once with its own status (glibc's on_exit
    // hands the handler the status; registered last, it runs first): no other exit
    // handler runs, LeakSanitizer's included, whose report (the half-made strings of
    // the interrupted load) would turn "exited with status 0" into an abort.
    on_exit([](int status, void*) { _exit(status); }, nullptr);
    const std::string text = "R" + body();
    (void)!write(fds[1], text.data(), text.size());
    _exit(0);
  }
  close(fds[1]);
  (void)fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);
  std::string got;
  bool eof = false;  // every writer closed: the child is ending, poll() would return at once
  const auto drain = [&] {
    char buf[512];
    ssize_t n;
    while ((n = read(fds[0], buf, sizeof buf)) > 0) got.append(buf, static_cast<size_t>(n));
    eof |= n == 0;
  };
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    if (eof) {
      usleep(1000);
    } else {
      pollfd p{fds[0], POLLIN, 0};
      (void)poll(&p, 1, 20);
    }
    drain();
    const pid_t r = waitpid(pid, &end.status, WNOHANG);
    if (r == pid || (r < 0 && errno == ECHILD)) {
      end.status_known = r == pid;
      drain();
      break;
    }
    const bool stop = g_stop_requested != nullptr && g_stop_requested();
    if (stop || (limit > 0 &&
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >= limit)) {
      kill(pid, SIGKILL);
      end.status_known = waitpid(pid, &end.status, 0) == pid;
      (stop ? end.interrupted : end.timed_out) = true;
      break;
    }
  }
  close(fds[0]);
  end.reported = !got.empty() && got[0] == 'R';
  if (end.reported) end.text = got.substr(1);
  return end;
}

// dlopen(file) and the entry lookup first in a forked child: a library whose
// constructors end the process (exit(0), _exit(0), a signal) or hang would otherwise end
// or stall kvcheck itself, silently and with their status.
void preflight_dlopen(const std::string& path, const std::string& file) {
  std::string error;
  const double limit = call_timeout_seconds();
  const ChildEnd e = run_in_child(
      [&file]() -> std::string {
        void* h = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (h == nullptr) return std::string("dlopen failed: ") + dlerror();
        (void)dlsym(h, KVCHECK_ENTRY_SYMBOL);
        return "";
      },
      limit, error);
  if (!error.empty()) fail(path, "cannot load it in a child process first: " + error);
  if (e.interrupted) fail(path, "loading it was interrupted (a stop signal: Ctrl-C, SIGTERM, SIGHUP or SIGPIPE)");
  if (e.timed_out)
    fail(path, "loading it (dlopen: the library's constructors) did not return within " + seconds_text(limit) +
                   " s, the harness's limit (KVCHECK_PLUGIN_TIMEOUT; 0 = off)");
  if (!e.reported)
    fail(path, "loading it (dlopen: the library's constructors) ended the process that tried it, which " +
                   how_it_ended(e) + " before dlopen returned: refused (it would end kvcheck the same way)");
  if (!e.text.empty()) fail(path, e.text);  // dlopen's own error
}

// The largest head_dim a contract may declare: the generators size caches from it (every
// engine's is far below: 64..576).
constexpr int32_t kMaxDeclaredHeadDim = static_cast<int32_t>(kMaxDeclaredKvHeadDim);

// The largest kv_alignment a contract may declare: the harness's host buffers are
// 256-byte aligned and their device copies keep the host address modulo 256
// (device_memory.h), so an alignment up to 256 is one the calls can honour.
constexpr int32_t kMaxKvAlignment = 256;

// The largest block_size_multiple a plugin may declare: the generators' largest block
// size (properties/gen/choices.h kBlockSizes), which every case then has.
constexpr int32_t kMaxBlockSizeMultiple = 256;

// A declared contract (backend_abi.h kvcheck_contract): every field it covers in range.
void check_contract(const std::string& path, const kvcheck_contract* c, uint32_t kv_dtypes_declared) {
  if (c == nullptr) return;
  if (c->struct_size < offsetof(kvcheck_contract, num_head_dims))
    fail(path, "contract struct_size " + std::to_string(c->struct_size) + " is smaller than its first fields' " +
                   std::to_string(offsetof(kvcheck_contract, num_head_dims)) + " bytes");
  const uint32_t known = (1u << kNumKvRecipes) - 1;
  if (c->kv_fp8_recipes & ~known)
    fail(path, "contract kv_fp8_recipes " + std::to_string(c->kv_fp8_recipes) + " has bits outside the " +
                   std::to_string(kNumKvRecipes) + " known recipes (docs/spec.md §7.3.1)");
  // (Each field is read when struct_size covers it, never by sizeof: later headers append.)
  if (c->struct_size < offsetof(kvcheck_contract, head_dims) + sizeof c->head_dims) return;
  if (c->num_head_dims < 0 || c->num_head_dims > KVCHECK_MAX_DECLARED_HEAD_DIMS)
    fail(path, "contract num_head_dims " + std::to_string(c->num_head_dims) + " is not in [0, " +
                   std::to_string(KVCHECK_MAX_DECLARED_HEAD_DIMS) + "]");
  for (int32_t i = 0; i < c->num_head_dims; ++i)
    if (c->head_dims[i] < 1 || c->head_dims[i] > kMaxDeclaredHeadDim)
      fail(path, "contract head_dims[" + std::to_string(i) + "] = " + std::to_string(c->head_dims[i]) +
                     " is not a head_dim in [1, " + std::to_string(kMaxDeclaredHeadDim) + "]");
  const bool limits = c->struct_size >= offsetof(kvcheck_contract, max_heads_x_head_dim) + sizeof c->max_heads_x_head_dim;
  if (kv_dtypes_declared & (1u << KVCHECK_KV_E2M1)) {
    // An e2m1 cache takes head_dims that are multiples of 16 (one scale per 16 elements,
    // docs/spec.md §7.9): a table sent e2m1 caches needs one its contract allows. Sent
    // only e2m1, every case would be drawn in another dtype, outside its capabilities;
    // sent others too, no e2m1 case would ever be drawn while the report listed e2m1
    // as covered (--kv-dtype e2m1 ran bf16 cases: the adversarial review's finding 2).
    BackendCapabilities declared;  // the declared head_dims and row limits alone
    declared.head_dims.assign(c->head_dims, c->head_dims + c->num_head_dims);
    declared.min_heads_x_head_dim = limits ? c->min_heads_x_head_dim : 0;
    declared.max_heads_x_head_dim = limits ? c->max_heads_x_head_dim : 0;
    if (!declared.e2m1_head_dim_fits())
      fail(path, std::string("contract head_dims / max_heads_x_head_dim leave no head_dim that is a multiple of 16 "
                             "for the e2m1 caches") +
                     (kv_dtypes_declared == (1u << KVCHECK_KV_E2M1)
                          ? ", the only K/V dtype the capabilities name (docs/spec.md §7.9)"
                          : " the capabilities name (docs/spec.md §7.9): no e2m1 case could be drawn; take e2m1 out of "
                            "kv_dtypes or declare such a head_dim"));
  }
  if (!limits) return;
  const int32_t lo = c->min_heads_x_head_dim, hi = c->max_heads_x_head_dim;
  if (lo < 0 || hi < 0 || (hi > 0 && lo > hi))
    fail(path, "contract min_heads_x_head_dim " + std::to_string(lo) + " / max_heads_x_head_dim " +
                   std::to_string(hi) + ": each >= 0 (0 = none), the minimum at most the maximum");
  // A minimum no row the harness draws can meet (INT32_MAX hung the generators).
  if (lo > kMaxKvRowElements)
    fail(path, "contract min_heads_x_head_dim " + std::to_string(lo) + " is past the largest K/V row the harness draws (" +
                   std::to_string(kMaxKvRowElements) + " elements: 128 heads of head_dim " +
                   std::to_string(kMaxDeclaredKvHeadDim) + ")");
  // Limits no declared head_dim can meet with a whole number of heads leave the match
  // properties nothing to draw.
  if (c->num_head_dims > 0 && (lo > 0 || hi > 0)) {
    bool any = false;
    for (int32_t i = 0; i < c->num_head_dims; ++i) {
      const int64_t d = c->head_dims[i], heads = std::max<int64_t>(1, (lo + d - 1) / d);
      any |= hi == 0 || heads * d <= hi;
    }
    if (!any)
      fail(path, "contract min_heads_x_head_dim " + std::to_string(lo) + " / max_heads_x_head_dim " +
                     std::to_string(hi) + ": no declared head_dim meets them with a whole number of heads");
  }
  if (c->struct_size < offsetof(kvcheck_contract, kv_alignment) + sizeof c->kv_alignment) return;
  const int32_t a = c->kv_alignment;
  if (a < 0 || a > kMaxKvAlignment || (a & (a - 1)) != 0)
    fail(path, "contract kv_alignment " + std::to_string(a) + " is not 0 (none) or a power of two up to " +
                   std::to_string(kMaxKvAlignment) + " bytes");
  if (c->struct_size < offsetof(kvcheck_contract, kv_dtype_pairs) + sizeof c->kv_dtype_pairs) return;
  const uint32_t pairs = c->kv_dtype_pairs;
  if (pairs == 0) return;
  const auto hex = [](uint32_t v) {
    char b[16];
    std::snprintf(b, sizeof b, "0x%04X", v);
    return std::string(b);
  };
  uint32_t valid = 0;
  for (KvDtype cache : kv_dtypes())
    for (KvDtype rows : kv_row_dtypes())
      if (is_kv_dtype_pair(cache, rows)) valid |= kv_dtype_pair_bit(cache, rows);
  if (pairs & ~valid)
    fail(path, "contract kv_dtype_pairs " + hex(pairs) + " names pairs the spec rejects (" + hex(pairs & ~valid) +
                   "; valid: " + describe_kv_dtype_pairs(valid) +
                   "; docs/spec.md §7.1)");
  // Each cache dtype the capabilities name needs a declared row dtype, or the match
  // properties would draw it with none.
  for (KvDtype cache : kv_dtypes()) {
    bool any = false;
    for (KvDtype rows : kv_row_dtypes()) any |= (pairs & kv_dtype_pair_bit(cache, rows)) != 0;
    if (!any && (kv_dtypes_declared >> static_cast<int>(cache) & 1u))
      fail(path, "contract kv_dtype_pairs " + hex(pairs) + " declares no row dtype for the " +
                     to_string(cache) + " caches the capabilities name");
  }
}

// Block-size limits and format / dtype masks the generators can draw a case inside: a
// negative or absurd limit, a multiple above the largest limit, or an operation named
// with no format (dtype) to call it with would leave its rows nothing to draw (or a
// worker allocating caches of 2^30-token blocks).
void check_block_sizes_and_masks(const std::string& path, const kvcheck_capabilities& c) {
  if (c.block_size_multiple < 0 || c.block_size_multiple > kMaxBlockSizeMultiple)
    fail(path, "capabilities block_size_multiple " + std::to_string(c.block_size_multiple) + " is not in [0, " +
                   std::to_string(kMaxBlockSizeMultiple) + "] (0 or 1 = any; the generators draw block sizes up to " +
                   std::to_string(kMaxBlockSizeMultiple) + ", docs/plugins.md)");
  if (c.max_block_size < 0)
    fail(path, "capabilities max_block_size " + std::to_string(c.max_block_size) + " is negative (0 = no limit)");
  if (c.max_block_size > 0 && c.block_size_multiple > c.max_block_size)
    fail(path, "capabilities block_size_multiple " + std::to_string(c.block_size_multiple) + " with max_block_size " +
                   std::to_string(c.max_block_size) + ": no block size is both");
  const auto hex = [](uint32_t v) {
    char b[16];
    std::snprintf(b, sizeof b, "0x%x", v);
    return std::string(b);
  };
  // A mask of bits this harness gives no meaning (a format or dtype it does not know, or
  // only OTHER, which a mask other than ~0u never receives) is as empty as 0: the
  // generators would draw outside it and the gate refuse every case before the plugin
  // runs, failing each row on a plugin that was never called.
  uint32_t named_formats = 0;
  for (const KVCacheFormat& f : supported_formats())
    if (abi_format(f) != KVCHECK_FORMAT_OTHER) named_formats |= KVCHECK_FORMAT_BIT(abi_format(f));
  const uint32_t paged = KVCHECK_OP_STORE_KV_CACHE | KVCHECK_OP_LOAD_PAGED_KV_CACHE;
  if ((c.ops & paged) && c.formats == 0)
    fail(path, "capabilities name store_kv_cache or load_paged_kv_cache but formats is 0: no format to call them "
               "with (~0u = every format)");
  if ((c.ops & paged) && c.formats != ~0u && (c.formats & named_formats) == 0)
    fail(path, "capabilities name store_kv_cache or load_paged_kv_cache but formats " + hex(c.formats) +
                   " names no format this harness knows: no format to call them with (~0u = every format)");
  const uint32_t kv = KVCHECK_OP_STORE_KV | KVCHECK_OP_GATHER_KV;
  if ((c.ops & kv) && c.kv_dtypes == 0)
    fail(path, "capabilities name store_kv or gather_kv but kv_dtypes is 0: no K/V dtype to call them with "
               "(~0u = every dtype)");
  uint32_t known_dtypes = 0;
  for (KvDtype d : kv_dtypes())
    if (d != KvDtype::kE2M1 || (c.ops & KVCHECK_OP_KV_NVFP4)) known_dtypes |= 1u << static_cast<int>(d);
  if ((c.ops & kv) && (c.kv_dtypes & known_dtypes) == 0)
    fail(path, "capabilities name store_kv or gather_kv but kv_dtypes " + hex(c.kv_dtypes) +
                   " names no K/V dtype this harness knows: no K/V dtype to call them with (~0u = every dtype)");
}

// The ops bits and the entries that must back them (optional entries: when covered).
void check_table(const std::string& path, const kvcheck_backend_v1_t& t) {
  if (t.abi_version != KVCHECK_ABI_VERSION)
    fail(path, "ABI version mismatch: the library has version " + std::to_string(t.abi_version) +
                   ", this kvcheck speaks version " + std::to_string(KVCHECK_ABI_VERSION) +
                   " (rebuild it against this include/kvcheck/backend_abi.h)");
  const size_t required = offsetof(kvcheck_backend_v1_t, store_kv);
  if (t.struct_size < required)
    fail(path, "table struct_size " + std::to_string(t.struct_size) + " is smaller than version 1's " +
                   std::to_string(required) + " required bytes");
  if (t.name == nullptr || !std::regex_match(t.name, std::regex("[a-z0-9_-]{1,32}")))
    fail(path, std::string("backend name '") + (t.name ? t.name : "(null)") + "' is not [a-z0-9_-]{1,32}");
  if (std::string(t.name).find("-to-") != std::string::npos)
    fail(path, std::string("backend name '") + t.name +
                   "' holds '-to-', which names writer x reader pairs (<writer>-to-<reader>, docs/spec.md §6.2)");
  if (t.memory_space != KVCHECK_MEMORY_HOST && t.memory_space != KVCHECK_MEMORY_CUDA_DEVICE)
    fail(path, "memory_space " + std::to_string(t.memory_space) + " is neither HOST (0) nor CUDA_DEVICE (1)");
  const auto has = [&](size_t offset) { return t.struct_size >= offset + sizeof(void*); };
  // An entry past struct_size is not the plugin's memory: it is never read.
  struct Entry {
    uint32_t bit;
    size_t offset;
    const char* name;
  };
#define KVCHECK_ENTRY(f, bit, args_t) {bit, offsetof(kvcheck_backend_v1_t, f), #f},
  const Entry entries[] = {KVCHECK_OPS(KVCHECK_ENTRY)};
#undef KVCHECK_ENTRY
  const auto fn = [&](size_t offset) {
    const void* p = nullptr;
    std::memcpy(&p, reinterpret_cast<const char*>(&t) + offset, sizeof p);
    return p;
  };
  for (const auto& e : entries)
    if ((t.capabilities.ops & e.bit) && (!has(e.offset) || fn(e.offset) == nullptr))
      fail(path, std::string("capabilities name ") + e.name + " but the table has no " + e.name + " function");
  if (const uint32_t unknown = t.capabilities.ops & ~KVCHECK_OPS_KNOWN) {
    char bits[16];
    std::snprintf(bits, sizeof bits, "0x%x", unknown);
    fail(path, std::string("capabilities name op bits ") + bits +
                   " this harness does not know (a plugin built against a newer include/kvcheck/backend_abi.h)");
  }
  // Feature bits qualify an entry's bit.
  if ((t.capabilities.ops & KVCHECK_OP_GATHER_KV_SEQ_STARTS) && !(t.capabilities.ops & KVCHECK_OP_GATHER_KV))
    fail(path, "capabilities name gather_kv's seq_starts (KVCHECK_OP_GATHER_KV_SEQ_STARTS) but not gather_kv");
  if ((t.capabilities.ops & KVCHECK_OP_CONCAT_MLA_PE_CACHE) && !(t.capabilities.ops & KVCHECK_OP_CONCAT_AND_CACHE_MLA))
    fail(path, "capabilities name concat_and_cache_mla's pe_cache (KVCHECK_OP_CONCAT_MLA_PE_CACHE) but not "
               "concat_and_cache_mla");
  if (t.capabilities.formats != ~0u && (t.capabilities.formats & KVCHECK_FORMAT_BIT(KVCHECK_FORMAT_NVFP4_DS_MLA)) &&
      !(t.capabilities.ops & KVCHECK_OP_RECORD_FLAGS))
    fail(path, "capabilities name the NVFP4_DS_MLA format but not KVCHECK_OP_RECORD_FLAGS: its record's e4m3 rope "
               "and transposed scales are said in record_flags, which the table does not read");
  if (t.capabilities.kv_dtypes != ~0u && (t.capabilities.kv_dtypes & (1u << KVCHECK_KV_E2M1)) &&
      !(t.capabilities.ops & KVCHECK_OP_KV_NVFP4))
    fail(path, "capabilities name the e2m1 K/V dtype but not KVCHECK_OP_KV_NVFP4: its scale caches travel in "
               "block_scales, which the table does not read");
  if ((t.capabilities.ops & KVCHECK_OP_STORE_KV_ROPE) && !(t.capabilities.ops & KVCHECK_OP_STORE_KV))
    fail(path, "capabilities name store_kv's fused RoPE (KVCHECK_OP_STORE_KV_ROPE) but not store_kv");
  if ((t.capabilities.ops & KVCHECK_OP_CONCAT_MLA_ROPE) && !(t.capabilities.ops & KVCHECK_OP_CONCAT_AND_CACHE_MLA))
    fail(path, "capabilities name concat_and_cache_mla's fused RoPE (KVCHECK_OP_CONCAT_MLA_ROPE) but not "
               "concat_and_cache_mla");
  if ((t.capabilities.ops & KVCHECK_OP_ANY_BLOCK_STRIDE) &&
      !(t.capabilities.ops & (KVCHECK_OP_STORE_KV_CACHE | KVCHECK_OP_LOAD_PAGED_KV_CACHE)))
    fail(path, "capabilities name any block_stride (KVCHECK_OP_ANY_BLOCK_STRIDE) but neither store_kv_cache nor "
               "load_paged_kv_cache");
  check_block_sizes_and_masks(path, t.capabilities);
  // The dtypes it can be sent: e2m1 only with KVCHECK_OP_KV_NVFP4 (a ~0u mask without
  // it never gets an e2m1 cache, BackendCapabilities::supports_kv_dtype), so its pairs
  // need not name one.
  uint32_t kv_dtypes = t.capabilities.kv_dtypes;
  if (!(t.capabilities.ops & KVCHECK_OP_KV_NVFP4)) kv_dtypes &= ~(1u << KVCHECK_KV_E2M1);
  check_contract(path, table_contract(t), kv_dtypes);
}

}  // namespace

const kvcheck_contract* table_contract(const kvcheck_backend_v1_t& t) {
  if (t.struct_size < offsetof(kvcheck_backend_v1_t, contract) + sizeof(void*)) return nullptr;
  return t.contract;
}

Library::~Library() {
  // Plugins may have registered atexit handlers or CUDA state: never dlclose.
}

std::shared_ptr<Library> load_library(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) fail(path, "no such file");
  // A name without '/' would make dlopen search the library path, not the file given.
  const std::string file = path.find('/') == std::string::npos ? "./" + path : path;
  preflight_dlopen(path, file);
  // dlopen runs the library's constructors (crtfastmath.o's sets flush-to-zero) and the
  // entry its own code: whatever mode they leave is the plugin's, never the harness's.
  struct RestoreFpMode {
    FpMode harness = FpMode::current();
    ~RestoreFpMode() { harness.apply(); }
  } restore;
  void* handle = nullptr;
  {
    const WatchdogScope guard(path, "dlopen");  // what the child survived but this process does not
    handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  }
  if (handle == nullptr) fail(path, std::string("dlopen failed: ") + dlerror());
  dlerror();
  void* sym = dlsym(handle, KVCHECK_ENTRY_SYMBOL);
  if (sym == nullptr)
    fail(path, "no symbol " KVCHECK_ENTRY_SYMBOL
               " (export it with KVCHECK_PLUGIN_EXPORT and extern \"C\"; see docs/plugins.md)");
  kvcheck_backend_v1_fn entry = nullptr;
  static_assert(sizeof(entry) == sizeof(sym));
  std::memcpy(&entry, &sym, sizeof(sym));
  auto lib = std::make_shared<Library>();
  lib->path = path;
  lib->handle = handle;
  char msg[1024] = {0};
  int st;
  {
    const WatchdogScope guard(path, KVCHECK_ENTRY_SYMBOL);  // a hang or exit() in the entry is said as such
    st = entry(KVCHECK_ABI_VERSION, &lib->table, msg, sizeof msg);
  }
  msg[sizeof msg - 1] = '\0';  // a message that fills the buffer has no NUL of its own
  if (st == KVCHECK_STATUS_UNSUPPORTED) fail(path, std::string("declines to run here: ") + msg, ErrorCode::kUnsupported);
  if (st != KVCHECK_STATUS_OK) fail(path, KVCHECK_ENTRY_SYMBOL " returned status " + std::to_string(st) + ": " + msg);
  if (lib->table == nullptr) fail(path, KVCHECK_ENTRY_SYMBOL " returned OK but no table");
  lib->fp_mode.set(FpMode::current());
  check_table(path, *lib->table);  // before anything reads the table's name (it may be NULL)
  lib->fp_mode.name = lib->table->name;
  if (const std::string d = lib->fp_mode.get().differences_from(restore.harness); !d.empty())
    std::fprintf(stderr,
                 "kvcheck: plugin %s: loading it set %s (a -ffast-math / -Ofast build links gcc's crtfastmath.o, "
                 "whose constructor does): its calls run under that mode, as in an engine's process; kvcheck's "
                 "reference under its own (docs/plugins.md)\n",
                 path.c_str(), d.c_str());
#ifndef KVCHECK_HAVE_CUDA
  if (lib->table->memory_space == KVCHECK_MEMORY_CUDA_DEVICE)
    fail(path, "is a CUDA device plugin, but this kvcheck was built without CUDA (no nvcc at configure time)",
         ErrorCode::kUnsupported);
#endif
  return lib;
}

void set_stop_requested(bool (*stop_requested)()) { g_stop_requested = stop_requested; }

std::string probe_in_child(const Library& lib) {
  if (lib.table->probe == nullptr) return "";
  std::string error;
  const double limit = call_timeout_seconds();
  const ChildEnd e = run_in_child(
      [&lib]() -> std::string {
        char msg[1024] = {0};
        const int st = lib.table->probe(lib.table->context, msg, sizeof msg);
        msg[sizeof msg - 1] = '\0';  // a message that fills the buffer has no NUL of its own
        if (st == KVCHECK_STATUS_OK) return "";
        if (!*msg) std::snprintf(msg, sizeof msg, "probe returned status %d", st);
        return msg;
      },
      limit, error);
  if (!error.empty()) return "cannot run the probe in a child process: " + error;
  if (e.interrupted) return "probe interrupted (a stop signal: Ctrl-C, SIGTERM, SIGHUP or SIGPIPE)";
  if (e.timed_out)
    return "probe did not return within " + seconds_text(limit) +
           " s, the harness's limit (KVCHECK_PLUGIN_TIMEOUT; 0 = off)";
  if (!e.reported) return "probe ended the process instead of returning (the probe's process " + how_it_ended(e) + ")";
  return e.text;
}

std::shared_ptr<const Backend> make_backend(std::shared_ptr<Library> lib) {
  return std::make_shared<PluginBackend>(std::move(lib));
}

std::string builtin_plugin_dir() {
  if (const char* env = std::getenv("KVCHECK_PLUGIN_DIR"); env && *env) return env;
  return KVCHECK_PLUGIN_BUILD_DIR;
}

std::vector<std::string> env_plugins() {
  std::vector<std::string> out;
  const char* env = std::getenv("KVCHECK_PLUGIN");
  if (!env) return out;
  std::string s = env;
  for (size_t start = 0; start <= s.size();) {
    const size_t end = std::min(s.find(':', start), s.size());
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

}  // namespace kvcheck::plugin
