// vramsim-calibrate: measures the constants vramsim's models need on a real NVIDIA card and
// writes them as a calibration YAML (DIR/NAME.yaml, units in strings as the project's
// configs have them) plus every sample (DIR/NAME-raw.json).
//
//   vramsim-calibrate [--out DIR] [--name NAME] [--quick] [--device N] [--dry-run]
//   vramsim-calibrate replay --trace FILE [...]   the real-card MoE replay (replay.cu)
//
// The card's settings (clocks, power limits, persistence, ...) are only read, never changed.
// --dry-run makes no CUDA call: it writes both files with the structure of a run, marked
// `mode: dry-run` and holding no measurement (no series, no figures), so that a machine
// without a GPU checks the binary starts, parses its options and writes its outputs.

#include <cctype>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "calibrate/common.cuh"
#include "calibrate/replay_plan.h"

namespace vc = vramsim::calibrate;

namespace {

struct Options {
  std::string out = "calibration-out";
  std::string name;  // default: device name, lower case, spaces -> '-'
  bool quick = false;
  bool dry_run = false;
  int device = 0;
};

void usage(std::FILE* f) {
  std::fprintf(f,
               "usage: vramsim-calibrate [--out DIR] [--name NAME] [--quick] [--device N] [--dry-run]\n"
               "       vramsim-calibrate replay --trace FILE [...]  (the real-card MoE replay; replay --help)\n"
               "  --out DIR    output directory (default calibration-out)\n"
               "  --name NAME  file stem: DIR/NAME.yaml and DIR/NAME-raw.json (default: the device name)\n"
               "  --quick      half the sizes and trials (for a fast check)\n"
               "  --device N   CUDA device ordinal (default 0)\n"
               "  --dry-run    no CUDA call: write the files' structure, marked mode: dry-run, no measurement\n");
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "vramsim-calibrate: %s needs a value\n", a.c_str());
        usage(stderr);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--out") {
      o.out = value();
    } else if (a == "--name") {
      o.name = value();
    } else if (a == "--quick") {
      o.quick = true;
    } else if (a == "--dry-run") {
      o.dry_run = true;
    } else if (a == "--device") {
      try {
        o.device = static_cast<int>(vc::option_integer("--device", value(), 0, 1023));
      } catch (const std::invalid_argument& e) {
        std::fprintf(stderr, "vramsim-calibrate: %s\n", e.what());
        std::exit(2);
      }
    } else if (a == "-h" || a == "--help") {
      usage(stdout);
      std::exit(0);
    } else {
      std::fprintf(stderr, "vramsim-calibrate: unknown argument '%s'\n", a.c_str());
      usage(stderr);
      std::exit(2);
    }
  }
  return o;
}

std::string slug(const std::string& s) {
  std::string r;
  for (char c : s) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (std::isalnum(u))
      r += static_cast<char>(std::tolower(u));
    else if (!r.empty() && r.back() != '-')
      r += '-';
  }
  while (!r.empty() && r.back() == '-') r.pop_back();
  return r.empty() ? std::string("gpu") : r;
}

