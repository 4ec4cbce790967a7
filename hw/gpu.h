// A GPU (or an Apple unified-memory SoC) as the memory model and the simulator see it.
// Units: bytes, bytes per second, FLOP per second, watts.
#pragma once

#include <optional>
#include <string>

#include "core/config_tree.h"
#include "hw/calibration.h"

namespace vramsim::hw {

// Market class; it sets how much of the memory a workload can use (see memory budget).
enum class GpuClass { Consumer, Workstation, Datacenter, Unified };

std::string_view to_string(GpuClass c);

struct GpuSpec {
  std::string name;
  std::string display_name;
  GpuClass gpu_class = GpuClass::Consumer;
  double memory_bytes = 0;                     // nominal capacity (marketed "GB" read as GiB)
  std::optional<double> driver_total_bytes;    // total reported by the driver, when known
  std::string memory_type;                     // GDDR7, HBM3e, LPDDR5X, ...
  double memory_bandwidth = 0;                 // peak, bytes per second
  // Share of that peak a streaming GPU kernel reaches, from a public microbenchmark
  // (memory.stream_share); given for the unified-memory parts, whose engine presets' own share
  // is fitted on CUDA cards. None: the engine's gpu_bandwidth_efficiency.
  std::optional<double> stream_share;
  double dense_fp16_flops = 0;                 // dense fp16/bf16 tensor rate, FLOP per second
  // Dense FP8 (E4M3) tensor rate with FP32 accumulate, FLOP per second; 0 on a part without
  // FP8 tensor cores (before Ada and Hopper), where FP8 weights are multiplied in fp16.
  double dense_fp8_flops = 0;
  // Dense fp16 tensor rate with fp16 accumulate, FLOP per second: twice dense_fp16 on GeForce
  // parts (their fp32 accumulate runs at half rate), the same elsewhere (the default). cuBLAS
  // GEMMs computed in fp16 (CUBLAS_COMPUTE_16F) run at it.
  double dense_fp16_accumulate_flops = 0;
  // Share of the tensor peak (dense_fp16, dense_fp8) that kernels built on the legacy mma.sync
  // instructions reach (Marlin, llama.cpp's MMQ): 1 where mma.sync is the native path (Ampere,
  // Ada, consumer Blackwell), about 2/3 on Hopper, whose full rate needs wgmma.
  double mma_sync_share = 1;
  // Dense FP32 rate of the CUDA cores (no tensor cores), FLOP per second: cores x 2 x boost
  // clock, the datasheet's (compute.dense_fp32); 0: not given. cuBLAS SGEMM runs at it
  // (llama.cpp's row split multiplies a prompt's row slices so: sim/row_split.h).
  double dense_fp32_flops = 0;
  // Streaming multiprocessors (the datasheet's or whitepaper's SM count; 0: not given). A
  // kernel whose grid has fewer blocks than this runs on that many SMs only.
  int sm_count = 0;
  // GPU time of one kernel dispatch that does no work, seconds (compute.dispatch_latency, a
  // microbenchmark's): what every kernel of a step costs at least. Given for the unified-memory
  // parts (Metal); none: the engine's per-layer fixed cost (layer_launch) stands.
  std::optional<double> dispatch_latency;
  // The SMs' boost clock, Hz (compute.boost_clock, the datasheet's): the clock latency-bound
  // kernels run at, which sets an engine's per-layer cost given in cycles
  // (engine.layer_launch_cycles). None: the engine's layer_launch stands.
  std::optional<double> boost_clock;
  double tdp_watts = 0;
  double idle_watts = 0;
  int pcie_generation = 0;                     // 0 for unified-memory parts (no PCIe link)
  int pcie_lanes = 0;
  // Whether two such cards can copy to each other directly over PCIe (peer-to-peer DMA).
  // GeForce cards cannot (their copies are staged through host memory); workstation and
  // datacenter cards can. From the catalogue's `pcie.peer_to_peer`, else by class.
  bool peer_to_peer = false;
  // NVLink on this part, from the catalogue's `nvlink: { generation, form }`: form bridge (a
  // two-card bridge connector, e.g. RTX 3090) or sxm (an SXM module's links into a baseboard).
  // Absent: no NVLink (generation 0), e.g. RTX 40 and 50 series.
  int nvlink_generation = 0;
  bool nvlink_bridge = false;  // true: a bridge connector; false with a generation: SXM
  // A unified-memory part's CPU side: the host preset of the same chip (`soc_host`), which
  // `run` uses as the machine's host. Empty for discrete cards.
  std::string soc_host;
  // What vramsim-calibrate measured on this card, when its description references a
  // calibration (`calibration: ../calibration/NAME.yaml`; hw/calibration.h).
  std::optional<CardCalibration> calibration;

  bool unified() const { return gpu_class == GpuClass::Unified; }
};

// Decodes a resolved GPU description (see docs/config-reference.md). Throws ConfigError.
// `scenario_keys`: keys a scenario reads beside the description (named in unknown-key errors).
GpuSpec decode_gpu(const config::Node& node, const std::string& key_path,
                   std::initializer_list<std::string_view> scenario_keys = {});

}  // namespace vramsim::hw
