// `vramsim-calibrate replay`: a minimal MoE decode loop on the real card, to measure the cliff
// the simulator predicts. L layers x E experts of B bytes live in pinned host memory; an expert
// cache of S slots lives in VRAM; each token's top-k experts per layer come from a routing
// trace `vramsim routing-trace` wrote. Per token, layer after layer (a layer's kernel reads
// its k experts, so layer l+1 starts after layer l):
//   copy       a layer with a miss waits for the previous layer on the host (the router's
//              result must reach the host before it can issue copies), copies its missed
//              experts in (cudaMemcpyAsync from pinned memory), then runs; a layer with no miss
//              is enqueued straight away (no host involvement);
//   zero-copy  the layer's kernel reads missed experts in place from mapped pinned memory.
// Each token ends with a stream synchronisation (the host reads the sampled token). Tokens/s
// is host wall-clock over the timed tokens; hit rates come from the plan (replay_plan.h).
//
//   vramsim-calibrate replay --trace FILE [--out DIR] [--name NAME] [--slots S,S,...]
//       [--coverage C,C,...] [--policy profile|lru] [--modes copy,zero-copy] [--expert-bytes B]
//       [--dense-bytes B] [--warmup-tokens N] [--trials N] [--device N] [--time-budget S] [--dry-run]
// Writes DIR/NAME-replay.json after every point, so a run cut short keeps what it measured.
// Points run cache size by cache size, both modes at each. --time-budget S (seconds from the
// start) starts no trial that the previous one's length says would end past S, and abandons
// one that is past S; the points left are written unmeasured with a note. --dry-run reads and
// plans everything (hit rates come from the plan) but makes no CUDA call: its points carry
// no tokens/s ("measured": false) and the document says "dry_run": true.
// Units: bytes, seconds.

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

#include "calibrate/common.cuh"
#include "calibrate/replay_plan.h"