std::string version_text(int v) {  // CUDA encodes 13.0 as 13000
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

namespace {

// Opens CUDA device opt.device into ctx (properties, context), names the run after it unless
// --name was given, and describes it in `dev`. False (after saying why) when there is no
// usable device; a failed CUDA call throws CudaFailure.
bool open_device(const Options& opt, vc::Context& ctx, std::string& name, vc::Value& dev) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    std::fprintf(stderr, "vramsim-calibrate: no CUDA device: %s\n", cudaGetErrorString(err));
    return false;
  }
  if (count == 0) {
    std::fprintf(stderr, "vramsim-calibrate: no CUDA device: no devices found\n");
    return false;
  }
  if (opt.device < 0 || opt.device >= count) {
    std::fprintf(stderr, "vramsim-calibrate: no CUDA device: ordinal %d out of range (%d found)\n", opt.device, count);
    return false;
  }

  CHECK(cudaSetDevice(ctx.device));
  CHECK(cudaGetDeviceProperties(&ctx.prop, ctx.device));
  CHECK(cudaFree(nullptr));  // create the context now, not inside the first measurement

  if (opt.name.empty()) name = slug(ctx.prop.name);
  int driver = 0, runtime = 0;
  CHECK(cudaDriverGetVersion(&driver));
  CHECK(cudaRuntimeGetVersion(&runtime));
  char bus_id[64] = {};
  CHECK(cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, ctx.device));

  std::printf("vramsim-calibrate: %s (sm_%d%d, %d SMs, %.0f MiB), %s mode\n", ctx.prop.name, ctx.prop.major,
              ctx.prop.minor, ctx.prop.multiProcessorCount, static_cast<double>(ctx.prop.totalGlobalMem) / vc::kMiB,
              opt.quick ? "quick" : "full");

  dev = vc::Value::object();
  dev["name"] = vc::Value::string(ctx.prop.name);
  dev["compute_capability"] = vc::Value::string(std::to_string(ctx.prop.major) + "." + std::to_string(ctx.prop.minor));
  dev["sm_count"] = vc::Value::number(ctx.prop.multiProcessorCount);
  dev["memory"] = vc::Value::string(vc::format_bytes_mib(static_cast<double>(ctx.prop.totalGlobalMem)));
  dev["l2_cache"] = vc::Value::string(vc::format_bytes_mib(static_cast<double>(ctx.prop.l2CacheSize)));
  dev["pci_bus_id"] = vc::Value::string(bus_id);
  // A MIG instance is named "MIG ..." by CUDA (e.g. "NVIDIA H100 MIG 1g.10gb"); its SM count
  // and memory are the instance's. bench_power also asks NVML for the board's MIG mode.
  ctx.mig = std::strstr(ctx.prop.name, "MIG") != nullptr;
  dev["mig"] = vc::Value::boolean(ctx.mig);
  dev["driver_cuda_version"] = vc::Value::string(version_text(driver));  // highest CUDA the driver supports
  dev["runtime_version"] = vc::Value::string(version_text(runtime));
  return true;
}

