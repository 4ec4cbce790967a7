// A card's calibration: what `vramsim-calibrate` measured on a real card (configs/calibration/
// NAME.yaml, written by calibrate/; docs/calibration.md), as a GPU description references it
// (`calibration: ../calibration/NAME.yaml`, relative to the GPU file).
//
// The simulation uses the measured host link (pinned host->device copies fitted as
// t = latency + bytes / bandwidth) as the card's link rate and per-transfer latency when a
// scenario does not give `measured_h2d`, and the zero-copy efficiency (GPU reads of mapped
// host memory / copy bandwidth) in place of the engine's estimate. The measured VRAM read
// bandwidth is kept for reports: the engines' bandwidth efficiencies are defined against the
// datasheet peak. Units: bytes per second, seconds.
#pragma once

#include <optional>
#include <string>

#include "core/config_tree.h"

namespace vramsim::hw {

struct CardCalibration {
  std::string file;                           // where it was read from
  std::string name;                           // the calibration's name (the device)
  std::string measured;                       // when (UTC, as written)
  std::optional<double> h2d_bandwidth;        // pcie.h2d.bandwidth
  std::optional<double> h2d_latency;          // pcie.h2d.latency
  std::optional<double> zero_copy_efficiency; // zero_copy.efficiency
  std::optional<double> vram_read_bandwidth;  // vram.read_bandwidth
};

// Reads the figures above from a calibration file's tree (a machine-written file: the keys
// vramsim-calibrate writes that the simulation does not use are skipped, any other key in the
// mappings it reads is refused; a figure that is present must be well-formed). Throws
// ConfigError naming the file, line and key.
CardCalibration decode_calibration(const config::Node& root, const std::string& file);

// Loads `path` (relative paths against the directory of `referenced_from`, the GPU file).
// Throws ConfigError at `at` when it cannot be read.
CardCalibration load_calibration(const std::string& path, const config::Node& at, const std::string& key_path);

}  // namespace vramsim::hw