namespace vramsim::calibrate {
namespace {

constexpr std::int64_t kMaxSlots = std::int64_t{1} << 40;  // cache sizes, tokens: far past any card
constexpr std::int64_t kMaxBytes = std::int64_t{1} << 40;  // 1 TiB per expert or dense block

struct ReplayOptions {
  std::string trace;
  std::string out = "calibration-out";
  std::string name = "replay";
  std::vector<std::int64_t> slots;            // explicit cache sizes
  std::vector<double> coverage = {0.1, 0.235, 0.5, 0.795, 1.0};  // used when no --slots
  ReplayPolicy policy = ReplayPolicy::Profile;
  std::vector<std::string> modes = {"copy", "zero-copy"};
  std::int64_t expert_bytes = 0;              // 0: the trace's
  std::int64_t dense_bytes = 0;               // per layer, read from VRAM (attention, shared experts)
  std::int64_t warmup_tokens = 16;
  int trials = 3;
  int device = 0;
  double time_budget_s = 0.0;                 // 0: none
  bool dry_run = false;
};

void replay_usage(std::FILE* f) {
  std::fprintf(f,
               "usage: vramsim-calibrate replay --trace FILE [options]\n"
               "  --trace FILE         routing trace from `vramsim routing-trace SCENARIO -o FILE`\n"
               "  --out DIR            output directory (default calibration-out); writes DIR/NAME-replay.json\n"
               "  --name NAME          file stem (default replay)\n"
               "  --slots S,S,...      cache sizes in slots (default: --coverage)\n"
               "  --coverage C,C,...   cache sizes as shares of layers x experts (default 0.1,0.235,0.5,0.795,1)\n"
               "  --policy P           profile (hottest pinned, misses staged; default) or lru\n"
               "  --modes M,M          copy and/or zero-copy (default both)\n"
               "  --expert-bytes B     bytes per expert (default: the trace's)\n"
               "  --dense-bytes B      bytes read from VRAM per layer besides the experts (default 0)\n"
               "  --warmup-tokens N    untimed tokens first (default 16)\n"
               "  --trials N           timed repetitions per point, median reported (default 3)\n"
               "  --device N           CUDA device ordinal (default 0)\n"
               "  --time-budget S      seconds from the start: no trial begins that would end past S (default: none)\n"
               "  --dry-run            read the trace and plan every point, make no CUDA call, measure nothing\n");
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

// Parses argv; returns false (after printing why) on a usage error.
bool parse_replay(int argc, char** argv, ReplayOptions& o) {
  try {
    for (int i = 0; i < argc; ++i) {
      const std::string a = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
        return argv[++i];
      };
      if (a == "--trace") o.trace = value();
      else if (a == "--out") o.out = value();
      else if (a == "--name") o.name = value();
      else if (a == "--slots") {
        o.slots.clear();
        for (const auto& v : split(value())) o.slots.push_back(option_integer("--slots", v, 0, kMaxSlots));
      } else if (a == "--coverage") {
        o.coverage.clear();
        for (const auto& v : split(value())) o.coverage.push_back(option_number("--coverage (a share, not a percentage)", v, 0.0, 1.0));
      } else if (a == "--policy") {
        const std::string p = value();
        if (p != "profile" && p != "lru") throw std::invalid_argument("--policy: expected profile or lru, got " + p);
        o.policy = p == "lru" ? ReplayPolicy::Lru : ReplayPolicy::Profile;
      } else if (a == "--modes") {
        o.modes = split(value());
        for (const auto& m : o.modes)
          if (m != "copy" && m != "zero-copy") throw std::invalid_argument("--modes: expected copy and/or zero-copy, got " + m);
      } else if (a == "--expert-bytes") o.expert_bytes = option_integer(a, value(), 0, kMaxBytes);
      else if (a == "--dense-bytes") o.dense_bytes = option_integer(a, value(), 0, kMaxBytes);
      else if (a == "--warmup-tokens") o.warmup_tokens = option_integer(a, value(), 0, kMaxSlots);
      else if (a == "--trials") o.trials = static_cast<int>(option_integer(a, value(), 1, 1000));
      else if (a == "--device") o.device = static_cast<int>(option_integer(a, value(), 0, 1023));
      else if (a == "--time-budget") o.time_budget_s = option_number(a, value(), 0.0, 1e6);
      else if (a == "--dry-run") o.dry_run = true;
      else if (a == "-h" || a == "--help") {
        replay_usage(stdout);
        std::exit(0);
      } else throw std::invalid_argument("unknown argument '" + a + "'");
    }
    if (o.trace.empty()) throw std::invalid_argument("--trace FILE is required");
    if (o.trials < 1 || o.warmup_tokens < 0 || o.expert_bytes < 0 || o.dense_bytes < 0)
      throw std::invalid_argument("--trials must be >= 1; byte counts and --warmup-tokens >= 0");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vramsim-calibrate replay: %s\n", e.what());
    replay_usage(stderr);
    return false;
  }
  return true;
}

// Reads k experts (pointer table) plus an optional dense block; blockIdx.y picks the buffer.
__global__ void layer_kernel(const uint4* const* experts, int k, std::size_t expert_words, const uint4* dense,
                             std::size_t dense_words, unsigned int* sink) {
  const int y = static_cast<int>(blockIdx.y);
  const uint4* p = y < k ? experts[y] : dense;
  const std::size_t n = y < k ? expert_words : dense_words;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  unsigned int acc = 0;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const uint4 v = p[i];
    acc += v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0xDEADBEEFu) *sink = acc;
}

struct Point {
  std::string mode;
  ReplayPlan plan;
  std::vector<double> seconds;  // per trial, timed tokens
  std::string note;             // why it was not (fully) measured; empty when it was
};

}  // namespace