int run(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "replay") == 0) return vc::replay_main(argc - 2, argv + 2);
  const Options opt = parse(argc, argv);
  vc::Context ctx;
  ctx.device = opt.device;
  ctx.quick = opt.quick;
  ctx.trials = opt.quick ? 5 : 10;
  ctx.warmup = opt.quick ? 1 : 2;
  std::string name = opt.name.empty() ? std::string("dry-run") : opt.name;
  vc::Value dev;  // null in a dry run: no device was asked
  if (!opt.dry_run && !open_device(opt, ctx, name, dev)) return 1;
  const char* const mode = opt.dry_run ? "dry-run" : opt.quick ? "quick" : "full";

  ctx.summary["name"] = vc::Value::string(name);
  // A dry run measured nothing: `measured` is null and hw/calibration.cc refuses the file.
  ctx.summary["measured"] = opt.dry_run ? vc::Value() : vc::Value::string(utc_now());
  ctx.summary["mode"] = vc::Value::string(mode);
  ctx.summary["device"] = dev;
  ctx.raw["tool"] = vc::Value::string("vramsim-calibrate");
  ctx.raw["measured"] = ctx.summary["measured"];
  ctx.raw["dry_run"] = vc::Value::boolean(opt.dry_run);
  if (opt.dry_run) ctx.raw["written"] = vc::Value::string(utc_now());
  ctx.raw["options"]["quick"] = vc::Value::boolean(opt.quick);
  ctx.raw["options"]["trials"] = vc::Value::number(ctx.trials);
  ctx.raw["options"]["warmup"] = vc::Value::number(ctx.warmup);
  ctx.raw["device"] = dev;
  ctx.raw["series"] = vc::Value::array();
  ctx.raw["fits"] = vc::Value::object();
  ctx.raw["notes"] = vc::Value::array();

  std::error_code ec;
  std::filesystem::create_directories(opt.out, ec);
  if (ec) {
    std::fprintf(stderr, "vramsim-calibrate: cannot create %s: %s\n", opt.out.c_str(), ec.message().c_str());
    return 1;
  }
  const std::filesystem::path yaml_path = std::filesystem::path(opt.out) / (name + ".yaml");
  const std::filesystem::path raw_path = std::filesystem::path(opt.out) / (name + "-raw.json");
  // Both files are (re)written after every benchmark, so that a later failure, or a kill at
  // the end of a device slot, leaves what was measured already.
  auto write_outputs = [&]() -> bool {
    {
      std::ofstream raw(raw_path);
      vc::write_json(raw, ctx.raw);
      if (!raw) {
        std::fprintf(stderr, "vramsim-calibrate: cannot write %s\n", raw_path.c_str());
        return false;
      }
    }
    std::ofstream y(yaml_path);
    if (opt.dry_run)
      y << "# DRY RUN of vramsim-calibrate (--dry-run): no device was used and nothing here is a\n"
        << "# measurement; the simulator refuses this file as a calibration.\n";
    else
      y << "# vramsim calibration of " << ctx.prop.name << ", measured by vramsim-calibrate.\n"
      << "# Transfers: t = latency + bytes / bandwidth, least squares over a 4 KiB.."
      << (opt.quick ? "256 MiB" : "1 GiB") << " sweep\n"
      << "# (medians of " << ctx.trials << " trials per size). GB = 1e9 bytes. All samples: "
      << raw_path.filename().string() << "\n";
    vc::write_yaml(y, ctx.summary);
    if (!y) {
      std::fprintf(stderr, "vramsim-calibrate: cannot write %s\n", yaml_path.c_str());
      return false;
    }
    return true;
  };

  // Each benchmark runs guarded: a failed CUDA/cuBLAS call (CudaFailure) is recorded in the
  // raw JSON's notes and the YAML's `failed` list; the run goes on when the error is not
  // sticky (cudaGetLastError clears it and cudaDeviceSynchronize then succeeds) and stops,
  // with the files written, when it is. A failed benchmark's buffers may stay allocated
  // until the program exits. Exit status: 0 all measured, 1 any benchmark failed.
  struct Bench {
    const char* name;
    void (*run)(vc::Context&);
  };
  const Bench benches[] = {
      {"pcie", vc::bench_pcie},  // before zero_copy: its H2D bandwidth is the reference
      {"zero_copy", vc::bench_zero_copy},
      {"vram", vc::bench_vram},
      {"gemv", vc::bench_gemv},
      {"launch", vc::bench_launch},
      {"power", vc::bench_power},
  };
  ctx.raw["completed"] = vc::Value::array();
  if (opt.dry_run) {
    ctx.raw["planned"] = vc::Value::array();
    for (const Bench& b : benches) ctx.raw["planned"].push(vc::Value::string(b.name));
    ctx.raw["notes"].push(vc::Value::string("dry run: no CUDA call was made; no benchmark ran and nothing was measured"));
    if (!write_outputs()) return 1;
    std::printf("vramsim-calibrate: dry run (no device, no measurement): wrote %s and %s\n", yaml_path.c_str(),
                raw_path.c_str());
    return 0;
  }
  bool all_ok = true;
  for (const Bench& b : benches) {
    bool sticky = false;
    try {
      b.run(ctx);
      ctx.raw["completed"].push(vc::Value::string(b.name));
    } catch (const vc::CudaFailure& e) {
      all_ok = false;
      (void)cudaGetLastError();  // clears a non-sticky error
      const cudaError_t after = cudaDeviceSynchronize();
      sticky = after != cudaSuccess;
      std::string note = std::string(b.name) + ": failed: " + e.what();
      if (sticky) note += std::string("; the error is sticky (") + cudaGetErrorString(after) + "), later benchmarks not run";
      std::fprintf(stderr, "vramsim-calibrate: %s\n", note.c_str());
      ctx.raw["notes"].push(vc::Value::string(note));
      ctx.summary["failed"].push(vc::Value::string(b.name));
    }
    if (!write_outputs()) return 1;
    if (sticky) {
      std::fprintf(stderr, "vramsim-calibrate: stopped; what was measured is in %s and %s\n", yaml_path.c_str(),
                   raw_path.c_str());
      return 1;
    }
  }
  std::printf("\n");
  std::fflush(stdout);
  vc::write_yaml(std::cout, ctx.summary);
  std::printf("\nvramsim-calibrate: wrote %s and %s\n", yaml_path.c_str(), raw_path.c_str());
  if (!all_ok) std::fprintf(stderr, "vramsim-calibrate: some benchmarks failed (see \"failed\" in %s)\n", yaml_path.c_str());
  return all_ok ? 0 : 1;
}

}  // namespace

// A CUDA failure outside the guarded benchmarks (device set-up, the replay) ends the program
// with status 1; CHECK has printed it.
int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const vc::CudaFailure&) {
    return 1;
  }
}