int replay_main(int argc, char** argv) {
  const auto started = std::chrono::steady_clock::now();
  auto elapsed_s = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(); };
  ReplayOptions opt;
  if (!parse_replay(argc, argv, opt)) return 2;

  RoutingTrace trace;
  {
    std::ifstream in(opt.trace);
    if (!in) {
      std::fprintf(stderr, "vramsim-calibrate replay: cannot read %s: %s\n", opt.trace.c_str(), std::strerror(errno));
      return 2;
    }
    try {
      trace = read_routing_trace(in, opt.trace);
    } catch (const InputError& e) {
      std::fprintf(stderr, "%s\n", e.what());
      return 2;
    } catch (const std::bad_alloc&) {
      std::fprintf(stderr, "vramsim-calibrate replay: %s: the trace does not fit in this machine's memory\n", opt.trace.c_str());
      return 2;
    }
  }
  if (opt.warmup_tokens >= trace.tokens) {
    std::fprintf(stderr, "vramsim-calibrate replay: --warmup-tokens %lld leaves no timed token of the trace's %lld\n",
                 static_cast<long long>(opt.warmup_tokens), static_cast<long long>(trace.tokens));
    return 2;
  }
  const std::int64_t pairs = static_cast<std::int64_t>(trace.layers) * trace.experts;
  if (opt.slots.empty())
    for (double c : opt.coverage) opt.slots.push_back(std::llround(std::clamp(c, 0.0, 1.0) * static_cast<double>(pairs)));
  std::vector<Point> points;
  try {
    for (std::int64_t s : opt.slots)
      for (const auto& mode : opt.modes) {
        // Zero-copy misses are read in place and never enter the cache: no eviction policy.
        const ReplayPolicy policy = mode == "zero-copy" ? ReplayPolicy::Profile : opt.policy;
        points.push_back({mode, plan_replay(trace, s, policy, opt.warmup_tokens), {}, {}});
      }
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "vramsim-calibrate replay: %s\n", e.what());
    return 2;
  }

  // Writes DIR/NAME-replay.json: the points measured so far and the sizes skipped. Returns
  // false (after saying why) when the file cannot be written.
  const std::size_t expert_bytes = static_cast<std::size_t>(opt.expert_bytes ? opt.expert_bytes : trace.expert_bytes);
  std::string device_name;
  Value skipped = Value::array();
  auto write_doc = [&]() -> bool {
    Value doc = Value::object();
    doc["tool"] = Value::string("vramsim-calibrate replay");
    doc["device"] = opt.dry_run ? Value() : Value::string(device_name);
    doc["dry_run"] = Value::boolean(opt.dry_run);
    doc["trace"] = Value::string(opt.trace);
    doc["layers"] = Value::number(trace.layers);
    doc["experts"] = Value::number(trace.experts);
    doc["top_k"] = Value::number(trace.top_k);
    doc["expert_bytes"] = Value::number(static_cast<double>(expert_bytes));
    doc["dense_bytes"] = Value::number(static_cast<double>(opt.dense_bytes));
    doc["tokens"] = Value::number(static_cast<double>(trace.tokens));
    doc["warmup_tokens"] = Value::number(static_cast<double>(opt.warmup_tokens));
    doc["trials"] = Value::number(opt.trials);
    doc["time_budget_s"] = opt.time_budget_s > 0.0 ? Value::number(opt.time_budget_s) : Value();
    doc["points"] = Value::array();
    doc["skipped"] = skipped;  // cache sizes not run: {slots, coverage, vram_bytes_needed, vram_bytes_usable, note}
    for (const Point& pt : points) {
      const double timed = static_cast<double>(pt.plan.counted_tokens);
      const Stats s = summarize(pt.seconds);
      Value p = Value::object();
      p["mode"] = Value::string(pt.mode);
      p["policy"] = Value::string(pt.plan.policy == ReplayPolicy::Lru ? "lru" : "profile");
      p["slots"] = Value::number(static_cast<double>(pt.plan.slots));
      p["coverage"] = Value::number(static_cast<double>(pt.plan.slots) / static_cast<double>(pairs));
      p["hit_rate"] = Value::number(pt.plan.hit_rate());
      p["misses_per_token"] = Value::number(pt.plan.misses_per_token());
      p["layers_with_miss_per_token"] = Value::number(static_cast<double>(pt.plan.layers_with_miss) / timed);
      const bool measured = !pt.seconds.empty();
      p["measured"] = Value::boolean(measured);
      p["tok_s"] = measured ? Value::number(timed / s.median) : Value();
      p["tok_s_best"] = measured ? Value::number(timed / s.min) : Value();
      p["step_s"] = measured ? Value::number(s.median / timed) : Value();
      p["trial_seconds"] = number_array(pt.seconds);
      if (!pt.note.empty()) p["note"] = Value::string(pt.note);
      doc["points"].push(std::move(p));
    }
    std::error_code ec;
    std::filesystem::create_directories(opt.out, ec);
    const std::filesystem::path path = std::filesystem::path(opt.out) / (opt.name + "-replay.json");
    std::ofstream out(path);
    write_json(out, doc);
    if (!out) {
      std::fprintf(stderr, "vramsim-calibrate replay: cannot write %s\n", path.c_str());
      return false;
    }
    std::printf("vramsim-calibrate replay: wrote %s\n", path.c_str());
    return true;
  };
  if (opt.dry_run) {
    for (Point& pt : points) pt.note = "dry run: not measured (no CUDA call was made)";
    std::printf("vramsim-calibrate replay: dry run of %zu points (%d layers x %d experts, top-%d, %lld tokens); "
                "no device, no measurement\n", points.size(), trace.layers, trace.experts, trace.top_k,
                static_cast<long long>(trace.tokens));
    for (const Point& pt : points)
      std::printf("  %-9s slots %7lld: hit rate %6.2f%% (plan)\n", pt.mode.c_str(), static_cast<long long>(pt.plan.slots),
                  100.0 * pt.plan.hit_rate());
    return write_doc() ? 0 : 1;
  }

  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    std::fprintf(stderr, "vramsim-calibrate replay: no CUDA device: %s\n",
                 err != cudaSuccess ? cudaGetErrorString(err) : "no devices found");
    return 1;
  }
  if (opt.device < 0 || opt.device >= count) {
    std::fprintf(stderr, "vramsim-calibrate replay: no CUDA device: ordinal %d out of range (%d found)\n", opt.device, count);
    return 1;
  }
  CHECK(cudaSetDevice(opt.device));
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, opt.device));
  device_name = prop.name;

  // Expert storage: 16-byte words, each expert rounded up to 4 KiB (page alignment of copies).
  const std::size_t stride_bytes = (expert_bytes + 4095) & ~static_cast<std::size_t>(4095);
  const std::size_t words = expert_bytes / 16;
  const std::size_t host_bytes = stride_bytes * static_cast<std::size_t>(pairs);
  const std::size_t k = static_cast<std::size_t>(trace.top_k);
  const std::size_t staging_slots = 2 * k;  // two layers' worth: layer l+1 stages while l may still read
  const double ram = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE));
  if (static_cast<double>(host_bytes) > 0.75 * ram) {
    std::fprintf(stderr, "vramsim-calibrate replay: %lld experts x %zu B = %.1f GiB of pinned host memory is more than 3/4 "
                 "of this host's %.1f GiB; use a smaller --expert-bytes\n", static_cast<long long>(pairs), stride_bytes,
                 static_cast<double>(host_bytes) / kGiB, ram / kGiB);
    return 1;
  }
  // Each cache size is judged alone against the free VRAM, less the look-up table and a
  // margin for the driver's own allocations: a size that does not fit (the full model on a
  // 32 GB card) is skipped with a note in the JSON, and the buffer is sized for the largest
  // that fits. None fitting is an error (after the JSON says why).
  std::size_t free_b = 0, total_b = 0;
  CHECK(cudaMemGetInfo(&free_b, &total_b));
  const std::size_t table_bytes = trace.routes.size() * sizeof(uint4*);
  const std::size_t margin = std::size_t{256} << 20;
  const std::size_t budget = free_b > table_bytes + margin ? free_b - table_bytes - margin : 0;
  const std::vector<bool> fits = replay_sizes_that_fit(opt.slots, stride_bytes, trace.top_k, opt.dense_bytes, budget);
  std::int64_t max_slots = -1;
  for (std::size_t i = 0; i < opt.slots.size(); ++i) {
    if (fits[i]) {
      max_slots = std::max(max_slots, opt.slots[i]);
      continue;
    }
    const double need = static_cast<double>(replay_vram_bytes(opt.slots[i], stride_bytes, trace.top_k, opt.dense_bytes));
    std::fprintf(stderr, "vramsim-calibrate replay: skipping %lld slots: needs %.0f MiB of VRAM, %.0f MiB usable "
                 "(%.0f MiB free)\n", static_cast<long long>(opt.slots[i]), need / kMiB, static_cast<double>(budget) / kMiB,
                 static_cast<double>(free_b) / kMiB);
    Value n = Value::object();
    n["slots"] = Value::number(static_cast<double>(opt.slots[i]));
    n["coverage"] = Value::number(static_cast<double>(opt.slots[i]) / static_cast<double>(pairs));
    n["vram_bytes_needed"] = Value::number(need);
    n["vram_bytes_usable"] = Value::number(static_cast<double>(budget));
    n["note"] = Value::string("skipped: the cache does not fit in this card's free VRAM");
    skipped.push(std::move(n));
  }
  points.erase(std::remove_if(points.begin(), points.end(), [&](const Point& pt) {
                 for (std::size_t i = 0; i < opt.slots.size(); ++i)
                   if (opt.slots[i] == pt.plan.slots) return !fits[i];
                 return true;
               }), points.end());
  const std::size_t vram_bytes = max_slots < 0 ? 0 : static_cast<std::size_t>(replay_vram_bytes(max_slots, stride_bytes,
                                                                                               trace.top_k, opt.dense_bytes));

  if (max_slots < 0) {
    std::fprintf(stderr, "vramsim-calibrate replay: no requested cache size fits in %.0f MiB of usable VRAM; "
                 "use fewer --slots or a smaller --expert-bytes\n", static_cast<double>(budget) / kMiB);
    write_doc();
    return 1;
  }
  std::printf("vramsim-calibrate replay: %s; %d layers x %d experts x %zu B (%.1f GiB pinned host), top-%d, "
              "%lld tokens (%lld timed), trials %d\n", prop.name, trace.layers, trace.experts, expert_bytes,
              static_cast<double>(host_bytes) / kGiB, trace.top_k, static_cast<long long>(trace.tokens),
              static_cast<long long>(trace.tokens - opt.warmup_tokens), opt.trials);
  std::fflush(stdout);

  // What a file written mid-run says of the points still to come; written once now, so that a
  // run stopped while pinning the host memory (34 GB for the case study) still leaves the file.
  for (Point& pt : points) pt.note = "not measured: the run ended before this point";
  if (!write_doc()) return 1;
  unsigned char* host = nullptr;
  CHECK(cudaHostAlloc(reinterpret_cast<void**>(&host), host_bytes, cudaHostAllocMapped));
  std::memset(host, 1, host_bytes);
  unsigned char* host_dev = nullptr;  // the same memory, as the GPU addresses it (zero-copy)
  CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&host_dev), host, 0));
  unsigned char* cache = nullptr;
  CHECK(cudaMalloc(reinterpret_cast<void**>(&cache), vram_bytes));
  CHECK(cudaMemset(cache, 0, vram_bytes));
  CHECK(cudaDeviceSynchronize());  // the memset runs on the legacy stream; the timed work does not wait for it
  unsigned char* staging = cache + stride_bytes * static_cast<std::size_t>(max_slots);
  const uint4* dense = reinterpret_cast<const uint4*>(staging + stride_bytes * staging_slots);
  unsigned int* sink = nullptr;
  CHECK(cudaMalloc(reinterpret_cast<void**>(&sink), sizeof(unsigned int)));
  const std::size_t lookups = trace.routes.size();
  const uint4** table = nullptr;  // per look-up: the address its kernel reads
  CHECK(cudaMalloc(reinterpret_cast<void**>(&table), lookups * sizeof(uint4*)));
  std::vector<const uint4*> host_table(lookups);
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t layer_done;
  CHECK(cudaEventCreateWithFlags(&layer_done, cudaEventDisableTiming));
  const unsigned blocks_x = static_cast<unsigned>(std::max(1, 2 * prop.multiProcessorCount / std::max(1, trace.top_k)));
  const dim3 grid(blocks_x, static_cast<unsigned>(k + (opt.dense_bytes > 0 ? 1 : 0)));

  auto expert_host = [&](std::uint32_t id) { return host + stride_bytes * id; };
  // The time budget: `past(ahead)` is true when `ahead` more seconds would end past it. The
  // length of the last trial run (of any point, prefill included) is the estimate of the next.
  auto past = [&](double ahead) { return opt.time_budget_s > 0.0 && elapsed_s() + ahead > opt.time_budget_s; };
  const std::string budget_note = "not run: the --time-budget of " + format_number(opt.time_budget_s) + " s ran out";
  bool out_of_time = false;
  double last_trial_s = 0.0;
  for (Point& pt : points) {
    if (out_of_time) {
      pt.note = budget_note;
      continue;
    }
    const ReplayPlan& plan = pt.plan;
    const bool zero_copy = pt.mode == "zero-copy";
    // Where each look-up reads: its slot, the layer's staging buffer, or mapped host memory.
    for (std::int64_t token = 0; token < trace.tokens; ++token)
      for (int layer = 0; layer < trace.layers; ++layer) {
        const std::size_t base = (static_cast<std::size_t>(token) * trace.layers + static_cast<std::size_t>(layer)) * k;
        std::size_t staged = 0;
        for (std::size_t i = 0; i < k; ++i) {
          const std::uint32_t id = static_cast<std::uint32_t>(layer) * static_cast<std::uint32_t>(trace.experts) +
                                   trace.route(token, layer)[i];
          const unsigned char* at = nullptr;
          if (plan.miss[base + i] && zero_copy) at = host_dev + stride_bytes * id;
          else if (plan.slot[base + i] >= 0) at = cache + stride_bytes * static_cast<std::size_t>(plan.slot[base + i]);
          else at = staging + stride_bytes * ((static_cast<std::size_t>(layer) % 2) * k + staged++);
          host_table[base + i] = reinterpret_cast<const uint4*>(at);
        }
      }
    CHECK(cudaMemcpy(table, host_table.data(), lookups * sizeof(uint4*), cudaMemcpyHostToDevice));
    for (int trial = 0; trial < opt.trials && !out_of_time; ++trial) {
      if (past(last_trial_s)) {
        out_of_time = true;
        break;
      }
      const auto trial_start = std::chrono::steady_clock::now();
      // Pre-fill: each trial starts from the same cache contents (hottest first).
      for (std::size_t s = 0; s < plan.initial.size(); ++s)
        CHECK(cudaMemcpyAsync(cache + stride_bytes * s, expert_host(plan.initial[s]), expert_bytes, cudaMemcpyHostToDevice, stream));
      CHECK(cudaStreamSynchronize(stream));
      std::chrono::steady_clock::time_point start;
      for (std::int64_t token = 0; token < trace.tokens; ++token) {
        if (token % 32 == 0 && past(0.0)) {  // abandon the trial: it would end past the budget
          out_of_time = true;
          break;
        }
        if (token == opt.warmup_tokens) start = std::chrono::steady_clock::now();
        for (int layer = 0; layer < trace.layers; ++layer) {
          const std::size_t lk = static_cast<std::size_t>(token) * trace.layers + static_cast<std::size_t>(layer);
          if (!zero_copy && plan.layer_has_miss[lk]) {
            // The layer dependency: the host learns this layer's routing only when the previous
            // layer is done, then issues the copies.
            CHECK(cudaEventSynchronize(layer_done));
            for (std::size_t i = 0; i < k; ++i) {
              if (!plan.miss[lk * k + i]) continue;
              const std::uint32_t id = static_cast<std::uint32_t>(layer) * static_cast<std::uint32_t>(trace.experts) +
                                       trace.route(token, layer)[i];
              CHECK(cudaMemcpyAsync(const_cast<uint4*>(host_table[lk * k + i]), expert_host(id), expert_bytes,
                                    cudaMemcpyHostToDevice, stream));
            }
          }
          layer_kernel<<<grid, 256, 0, stream>>>(table + lk * k, static_cast<int>(k), words, dense,
                                                 static_cast<std::size_t>(opt.dense_bytes) / 16, sink);
          CHECK_LAUNCH();
          CHECK(cudaEventRecord(layer_done, stream));
        }
        CHECK(cudaStreamSynchronize(stream));  // the host reads the sampled token
      }
      if (out_of_time) {
        CHECK(cudaStreamSynchronize(stream));
        break;
      }
      pt.seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      last_trial_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - trial_start).count();
    }
    if (pt.seconds.empty()) {
      pt.note = budget_note;
      std::printf("  %-9s slots %7lld: %s\n", pt.mode.c_str(), static_cast<long long>(plan.slots), budget_note.c_str());
      continue;
    }
    pt.note.clear();
    if (static_cast<int>(pt.seconds.size()) < opt.trials)
      pt.note = "measured in " + std::to_string(pt.seconds.size()) + " of " + std::to_string(opt.trials) +
                " trials: the --time-budget ran out";
    const double timed = static_cast<double>(plan.counted_tokens);
    const double median = summarize(pt.seconds).median;
    std::printf("  %-9s slots %7lld (%5.1f%%): hit rate %6.2f%%, %6.2f misses/token, %5.1f layers with a miss/token: "
                "%8.1f tok/s\n", pt.mode.c_str(), static_cast<long long>(plan.slots),
                100.0 * static_cast<double>(plan.slots) / static_cast<double>(pairs), 100.0 * plan.hit_rate(),
                plan.misses_per_token(), static_cast<double>(plan.layers_with_miss) / timed, timed / median);
    std::fflush(stdout);
    if (!write_doc()) return 1;
  }

  if (!write_doc()) return 1;

  CHECK(cudaEventDestroy(layer_done));
  CHECK(cudaStreamDestroy(stream));
  CHECK(cudaFree(table));
  CHECK(cudaFree(sink));
  CHECK(cudaFree(cache));
  CHECK(cudaFreeHost(host));
  return 0;
}

}  // namespace vramsim::calibrate
